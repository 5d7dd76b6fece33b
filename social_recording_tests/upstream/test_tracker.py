"""TrackerClient: request shape, retry policy, lenient item parsing, key secrecy."""

from __future__ import annotations

import json
import logging
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta, timezone

import httpx
import pytest
from pydantic import SecretStr

from social_recording.upstream.tracker import (
    MAX_ADDRESSES_PER_REQUEST,
    MalformedItem,
    MalformedTrackerItem,
    RangeReport,
    TokenInfo,
    TrackedToken,
    TrackerClient,
    TrackerError,
    iso_utc,
)

KEY = "sk-tracker-Sup3rS3cret-000111"
BASE = "https://tracker.example"
START = datetime(2024, 5, 1, tzinfo=UTC)
END = datetime(2024, 5, 2, tzinfo=UTC)

Step = httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]


class Script:
    """A MockTransport handler that answers with the next scripted step and records every request."""

    def __init__(self, steps: Sequence[Step]) -> None:
        self.steps = list(steps)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        step = self.steps.pop(0) if len(self.steps) > 1 else self.steps[0]
        if isinstance(step, Exception):
            raise step
        if isinstance(step, httpx.Response):
            return step
        return step(request)


def ok(data: object) -> httpx.Response:
    return httpx.Response(200, json={"data": data})


def make(
    script: Script, *, key: str | None = KEY, groups: Sequence[str] = ("g1", "g2")
) -> tuple[TrackerClient, list[float]]:
    sleeps: list[float] = []
    client = TrackerClient(
        BASE,
        SecretStr(key) if key is not None else None,
        groups,
        transport=httpx.MockTransport(script),
        sleep=sleeps.append,
    )
    return client, sleeps


TRACKED = {
    "tokenAddress": "Mint1111",
    "tokenSymbol": "AAA",
    "investorCount": 4,
    "firstTransferAt": "2024-04-30T10:00:00.000Z",
    "lastTransferAt": "2024-05-01T12:30:00+09:00",
    "alphaScore": 77,
}
INFO = {
    "tokenAddress": "Mint1111",
    "tokenSymbol": "AAA",
    "tokenName": "Alpha",
    "imageUrl": "https://cdn.example/a.png",
    "website": "https://www.alpha.example/?utm_source=x",
    "twitter": "https://twitter.com/alpha",
    "telegram": None,
    "discord": "",
    "rugScore": 3,
}


# ------------------------------------------------------------------ request shape


def test_range_request_shape_and_parsing() -> None:
    script = Script([ok([TRACKED])])
    client, sleeps = make(script)
    tokens = client.tokens_in_range(START, END)
    assert len(script.requests) == 1 and sleeps == []
    req = script.requests[0]
    assert req.method == "GET"
    assert req.url.path == "/api/v1/tokens"
    assert req.headers["X-API-Key"] == KEY
    assert dict(req.url.params) == {
        "startDate": "2024-05-01T00:00:00.000Z",
        "endDate": "2024-05-02T00:00:00.000Z",
        "afGroupIds": "g1,g2",
    }
    assert tokens == [
        TrackedToken(
            address="Mint1111",
            symbol="AAA",
            investor_count=4,
            first_transfer_at=datetime(2024, 4, 30, 10, tzinfo=UTC),
            last_transfer_at=datetime(2024, 5, 1, 3, 30, tzinfo=UTC),
        )
    ]
    assert tokens[0].last_transfer_at is not None and tokens[0].last_transfer_at.utcoffset() == timedelta(0)


def test_range_group_override_and_non_utc_bounds() -> None:
    script = Script([ok([])])
    client, _ = make(script)
    kst = timezone(timedelta(hours=9))
    assert (
        client.tokens_in_range(datetime(2024, 5, 1, 9, tzinfo=kst), datetime(2024, 5, 1, 10), ["only"]) == []
    )
    params = script.requests[0].url.params
    assert params["startDate"] == "2024-05-01T00:00:00.000Z"
    assert params["endDate"] == "2024-05-01T10:00:00.000Z"  # naive taken as UTC
    assert params["afGroupIds"] == "only"


@pytest.mark.parametrize("start,end", [(END, START), (START, START)])
def test_range_rejects_start_not_before_end(start: datetime, end: datetime) -> None:
    script = Script([ok([])])
    client, _ = make(script)
    with pytest.raises(ValueError) as info:
        client.tokens_in_range(start, end)
    assert iso_utc(start) in str(info.value) and iso_utc(end) in str(info.value)
    assert script.requests == []


def test_range_requires_group_ids() -> None:
    script = Script([ok([])])
    client, _ = make(script, groups=())
    with pytest.raises(ValueError, match="af_group_ids"):
        client.tokens_in_range(START, END)
    with pytest.raises(ValueError, match="invalid af group id"):
        client.tokens_in_range(START, END, ["a,b"])
    assert script.requests == []


def test_by_addresses_request_and_missing_address() -> None:
    script = Script([ok([INFO])])
    client, _ = make(script)
    found = client.tokens_by_addresses(["Mint1111", "Unknown22", "Mint1111"])
    req = script.requests[0]
    assert req.method == "POST" and req.url.path == "/api/v1/tokens/by-addresses"
    assert req.headers["X-API-Key"] == KEY
    assert json.loads(req.content) == {"addresses": ["Mint1111", "Unknown22"]}
    assert list(found) == ["Mint1111"]
    info = found["Mint1111"]
    assert (info.symbol, info.name, info.image_url) == ("AAA", "Alpha", "https://cdn.example/a.png")
    assert (info.website, info.twitter, info.telegram, info.discord) == (
        "https://www.alpha.example/?utm_source=x",
        "https://twitter.com/alpha",
        None,
        "",
    )


def test_token_by_address_none_when_unknown() -> None:
    script = Script([ok([])])
    client, _ = make(script)
    assert client.token_by_address("Nope") is None
    assert json.loads(script.requests[0].content) == {"addresses": ["Nope"]}


def test_by_addresses_empty_makes_no_request_and_long_lists_are_split() -> None:
    def echo(request: httpx.Request) -> httpx.Response:
        asked = json.loads(request.content)["addresses"]
        return ok([{"tokenAddress": a, "imageUrl": "i"} for a in asked])

    script = Script([echo])
    client, _ = make(script)
    assert client.tokens_by_addresses([]) == {}
    assert script.requests == []
    addresses = [f"A{i}" for i in range(MAX_ADDRESSES_PER_REQUEST + 5)]
    found = client.tokens_by_addresses(addresses)
    assert list(found) == addresses
    assert [len(json.loads(r.content)["addresses"]) for r in script.requests] == [
        MAX_ADDRESSES_PER_REQUEST,
        5,
    ]


def test_by_addresses_ignores_unrequested_addresses() -> None:
    script = Script([ok([{"tokenAddress": "Other"}, INFO])])
    client, _ = make(script)
    assert list(client.tokens_by_addresses(["Mint1111"])) == ["Mint1111"]


def test_no_key_sends_no_header() -> None:
    script = Script([ok([])])
    client, _ = make(script, key=None)
    client.tokens_by_addresses(["A"])
    assert "X-API-Key" not in script.requests[0].headers


# ------------------------------------------------------------------ retry policy


def test_503_then_success_retries_once() -> None:
    script = Script([httpx.Response(503), ok([TRACKED])])
    client, sleeps = make(script)
    assert [t.address for t in client.tokens_in_range(START, END)] == ["Mint1111"]
    assert len(script.requests) == 2
    assert sleeps == [1.0]


def test_429_is_retried() -> None:
    script = Script([httpx.Response(429), httpx.Response(429), ok([INFO])])
    client, sleeps = make(script)
    assert client.token_by_address("Mint1111") is not None
    assert len(script.requests) == 3
    assert sleeps == [1.0, 2.0]


def test_timeout_is_retried() -> None:
    script = Script([httpx.ReadTimeout("slow"), httpx.ConnectTimeout("slow"), ok([TRACKED])])
    client, sleeps = make(script)
    assert len(client.tokens_in_range(START, END)) == 1
    assert len(script.requests) == 3 and sleeps == [1.0, 2.0]


def test_connect_error_is_retried() -> None:
    script = Script([httpx.ConnectError("[Errno 111] Connection refused"), ok([TRACKED])])
    client, sleeps = make(script)
    assert len(client.tokens_in_range(START, END)) == 1
    assert len(script.requests) == 2 and sleeps == [1.0]


def test_three_503_raise_after_exactly_three_requests() -> None:
    script = Script([httpx.Response(503)])
    client, sleeps = make(script)
    with pytest.raises(TrackerError) as info:
        client.tokens_in_range(START, END)
    assert len(script.requests) == 3
    assert sleeps == [1.0, 2.0]
    err = info.value
    assert isinstance(err, RuntimeError)
    assert "GET /api/v1/tokens" in str(err) and "503" in str(err)
    assert (err.status, err.attempts, err.endpoint) == (503, 3, "GET /api/v1/tokens")


def test_three_connect_errors_raise() -> None:
    script = Script([httpx.ConnectError("refused")])
    client, sleeps = make(script)
    with pytest.raises(TrackerError, match="POST /api/v1/tokens/by-addresses"):
        client.token_by_address("A")
    assert len(script.requests) == 3 and sleeps == [1.0, 2.0]


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_client_errors_fail_at_once(status: int) -> None:
    script = Script([httpx.Response(status), ok([])])
    client, sleeps = make(script)
    with pytest.raises(TrackerError) as info:
        client.tokens_in_range(START, END)
    assert len(script.requests) == 1 and sleeps == []
    assert str(status) in str(info.value) and "GET /api/v1/tokens" in str(info.value)
    assert info.value.status == status


def test_other_transport_error_is_not_retried() -> None:
    script = Script([httpx.RemoteProtocolError("server disconnected"), ok([])])
    client, sleeps = make(script)
    with pytest.raises(TrackerError, match="RemoteProtocolError"):
        client.tokens_in_range(START, END)
    assert len(script.requests) == 1 and sleeps == []


# ------------------------------------------------------------------ parsing


def test_malformed_items_are_skipped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    items = [
        TRACKED,
        {"tokenSymbol": "NOADDR", "investorCount": 3},
        {**TRACKED, "tokenAddress": "JunkCount", "investorCount": "many"},
        {**TRACKED, "tokenAddress": "BoolCount", "investorCount": True},
        {**TRACKED, "tokenAddress": "BadDate", "lastTransferAt": "yesterday-ish"},
        "not an object",
        {**TRACKED, "tokenAddress": "Good2", "investorCount": "7", "firstTransferAt": None},
    ]
    script = Script([ok(items)])
    client, _ = make(script)
    with caplog.at_level(logging.WARNING, logger="social_recording.upstream.tracker"):
        tokens = client.tokens_in_range(START, END)
    assert [(t.address, t.investor_count) for t in tokens] == [("Mint1111", 4), ("Good2", 7)]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 5
    assert "item 1" in warnings[0] and "tokenAddress" in warnings[0]
    assert "item 2" in warnings[1] and "JunkCount" in warnings[1] and "investorCount" in warnings[1]
    assert "BoolCount" in warnings[2]
    assert "BadDate" in warnings[3] and "lastTransferAt" in warnings[3]
    assert "item 5" in warnings[4] and "not an object" in warnings[4]


def test_token_info_tolerates_odd_link_values() -> None:
    item = {**INFO, "discord": 0, "telegram": ["x"], "website": None}
    script = Script([ok([item, {"tokenAddress": "   "}])])
    client, _ = make(script)
    info = client.token_by_address("Mint1111")
    assert isinstance(info, TokenInfo)
    # non-string values become text, so the reader can drop them with a reason instead of losing the token
    assert (info.discord, info.telegram, info.website) == ("0", '["x"]', None)


@pytest.mark.parametrize(
    "body",
    [
        {"items": []},
        {"data": {"tokenAddress": "A"}},
        {"data": None},
        [TRACKED],
        "data",
    ],
)
def test_malformed_body_raises(body: object) -> None:
    script = Script([httpx.Response(200, json=body)])
    client, sleeps = make(script)
    with pytest.raises(TrackerError, match="malformed response"):
        client.tokens_in_range(START, END)
    assert len(script.requests) == 1 and sleeps == []


def test_non_json_body_raises() -> None:
    script = Script([httpx.Response(200, content=b"<html>gateway</html>")])
    client, _ = make(script)
    with pytest.raises(TrackerError, match="malformed response.*not JSON"):
        client.token_by_address("A")


# ------------------------------------------------------------------ secrecy and construction


def test_key_never_in_logs_exception_or_repr(caplog: pytest.LogCaptureFixture) -> None:
    script = Script([httpx.Response(503), httpx.ConnectError("refused"), httpx.Response(401)])
    client, _ = make(script)
    with caplog.at_level(logging.DEBUG), pytest.raises(TrackerError) as info:
        client.tokens_in_range(START, END)
    assert len(script.requests) == 3
    assert caplog.records, "the retries should have been logged"
    assert KEY not in caplog.text
    assert KEY not in str(info.value) and KEY not in repr(info.value)
    assert KEY not in repr(client) and KEY not in str(client)
    assert "tracker.example" in repr(client)


@pytest.mark.parametrize(
    "base",
    ["ftp://tracker.example", "tracker.example", "https://user:pw@tracker.example", "https://t.example/?k=1"],
)
def test_bad_base_url_is_rejected(base: str) -> None:
    with pytest.raises(ValueError) as info:
        TrackerClient(base, SecretStr(KEY), ["g"])
    assert "pw" not in str(info.value) and KEY not in str(info.value)


def test_base_url_with_path_prefix() -> None:
    script = Script([ok([])])
    client = TrackerClient(
        BASE + "/tracker/", None, ["g"], transport=httpx.MockTransport(script), sleep=lambda s: None
    )
    client.tokens_in_range(START, END)
    assert script.requests[0].url.path == "/tracker/api/v1/tokens"


# ------------------------------------------------------------------ malformed items are reported


def test_range_report_names_every_malformed_item_without_values() -> None:
    items = [
        TRACKED,
        {"tokenSymbol": "NOADDR", "investorCount": 3},
        {**TRACKED, "tokenAddress": "JunkCount", "investorCount": "many-sk-secretish"},
        "not an object",
        {**TRACKED, "tokenAddress": "  " + "L" * 300, "investorCount": None},
    ]
    script = Script([ok(items)])
    client, _ = make(script)
    report = client.range_report(START, END)
    assert isinstance(report, RangeReport)
    assert [t.address for t in report.tokens] == ["Mint1111"]
    assert [(m.index, m.address) for m in report.malformed] == [
        (1, None),
        (2, "JunkCount"),
        (3, None),
        (4, "L" * 100 + "…"),
    ]
    assert "tokenAddress" in report.malformed[0].reason
    assert "investorCount" in report.malformed[1].reason and "many" not in report.malformed[1].reason
    assert report.malformed[2].reason == "not an object (str)"
    # tokens_in_range keeps returning the plain list
    script = Script([ok(items)])
    client, _ = make(script)
    assert client.tokens_in_range(START, END) == report.tokens


def test_token_by_address_raises_for_its_own_malformed_item() -> None:
    script = Script([ok([{**INFO, "tokenAddress": "Mint1111", "firstTransferAt": "not-a-date"}])])
    client, _ = make(script)
    with pytest.raises(MalformedTrackerItem) as info:
        client.token_by_address(" Mint1111 ")
    err = info.value
    assert isinstance(err, TrackerError)
    assert err.address == "Mint1111" and "firstTransferAt" in err.reason
    assert "Mint1111" in str(err) and "POST /api/v1/tokens/by-addresses" in str(err)


def test_token_by_address_prefers_a_valid_item_and_ignores_other_addresses_junk() -> None:
    script = Script([ok([{"tokenAddress": "Other", "firstTransferAt": "bad"}, INFO])])
    client, _ = make(script)
    assert client.token_by_address("Mint1111") == TokenInfo.model_validate(INFO)
    script = Script([ok([{"tokenAddress": "Other", "firstTransferAt": "bad"}])])
    client, _ = make(script)
    assert client.token_by_address("Mint1111") is None  # unknown, not malformed


def test_tokens_by_addresses_exposes_malformed_items() -> None:
    script = Script([ok([INFO, {"tokenAddress": "Bad2", "firstTransferAt": "x"}, 7])])
    client, _ = make(script)
    malformed: list[MalformedItem] = []
    found = client.tokens_by_addresses(["Mint1111", "Bad2"], malformed=malformed)
    assert list(found) == ["Mint1111"]
    assert [(m.index, m.address) for m in malformed] == [(1, "Bad2"), (2, None)]
    assert client.tokens_by_addresses(["Mint1111"]) == found  # the old call still works


# ------------------------------------------------------------------ redirects: same origin only


def test_same_origin_redirect_is_followed_with_the_key_and_the_body() -> None:
    def moved(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/tokens/by-addresses":
            return httpx.Response(308, headers={"location": "/v2/tokens/by-addresses"})
        return ok([INFO])

    script = Script([moved])
    client, sleeps = make(script)
    assert client.token_by_address("Mint1111") is not None
    first, second = script.requests
    assert second.url == "https://tracker.example/v2/tokens/by-addresses"
    assert second.method == "POST" and json.loads(second.content) == {"addresses": ["Mint1111"]}
    assert second.headers["X-API-Key"] == KEY and sleeps == []


def test_http_to_https_upgrade_of_the_same_host_is_followed() -> None:
    def upgrade(request: httpx.Request) -> httpx.Response:
        if request.url.scheme == "http":
            return httpx.Response(301, headers={"location": str(request.url.copy_with(scheme="https"))})
        return ok([TRACKED])

    script = Script([upgrade])
    client = TrackerClient("http://tracker.example", SecretStr(KEY), ["g"],
                           transport=httpx.MockTransport(script), sleep=lambda s: None)
    assert len(client.tokens_in_range(START, END)) == 1
    assert [r.url.scheme for r in script.requests] == ["http", "https"]
    assert script.requests[1].url.params["afGroupIds"] == "g"


@pytest.mark.parametrize(
    "location",
    [
        "https://evil.example/api/v1/tokens?key=leak",
        "http://tracker.example/api/v1/tokens",  # https -> http downgrade
        "https://tracker.example:8443/api/v1/tokens",  # another port
        "https://sub.tracker.example/api/v1/tokens",
        "http://127.0.0.1/",
        "ftp://tracker.example/x",
    ],
)
def test_redirect_elsewhere_is_refused_and_nothing_is_sent_there(location: str) -> None:
    script = Script([httpx.Response(302, headers={"location": location}), ok([TRACKED])])
    client, sleeps = make(script)
    with pytest.raises(TrackerError) as info:
        client.tokens_in_range(START, END)
    assert len(script.requests) == 1 and sleeps == []  # refused, never retried
    message = str(info.value)
    assert "refused redirect to" in message and "leak" not in message and KEY not in message


def test_private_base_url_is_never_guarded_and_its_redirects_stay_in_house() -> None:
    def moved(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/tokens":
            return httpx.Response(307, headers={"location": "/tokens-v2"})
        return ok([TRACKED])

    script = Script([moved])
    client = TrackerClient("http://10.0.0.5:8080", None, ["g"], transport=httpx.MockTransport(script),
                           sleep=lambda s: None)
    assert len(client.tokens_in_range(START, END)) == 1
    assert [str(r.url.copy_with(query=None)) for r in script.requests] == [
        "http://10.0.0.5:8080/api/v1/tokens",
        "http://10.0.0.5:8080/tokens-v2",
    ]


def test_redirect_chain_is_bounded() -> None:
    script = Script([httpx.Response(302, headers={"location": "/again"})])
    client, _ = make(script)
    with pytest.raises(TrackerError, match="more than 3 redirects"):
        client.tokens_in_range(START, END)
    assert len(script.requests) == 4


# ------------------------------------------------------------------ the range answer, read as it streams


def streamed(items: Sequence[object], *, per_chunk: int = 2, then: Exception | None = None,
             sent: list[int] | None = None) -> httpx.Response:
    """A 200 whose body is sent in chunks as a server streams it (no Content-Length); `then` raises
    after the items' chunks instead of closing the body; `sent` counts the chunks handed out."""

    def chunks() -> Iterator[bytes]:
        yield b'{"total": ' + str(len(items)).encode() + b', "data": ['
        for i in range(0, len(items), per_chunk):
            if sent is not None:
                sent.append(i)
            yield (b"," if i else b"") + b",".join(json.dumps(x).encode() for x in items[i:i + per_chunk])
        if then is not None:
            raise then
        yield b"]}"

    return httpx.Response(200, content=chunks())


def test_scan_range_keeps_what_keep_returns_and_counts_the_rest() -> None:
    items = [{**TRACKED, "tokenAddress": f"Mint{i}", "investorCount": i} for i in range(7)]
    items[3] = {**TRACKED, "tokenAddress": "Junk", "investorCount": "many"}
    script = Script([streamed(items, per_chunk=3)])
    client, _ = make(script)
    scan = client.scan_range(START, END, lambda t: t.address if t.investor_count >= 4 else None)
    assert scan.kept == ["Mint4", "Mint5", "Mint6"]
    assert scan.scanned == 6
    assert [(m.index, m.address) for m in scan.malformed] == [(3, "Junk")]
    assert script.requests[0].url.path == "/api/v1/tokens"


def test_range_report_reads_a_streamed_answer_as_a_whole_one() -> None:
    items = [TRACKED, "not an object", {**TRACKED, "tokenAddress": "Good2"}]
    whole, _ = make(Script([ok(items)]))
    parts, _ = make(Script([streamed(items, per_chunk=1)]))
    assert parts.range_report(START, END) == whole.range_report(START, END)


def test_a_range_answer_cut_by_a_timeout_is_read_again_from_nothing() -> None:
    """The retry starts the scan over: every token is kept once, never twice."""
    items = [{**TRACKED, "tokenAddress": f"Mint{i}"} for i in range(6)]
    script = Script([streamed(items, then=httpx.ReadTimeout("stalled")), streamed(items)])
    client, sleeps = make(script)
    scan = client.scan_range(START, END, lambda t: t.address)
    assert scan.kept == [f"Mint{i}" for i in range(6)] and scan.scanned == 6
    assert len(script.requests) == 2 and len(sleeps) == 1


def test_a_range_answer_cut_by_a_broken_connection_fails_without_a_partial_result() -> None:
    items = [{**TRACKED, "tokenAddress": f"Mint{i}"} for i in range(4)]
    script = Script([streamed(items, then=httpx.RemoteProtocolError("peer closed connection"))])
    client, _ = make(script)
    with pytest.raises(TrackerError, match="RemoteProtocolError"):
        client.scan_range(START, END, lambda t: t.address)


def test_a_chunked_range_answer_over_the_cap_stops_being_read_at_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("social_recording.upstream.tracker.MAX_RESPONSE_BYTES", 4_000)
    sent: list[int] = []
    items = [{**TRACKED, "tokenAddress": f"Mint{i:04d}"} for i in range(1_000)]
    client, _ = make(Script([streamed(items, per_chunk=10, sent=sent)]))
    with pytest.raises(TrackerError, match="larger than 4000 bytes"):
        client.scan_range(START, END, lambda t: t.address)
    assert len(sent) < 10  # abandoned at the cap, not read to its end (100 chunks)


@pytest.mark.parametrize(("body", "match"), [
    (b"<html>gateway</html>", r"GET /api/v1/tokens: body is not JSON \(HTTP 200\)"),
    (b'{"data": [{"tokenAddress": "A"}', "body is not JSON"),
    (b'{"items": []}', r"expected \{\"data\": \[\.\.\.\]\}, got object with keys \['items'\]"),
    (b"[]", r"expected \{\"data\": \[\.\.\.\]\}, got list"),
])
def test_a_broken_range_answer_fails_the_range_with_its_shape(body: bytes, match: str) -> None:
    script = Script([httpx.Response(200, content=body)])
    client, sleeps = make(script)
    with pytest.raises(TrackerError, match=match) as raised:
        client.scan_range(START, END, lambda t: t)
    assert KEY not in str(raised.value)
    assert len(script.requests) == 1 and sleeps == []


def test_scanning_a_large_window_holds_what_keep_keeps_not_the_answer() -> None:
    """20,000 tokens, about 5 MB of JSON (read whole, the body and its parsed items and models came
    to about 40 MB): the scan's peak is the kept tokens and a chunk, 0.8 MB when measured."""
    n = 20_000
    items = ({**TRACKED, "tokenAddress": f"Mint{i:06d}", "tokenName": f"token number {i}",
              "website": f"https://example.com/{i}", "investorCount": 3 + i % 50} for i in range(n))

    def chunks() -> Iterator[bytes]:
        yield b'{"data": ['
        batch: list[bytes] = []
        for i, item in enumerate(items):
            batch.append(json.dumps(item).encode())
            if len(batch) == 200:
                yield (b"," if i >= 200 else b"") + b",".join(batch)
                batch = []
        yield b"]}"

    client, _ = make(Script([httpx.Response(200, content=chunks())]))
    tracemalloc.start()
    try:
        scan = client.scan_range(START, END, lambda t: t.address if t.investor_count == 52 else None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert scan.scanned == n and len(scan.kept) == n // 50
    assert peak < 1_500_000, f"the scan held {peak / 1e6:.1f} MB"
