"""The catalogue of every platform, for the layers at and above `platforms`: it is registered in
`social_recording/domain/specs/catalogue.py`, at the bottom layer, so the canonicaliser reads it
without importing upward (docs/architecture.md, "Layers")."""

from social_recording.domain.specs.catalogue import CATALOGUE

__all__ = ["CATALOGUE"]
