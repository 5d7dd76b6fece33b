"""The Dagster code location: `defs`, assembled from dagster_defs per environment.

Loading it reads and validates the environment once; it never connects to a database, Redis or
an upstream at import time (resources connect when a run or sensor first uses them).
"""

from __future__ import annotations

from social_recording.dagster_defs.definitions_builder import build_definitions
from social_recording.settings import get_settings

defs = build_definitions(get_settings())
