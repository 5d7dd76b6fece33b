"""One module per job: its config, stages, graph, job and schedule or sensor together (reconcile,
retry, live, health, housekeeping). Each exports `definitions(settings)`, which `definitions_builder`
merges; what they share (stages.py, reporting.py, health_report.py, job_kind.py) lives one level up."""
