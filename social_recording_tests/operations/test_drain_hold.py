"""A drain that holds: a sensor stopped in the middle of its tick, whose tick then writes the state it
read before the stop back (RUNNING, as Dagster's sensor daemon does at a tick's end), is stopped
again, and the drain returns only once every schedule and sensor has stayed stopped with no tick in
flight. The daemon's side is played by the test at exact points (the drain's `sleep` hook), on a real
instance and the code location loaded by module in a code server of its own."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dagster import DagsterInstance
from dagster._core.definitions.run_request import InstigatorType
from dagster._core.scheduler.instigation import TickData, TickStatus

from social_recording.operations.code_location import remote_repositories
from social_recording.operations.instigator_stop import (
    SETTLE_S,
    hold_stopped,
    instigators,
    is_running,
    stop_instigators,
)

pytestmark = pytest.mark.heavy(minutes=0.25)

SENSOR = "retry_candidates_sensor"


@pytest.fixture()
def location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, list[Any]]]:
    monkeypatch.setenv("SOCIAL_RECORDING_ENV", "prod")  # every schedule and sensor running by default
    monkeypatch.setenv("SOCIAL_RECORDING_STORE_URL", f"sqlite:///{tmp_path / 'store.db'}")
    (tmp_path / "home").mkdir()
    with DagsterInstance.local_temp(str(tmp_path / "home")) as instance, \
            remote_repositories(instance) as repositories:
        yield instance, repositories


class Daemon:
    """The sensor daemon's tick for one sensor: it read the state (RUNNING) and created its tick before
    the stop; `finish` ends the tick and writes that state back, as the daemon does."""

    def __init__(self, instance: Any, sensor: Any) -> None:
        self.instance, self.sensor = instance, sensor
        self.read = instance.get_instigator_state(sensor.get_remote_origin_id(), sensor.selector_id)
        if self.read is None:
            self.read = sensor.get_current_instigator_state(None)
            instance.add_instigator_state(self.read)
        assert self.read.is_running
        self.tick = instance.create_tick(TickData(
            instigator_origin_id=sensor.get_remote_origin_id(), instigator_name=sensor.name,
            instigator_type=InstigatorType.SENSOR, status=TickStatus.STARTED, timestamp=time.time(),
            selector_id=sensor.selector_id))

    def finish(self) -> None:
        self.instance.update_tick(self.tick.with_status(TickStatus.SUCCESS))
        self.instance.update_instigator_state(self.read)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps = 0
        self.on_sleep: list[Any] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        if self.on_sleep:
            self.on_sleep.pop(0)()
        self.now += seconds


def test_a_sensor_stopped_mid_tick_is_stopped_again_and_the_drain_holds(location: tuple[Any, list[Any]]) -> None:
    instance, repositories = location
    sensor = next(i for i in instigators(repositories) if i.name == SENSOR)
    daemon = Daemon(instance, sensor)  # its tick is in flight

    lines = stop_instigators(instance, repositories)
    assert f"sensor {SENSOR}: stopped" in lines
    assert not any(is_running(instance, i) for i in instigators(repositories))

    said: list[str] = []
    clock = Clock()
    # While the drain waits out the tick in flight, the tick ends and writes RUNNING back.
    clock.on_sleep.append(lambda: (daemon.finish(), said.append("-- tick finished")))
    stuck = hold_stopped(instance, repositories, timeout_s=600, poll_s=1, say=said.append,
                         clock=lambda: clock.now, sleep=clock.sleep)
    assert stuck == []
    assert said[0] == "-- tick finished"
    assert said[1] == f"sensor {SENSOR}: running again (a tick in flight wrote its state back), stopped again"
    assert len(said) == 2
    assert not any(is_running(instance, i) for i in instigators(repositories))
    assert clock.now >= SETTLE_S  # it stayed stopped, with no tick in flight, for the settle time


def test_a_tick_that_never_ends_within_the_timeout_is_named(location: tuple[Any, list[Any]]) -> None:
    instance, repositories = location
    sensor = next(i for i in instigators(repositories) if i.name == SENSOR)
    Daemon(instance, sensor)
    stop_instigators(instance, repositories)
    clock = Clock()
    stuck = hold_stopped(instance, repositories, timeout_s=30, poll_s=1, say=lambda line: None,
                         clock=lambda: clock.now, sleep=clock.sleep)
    assert stuck == [f"sensor {SENSOR} (tick in flight)"]
