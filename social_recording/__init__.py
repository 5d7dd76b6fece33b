"""social_recording: records the social footprint of crypto tokens (a Dagster code location)."""

__version__ = "0.1.0"
