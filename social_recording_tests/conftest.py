"""Shared fixtures: a real redis-server per test session, temporary SQLite files."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import redis

from social_recording_tests.redis_server import running_redis


@pytest.fixture(scope="session")
def redis_server_url() -> Iterator[str]:
    """A real redis-server on a free port, for the whole session."""
    with running_redis() as url:
        yield url


@pytest.fixture()
def redis_url(redis_server_url: str) -> Iterator[str]:
    """The session's redis server, flushed before each test."""
    client = redis.Redis.from_url(redis_server_url)
    client.flushdb()
    client.close()
    yield redis_server_url


def pytest_report_header(config: pytest.Config) -> str:
    on = bool(os.environ.get("SOCIAL_RECORDING_TEST_MONGO_URL"))
    return "real-MongoDB store contract variant: " + (
        "on" if on else "off (MongoDB is not installable here; set SOCIAL_RECORDING_TEST_MONGO_URL to run it)"
    )
