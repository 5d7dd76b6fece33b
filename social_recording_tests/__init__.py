"""Tests for social_recording."""
