"""One module per job: its config, stages, graph, job and schedule or sensor together (reconcile,
retry, live, health); `definitions_builder` assembles them."""
