"""The parallel run's units of work (test_support/work_units.py): a module sharing a fixture built once
per module stays on one worker, a class sharing a class fixture too (each class a unit), every other
test is a unit of its own, and heavy units go first, the longest first."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from test_support.work_units import SERIAL_LIST_INI

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[1]
CONFTEST = """
import pytest
from test_support.work_units import HEAVY_MARK, SERIAL_MARK, add_serial_list_option, group_and_order, record_serial

def pytest_addoption(parser):
    add_serial_list_option(parser)

def pytest_configure(config):
    config.addinivalue_line("markers", HEAVY_MARK + ": minutes")
    config.addinivalue_line("markers", SERIAL_MARK + ": alone")

@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    record_serial(config, items)
    group_and_order(config, items)
"""
MODULES = {
    "test_a_light": "def test_one(): pass\ndef test_two(): pass\n",
    "test_b_shared": (
        "import pytest\n"
        "@pytest.fixture(scope='module')\ndef deployment(): return 1\n"
        + "".join(f"def test_uses_it_{i}(deployment): pass\n" for i in range(6))
        + "def test_does_not(): pass\n"
    ),
    "test_c_heavy": "import pytest\npytestmark = pytest.mark.heavy\ndef test_long(): pass\ndef test_longer(): pass\n",
    "test_d_classes": (
        "import pytest\n"
        + "".join(f"class TestShared{c}:\n"
                  "    @pytest.fixture(scope='class')\n    def server(self): return 1\n"
                  + "".join(f"    def test_uses_it_{i}(self, server): pass\n" for i in range(3))
                  for c in "AB")
    ),
    "test_e_longest": (
        "import pytest\npytestmark = pytest.mark.heavy(minutes=4)\ndef test_longest(): pass\n"
        "@pytest.mark.heavy(minutes=0.5)\ndef test_a_short_one(): pass\n"
    ),
}


def test_heavy_modules_are_handed_out_first(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(**MODULES)
    recorded = pytester.inline_run("--collect-only")
    (call,) = recorded.getcalls("pytest_collection_modifyitems")
    assert [i.name for i in call.items][:5] == ["test_longest", "test_long", "test_longer", "test_a_short_one",
                                                "test_one"]


def test_a_module_sharing_a_fixture_runs_on_one_worker_and_the_others_spread(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(**MODULES)
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    done = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "3", "--dist", "loadgroup",
                                         "--no-loadscope-reorder", "-v")
    done.assert_outcomes(passed=19)
    ran = re.findall(r"^\[(gw\d)\] .* PASSED (\S+)", done.stdout.str(), re.MULTILINE)
    shared = {worker for worker, test in ran if "test_b_shared" in test}
    assert len(shared) == 1, ran
    assert all(test.endswith("@test_b_shared") for _, test in ran if "test_b_shared" in test), ran
    for cls in ("TestSharedA", "TestSharedB"):
        in_class = [(worker, test) for worker, test in ran if f"::{cls}::" in test]
        assert len(in_class) == 3 and len({worker for worker, _ in in_class}) == 1, ran
        assert all(test.endswith(f"@test_d_classes.{cls}") for _, test in in_class), ran
    assert not any("@" in test for _, test in ran if "test_b_shared" not in test and "::TestShared" not in test), ran


def test_the_parallel_part_lists_the_serial_tests_the_serial_part_runs(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """As `make test` runs them: the parallel part writes the `serial` tests' ids (those deselected by
    its `-m "not serial"`, however their names are written), and `pytest @FILE -m serial` runs each."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(**MODULES, test_f_alone=(
        "import pytest\n@pytest.mark.serial\n@pytest.mark.parametrize('name', ['a b', 'c[d]', 'e@f'])\n"
        "def test_alone(name): pass\n"))
    listed = tmp_path / "ids"
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    first = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup",
                                          "--no-loadscope-reorder", "-m", "not serial", "-o", f"{SERIAL_LIST_INI}={listed}")
    first.assert_outcomes(passed=19)
    assert len(listed.read_text().splitlines()) == 3, listed.read_text()
    second = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-m", "serial", f"@{listed}")
    second.assert_outcomes(passed=3)


def test_without_serial_tests_the_list_is_empty(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(**MODULES)
    listed = tmp_path / "ids"
    pytester.inline_run("--collect-only", "-m", "not serial", "-o", f"{SERIAL_LIST_INI}={listed}")
    assert listed.read_text() == ""
