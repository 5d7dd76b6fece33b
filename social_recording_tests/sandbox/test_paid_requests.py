"""Paid requests on the sandbox: billed when they arrive, resumable two-step calls (urlscan scans,
Apify runs) that a later holder finishes without paying again, and per-service rate limits."""

from __future__ import annotations

import json
import multiprocessing
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from social_recording.domain.graph import plan
from social_recording.domain.urls import platform_of
from social_recording.platforms.base import ErrorCode, ExternalFetchError, GenerateContext, ProviderKeys
from social_recording.platforms.registry import build_registry
from social_recording.sandbox import Ledger, SandboxTransport, ScenarioError
from social_recording.sandbox.scenario import Scenario, parse_scenario
from social_recording_tests.sandbox._helpers import KEY, scenario
from social_recording_tests.sandbox._workers import call_rate_limited

KEYS = ProviderKeys(twitterapi_io_key=SecretStr("tw-key"), apify_token=SecretStr("apify-key"),
                    youtube_api_key=SecretStr("yt-key"), urlscan_api_key=SecretStr("us-key"))
WEB = "https://bonkdog.io"
TIKTOK = "https://tiktok.com/@/video/7301234567890123456"
TW = "https://api.twitterapi.io/twitter"


class Memory:
    """The engine's paid request memory, as a test double: one id per provider, and a log of when
    `submitted` was called relative to what the ledger held at that moment."""

    def __init__(self, ledger: Ledger) -> None:
        self.ids: dict[str, str] = {}
        self.ledger_at_submission: list[list[str]] = []
        self._ledger = ledger

    def previous(self, provider: str, retention: timedelta) -> str | None:
        return self.ids.get(provider)

    def submitted(self, provider: str, request_id: str) -> None:
        self.ids[provider] = request_id
        self.ledger_at_submission.append([e.subject for e in self._ledger.read()])


def _generator(tmp_path: Path, sc: Scenario, url: str) -> tuple[object, Ledger]:
    ledger = Ledger(tmp_path / "ledger.jsonl")
    registry = build_registry(KEYS, transport=SandboxTransport(sc, ledger, sleep=lambda s: None), sleep=lambda s: None)
    return registry.generators[platform_of(url)], ledger


# ------------------------------------------------------------------ billed on arrival


def test_a_request_is_ledgered_when_it_arrives_even_if_the_caller_gives_up(tmp_path: Path) -> None:
    """A real provider bills a request when it receives it: a caller that times out or dies while the
    answer is on its way (here: a thread abandoned inside the simulated latency) was still billed."""
    released = threading.Event()
    inside = threading.Event()

    def slow(seconds: float) -> None:  # the latency: longer than any client would wait
        inside.set()
        released.wait(timeout=60)

    sc = scenario({"https://x.com/i/status/42": {"outcome": "ok", "latency_ms": 600_000}})
    ledger = Ledger(tmp_path / "ledger.jsonl")
    transport = SandboxTransport(sc, ledger, sleep=slow)
    request = httpx.Request("GET", f"{TW}/tweets?tweet_ids=42", headers={"X-API-Key": KEY})
    caller = threading.Thread(target=transport.handle_request, args=(request,), daemon=True)
    caller.start()
    assert inside.wait(timeout=60)
    # the caller is still waiting for its answer (abandoned), and the request is already counted
    (entry,) = ledger.read()
    assert (entry.subject, entry.status, entry.paid) == ("tweet:42", 200, True)
    assert caller.is_alive()
    released.set()
    caller.join(timeout=60)


# ------------------------------------------------------------------ resumable urlscan scans


def test_a_scan_is_recorded_before_its_first_poll_and_resumed_without_paying(tmp_path: Path) -> None:
    sc = scenario({WEB: "ok"})
    generator, ledger = _generator(tmp_path, sc, WEB)
    memory = Memory(ledger)
    first = generator.generate(WEB, GenerateContext(token_address="A", requests=memory))  # type: ignore[attr-defined]
    uuid = memory.ids["urlscan"]
    # submitted() came right after the submission: the ledger then held the scan and no poll yet
    assert memory.ledger_at_submission == [[f"scan:{WEB}"]]
    # a later holder (the engine hands it the recorded id): no new submission, the scan is polled
    resumed_ledger_start = len(ledger.read())
    again = generator.generate(WEB, GenerateContext(token_address="B", requests=memory))  # type: ignore[attr-defined]
    later = [e.subject for e in ledger.read()[resumed_ledger_start:]]
    assert not any(s.startswith("scan:") for s in later) and f"result:{uuid}" in later
    assert again.graph.groups[0].content.fields["scan_uuid"] == uuid == first.graph.groups[0].content.fields["scan_uuid"]
    assert ledger.repeated_paid_subjects() == {}  # polls are never a repeat


# ------------------------------------------------------------------ resumable Apify runs


def test_a_run_is_recorded_before_its_first_status_read_and_resumed_without_paying(tmp_path: Path) -> None:
    sc = scenario({TIKTOK: "ok"})
    generator, ledger = _generator(tmp_path, sc, TIKTOK)
    memory = Memory(ledger)
    first = generator.generate(TIKTOK, GenerateContext(token_address="A", requests=memory))  # type: ignore[attr-defined]
    run_id = memory.ids["apify"]
    assert memory.ledger_at_submission == [[f"apify:{TIKTOK}"]]
    assert [e.subject.split(":")[0] for e in ledger.read()] == ["apify", "apify-run", "apify-run", "apify-dataset"]
    start = len(ledger.read())
    again = generator.generate(TIKTOK, GenerateContext(token_address="B", requests=memory))  # type: ignore[attr-defined]
    later = ledger.read()[start:]
    assert [e.subject for e in later][0] == f"apify-run:{run_id}"
    assert not any(e.paid for e in later)  # the run was paid once; reading it again is free
    assert len(ledger.paid_requests()) == 1 and ledger.repeated_paid_subjects() == {}
    plan(again.graph)
    assert again.graph.groups[0].content == first.graph.groups[0].content


@pytest.mark.parametrize("outcome, code", [("error", ErrorCode.UPSTREAM), ("rate_limited", ErrorCode.RATE_LIMITED),
                                           ("credit_exhausted", ErrorCode.CREDIT_EXHAUSTED)])
def test_a_refused_run_start_records_nothing_to_resume(tmp_path: Path, outcome: str, code: ErrorCode) -> None:
    generator, ledger = _generator(tmp_path, scenario({TIKTOK: outcome}), TIKTOK)
    memory = Memory(ledger)
    with pytest.raises(ExternalFetchError) as info:
        generator.generate(TIKTOK, GenerateContext(token_address="A", requests=memory))  # type: ignore[attr-defined]
    assert info.value.code is code and memory.ids == {}
    assert [e.subject for e in ledger.read()] == [f"apify:{TIKTOK}"]


def test_two_starts_of_one_url_are_two_runs_and_a_repeat(tmp_path: Path) -> None:
    """Without the memory, a second start pays again: the ledger shows it as a repeated payment."""
    generator, ledger = _generator(tmp_path, scenario(), TIKTOK)
    runs = set()
    for holder in ("A", "B"):
        memory = Memory(ledger)
        generator.generate(TIKTOK, GenerateContext(token_address=holder, requests=memory))  # type: ignore[attr-defined]
        runs.add(memory.ids["apify"])
    assert len(runs) == 2
    assert ledger.repeated_paid_subjects() == {("apify", f"apify:{TIKTOK}"): 2}


# ------------------------------------------------------------------ rate limits


def test_rate_limits_are_validated_naming_the_bad_value() -> None:
    with pytest.raises(ScenarioError, match=r"unknown service\(s\) 'twitter' in rate_limits"):
        parse_scenario({"rate_limits": {"twitter": {"requests": 1, "per_seconds": 1}}})
    with pytest.raises(ScenarioError, match=r"rate_limits\.twitterapi\.requests: .*greater than or equal to 1 \(got 0\)"):
        parse_scenario({"rate_limits": {"twitterapi": {"requests": 0, "per_seconds": 1}}})
    with pytest.raises(ScenarioError, match=r"rate_limits\.twitterapi\.requests: .*\(got '20'\)"):
        parse_scenario({"rate_limits": {"twitterapi": {"requests": "20", "per_seconds": 1}}})
    with pytest.raises(ScenarioError, match=r"per_seconds must be a number of seconds, got 'soon'"):
        parse_scenario({"rate_limits": {"urlscan": {"requests": 5, "per_seconds": "soon"}}})
    with pytest.raises(ScenarioError, match=r"rate_limits\.urlscan\.per_second: Extra inputs"):
        parse_scenario({"rate_limits": {"urlscan": {"requests": 5, "per_second": 60}}})
    sc = parse_scenario({"rate_limits": {"twitterapi": {"requests": 20, "per_seconds": 1}}})
    assert sc.rate_limits["twitterapi"].requests == 20


def _limited(tmp_path: Path, now: float, **limits: dict[str, float]) -> tuple[SandboxTransport, Ledger]:
    ledger = Ledger(tmp_path / "ledger.jsonl")
    sc = parse_scenario({"rate_limits": limits})
    return SandboxTransport(sc, ledger, sleep=lambda s: None, clock=lambda: now), ledger


def test_a_rate_limit_holds_across_threads_in_fixed_windows(tmp_path: Path) -> None:
    now = [1_800_000_000.25]
    ledger = Ledger(tmp_path / "ledger.jsonl")
    sc = parse_scenario({"rate_limits": {"twitterapi": {"requests": 5, "per_seconds": 1}}})
    transport = SandboxTransport(sc, ledger, sleep=lambda s: None, clock=lambda: now[0])
    with httpx.Client(transport=transport) as client:
        def call(i: int) -> httpx.Response:
            return client.get(f"{TW}/user/info", params={"userName": f"user{i}"}, headers={"X-API-Key": KEY})

        with ThreadPoolExecutor(max_workers=8) as pool:
            answers = list(pool.map(call, range(20)))
        assert sorted(a.status_code for a in answers) == [200] * 5 + [429] * 15
        refused = next(a for a in answers if a.status_code == 429)
        assert refused.headers["retry-after"] == "1" and refused.json()["status"] == "error"
        now[0] += 1  # the next window
        assert call(99).status_code == 200
    refusals = [e for e in ledger.read() if e.status == 429]
    assert len(refusals) == 15 and not any(e.paid for e in refusals)  # a refused request is not billed
    assert len(ledger.paid_requests()) == 6
    # Each line carries the time the request arrived, the one its rate window counted it at.
    assert {e.ts.timestamp() for e in ledger.read()} == {1_800_000_000.25, 1_800_000_001.25}


def test_a_rate_limit_holds_across_processes(tmp_path: Path) -> None:
    ledger_path = tmp_path / "ledger.jsonl"
    sc_json = json.dumps({"rate_limits": {"twitterapi": {"requests": 7, "per_seconds": 60}}})
    ctx = multiprocessing.get_context("spawn")
    outs = [tmp_path / f"out{i}.json" for i in range(3)]
    procs = [ctx.Process(target=call_rate_limited,
                         args=(sc_json, str(ledger_path), f"{TW}/user/info?userName=someone", 5, 1_800_000_030.0, str(o)))
             for o in outs]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    statuses = [s for o in outs for s in json.loads(o.read_text())]
    assert statuses.count(200) == 7 and statuses.count(429) == 8


@pytest.mark.parametrize("service, url, method, window", [
    ("urlscan", "https://urlscan.io/api/v1/scan/", "POST", "minute"),
    ("github", "https://api.github.com/repos/o/r", "GET", None),
    ("youtube", "https://www.googleapis.com/youtube/v3/videos?id=dQw4w9WgXcQ&key=k", "GET", None),
    ("telegram", "https://t.me/somechannel", "GET", None),
    ("apify", "https://api.apify.com/v2/acts/clockworks~tiktok-scraper/runs?token=k", "POST", None),
])
def test_each_provider_refuses_in_its_own_shape(tmp_path: Path, service: str, url: str, method: str,
                                               window: str | None) -> None:
    transport, _ = _limited(tmp_path, 1_800_000_010.0, **{service: {"requests": 1, "per_seconds": 60}})
    body = {"url": WEB, "visibility": "unlisted"} if service == "urlscan" else {"postURLs": [TIKTOK]}
    with httpx.Client(transport=transport) as client:
        def send() -> httpx.Response:
            return client.request(method, url, json=body if method == "POST" else None,
                                  headers={"API-Key": "k", "X-API-Key": "k"})

        assert send().status_code in (200, 201)
        refused = send()
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "50"  # the window ends at the full minute
    if window is not None:  # urlscan names its quota in the X-Rate-Limit family
        assert refused.headers["x-rate-limit-window"] == window
        assert refused.headers["x-rate-limit-limit"] == "1" and refused.headers["x-rate-limit-remaining"] == "0"
        assert refused.headers["x-rate-limit-reset-after"] == "50"
    if service == "github":
        assert refused.headers["x-ratelimit-remaining"] == "0"


def test_urlscan_result_polls_do_not_count_against_the_scan_limit(tmp_path: Path) -> None:
    transport, ledger = _limited(tmp_path, 1_800_000_010.0, urlscan={"requests": 1, "per_seconds": 60})
    with httpx.Client(transport=transport) as client:
        scan = client.post("https://urlscan.io/api/v1/scan/", json={"url": WEB}, headers={"API-Key": "k"}).json()
        polls = [client.get(f"https://urlscan.io/api/v1/result/{scan['uuid']}/").status_code for _ in range(3)]
    assert polls == [404, 200, 200]


def test_a_daily_urlscan_limit_reads_as_credit_exhausted(tmp_path: Path) -> None:
    sc = parse_scenario({"rate_limits": {"urlscan": {"requests": 1, "per_seconds": 86_400}}})
    ledger = Ledger(tmp_path / "ledger.jsonl")
    registry = build_registry(KEYS, transport=SandboxTransport(sc, ledger, sleep=lambda s: None,
                                                                clock=lambda: 1_800_000_000.0),
                              sleep=lambda s: None)
    generator = registry.generators[platform_of(WEB)]
    generator.generate(WEB, GenerateContext(token_address="A"))
    with pytest.raises(ExternalFetchError) as info:
        generator.generate("https://duckcoin.fun", GenerateContext(token_address="B"))
    assert info.value.code is ErrorCode.CREDIT_EXHAUSTED


def test_a_held_answer_waits_until_its_hold_file_is_removed(tmp_path: Path) -> None:
    """`held_while`: the provider has the request (billed) and answers only once the test removes
    the file, however long that takes; other targets answer at once."""
    hold = tmp_path / "hold"
    hold.touch()
    looked = threading.Semaphore(0)

    def poll(seconds: float) -> None:  # the hold's polling: counted instead of slept
        looked.release()

    sc = scenario({"https://x.com/i/status/42": {"outcome": "ok", "held_while": str(hold)}})
    ledger = Ledger(tmp_path / "ledger.jsonl")
    transport = SandboxTransport(sc, ledger, sleep=poll)
    free = transport.handle_request(httpx.Request("GET", f"{TW}/tweets?tweet_ids=7", headers={"X-API-Key": KEY}))
    assert free.status_code == 200
    answers: list[httpx.Response] = []
    request = httpx.Request("GET", f"{TW}/tweets?tweet_ids=42", headers={"X-API-Key": KEY})
    caller = threading.Thread(target=lambda: answers.append(transport.handle_request(request)), daemon=True)
    caller.start()
    for _ in range(3):  # it looked at its hold three times and is still waiting
        assert looked.acquire(timeout=60)
    assert caller.is_alive() and not answers
    assert [e.subject for e in ledger.read()] == ["tweet:7", "tweet:42"]
    hold.unlink()
    caller.join(timeout=60)
    assert [a.status_code for a in answers] == [200]
