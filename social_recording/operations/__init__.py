"""Operating the deployment: the commands an operator (or docker-compose's one-shot services) runs
around the jobs — store migrations, draining before an upgrade, backups — one module each
(docs/operations.md). Dagster is imported only inside the commands that need the instance.
"""
