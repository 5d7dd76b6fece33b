"""The Dagster code location: `defs`, assembled from dagster_defs per environment."""

from __future__ import annotations

from dagster import Definitions

defs = Definitions()
