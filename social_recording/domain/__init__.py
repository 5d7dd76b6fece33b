"""Pure rules, no I/O. Nothing here imports another package of ours."""
