"""Shared fixtures: a real redis-server per test session, a real Mongo-protocol server per session
(FerretDB unless SOCIAL_RECORDING_TEST_MONGO_URL names a MongoDB), temporary SQLite files."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import redis
from hypothesis import settings

from social_recording_tests.ferretdb_differences import Difference
from test_support.ferretdb_server import BINARY_ENV, FERRETDB_VERSION, running_ferretdb
from test_support.mongo_server import MONGO_URL_ENV, MongoServer, describe, server_available
from test_support.redis_server import running_redis
from test_support.work_units import HEAVY_MARK, add_serial_list_option, group_and_order, record_serial

MONGO_SERVER_MARK = "mongo_server"

settings.register_profile("suite", deadline=None)
settings.load_profile("suite")
"""No Hypothesis example fails for its time (its default deadline is 200 ms): a test never asserts a
timing, and a busy machine or a parallel run slows any example (a test's own settings may still set
other options)."""


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


@pytest.fixture(scope="session")
def mongo_server() -> Iterator[MongoServer]:
    """The session's Mongo-protocol server: SOCIAL_RECORDING_TEST_MONGO_URL's, else a FerretDB started
    for the session on its own PostgreSQL database (stopped and dropped at the end)."""
    url = os.environ.get(MONGO_URL_ENV)
    if url:
        server = MongoServer(url, False)
        client = server.client()
        try:
            yield describe(client, url)
        finally:
            client.close()
        return
    with running_ferretdb() as ferret:
        yield MongoServer(ferret.url, True)


@pytest.fixture(scope="session")
def mongo_server_url(mongo_server: MongoServer) -> str:
    return mongo_server.url


def pytest_addoption(parser: pytest.Parser) -> None:
    add_serial_list_option(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MONGO_SERVER_MARK}: needs the session's Mongo-protocol server (FerretDB, or a real MongoDB)"
    )
    config.addinivalue_line(
        "markers", "ferretdb_differs(difference): on FerretDB this test meets one of FerretDB's own differences "
        "from MongoDB (ferretdb_differences.py) and is expected to fail there",
    )
    config.addinivalue_line(
        "markers", f"{HEAVY_MARK}(minutes=1): takes minutes (a deployment, the model, the benchmarks): handed "
        "to a pytest-xdist worker first, the longest first (test_support/work_units.py)",
    )


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that reaches the Mongo server (`-m mongo_server` selects them). None is left out
    when there is no server: the session fixture fails them, saying how to get one. Then list the
    `serial` tests for `make test`'s second part, and group and order the tests for the parallel run
    (test_support/work_units.py)."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "mongo_server" in fixtures or "mongo_server_url" in fixtures:
            item.add_marker(MONGO_SERVER_MARK)
    record_serial(config, items)
    group_and_order(config, items)


@pytest.fixture(autouse=True)
def _ferretdb_difference_expected(request: pytest.FixtureRequest) -> None:
    """On FerretDB, a test marked with one of its differences is expected to fail (see the marker)."""
    marker = request.node.get_closest_marker("ferretdb_differs")
    if marker is None or request.node.get_closest_marker(MONGO_SERVER_MARK) is None:
        return
    difference = marker.args[0]
    assert isinstance(difference, Difference), marker
    server: MongoServer = request.getfixturevalue("mongo_server")
    if server.ferretdb:
        request.applymarker(pytest.mark.xfail(
            reason=difference.reason(), strict=difference.deterministic, raises=AssertionError,
        ))


def pytest_report_header(config: pytest.Config) -> str:
    if os.environ.get(MONGO_URL_ENV):
        return f"Mongo store over the wire: the server at {MONGO_URL_ENV}"
    if server_available():
        return f"Mongo store over the wire: FerretDB {FERRETDB_VERSION} on PostgreSQL, started for the session"
    return (f"Mongo store over the wire: no server: its tests fail; `make ferretdb` builds FerretDB (or set "
            f"{BINARY_ENV} or {MONGO_URL_ENV})")


TIMINGS_PROPERTY = "session_timings"
"""A test report's user property holding [title, line, ...]: figures a test measured (the deployment
rehearsal's timings), printed at the end of the session. A report carries them from a pytest-xdist
worker to the session that prints the summary."""

_TIMINGS: dict[str, list[str]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    for name, value in report.user_properties:
        if name == TIMINGS_PROPERTY:
            title, *lines = value
            _TIMINGS[title] = lines


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for title, lines in _TIMINGS.items():
        terminalreporter.write_sep("-", title)
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture(autouse=True)
def _environment_restored() -> Iterator[None]:
    """Each test leaves the process environment as it found it: reading settings puts the values of
    secret files (NAME_FILE) into os.environ, as the services need, and a test's monkeypatched *_FILE
    would otherwise leak its value (a compose lock URL, say) into every later test of the session."""
    saved = dict(os.environ)
    yield
    if os.environ != saved:
        os.environ.clear()
        os.environ.update(saved)
