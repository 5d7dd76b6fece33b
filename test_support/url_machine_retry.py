"""The model's retry use case beside the per-URL rules (test_support/url_machine_model.py): raw values
kept on tokens, resolved again by every retry run, and what a retry run asks of the state machine
(docs/architecture.md, "URLs: transformed once, at the entry", "Retry selection", "The per-URL state
machine").

A mixin of the model's machine: its rules make tokens whose profile carries raw values whose
shortener answers what the world chooses (a transient failure, gone for good, or a canonical URL), and
every retry the machine drives (through `engine.retry`, wrapped here) is checked against the documented
rules:

- the store keeps exactly the raw values the model follows (checked after every step);
- exactly the raw values due are tried (never tried since the read, or last tried by the selection's
  moment less the run's interval), oldest first when more are due than the run's limit, and no other;
- a value still failing keeps its place with one attempt more, checked at that try; it is dropped when
  its attempts reach the budget, or when the shortener says it is gone; a resolved one leaves the
  token's raw values, its URL joins the token and is recorded by that same run;
- every decision is made for the run's own request: a live run's, a reconcile's, a retry's as of its
  selection (its named statuses, if any), never another's;
- an element a retry selected is judged as the selection saw it (its status and last recording);
- a retry recorded without a run given builds its own with the selection's interval (drawn).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

from social_recording.domain.models import TokenDoc, UnresolvedValue, as_stored
from social_recording.domain.policy import DEFAULT_MIN_INTERVAL
from social_recording.domain.status import FetchStatus
from social_recording.domain.url_machine import RunIntent, Selected, Why
from social_recording.recording import attempt as attempt_module
from social_recording.recording import retry as retry_module
from social_recording.recording.concurrency import CallSlots
from social_recording.recording.outcomes import EngineOutcome, UrlOutcome
from social_recording.recording.run_state import RunState
from social_recording.upstream.profile import DroppedValue, UnresolvedValueError

RAW_FIELDS = ("website", "twitter")
"""The profile fields a raw value may stand in (one value per field and token)."""
RAW_ANSWERS = ("transient", "transient", "gone", "https://youtube.com/watch?v=abcdefghijk", "https://x.com/i/status/101",
               "https://t.me/modelchat")
"""What a shortener may answer: a transient failure (kept, tried again), gone for good (dropped), or the
canonical URL it leads to (one of the model's URLs: the token may already hold it)."""
WHY_OF = {"live": Why.LIVE, "reconcile": Why.RECONCILE, "retry": Why.RETRY, "named_retry": Why.RETRY_NAMED}
"""The request every decision of an operation the model drives is made for."""


@dataclass
class Try:
    """One resolution the engine asked of a shortener during a retry."""

    address: str
    field: str
    at: datetime
    answer: str
    recorded: bool = False
    """Its answer was a URL and the retry's run recorded that URL for the token afterwards."""
    held: Any = None
    """The token's element of that URL at the try, if it held one (it stays as it was)."""


@dataclass
class Watch:
    """One retry run as the model follows it."""

    selection: Any
    run: RunState | None
    tries: list[Try] = field(default_factory=list)
    seen: dict[tuple[str, str], Selected] = field(default_factory=dict)


def counted_converged_unchanged(outcomes: Iterable[Any]) -> list[str]:
    """The URL outcomes counted as converged whose element stayed as it was: converged is an absorbing
    status the element did not hold before the run (a token's outcome and a retry's report alike)."""
    return [f"{o.token} {o.url}: stayed {o.status} and was counted as converged" for o in outcomes
            if isinstance(o, UrlOutcome) and o.converged and o.previous is not None and o.status == o.previous]


def _address(token: Any) -> str:
    return token.address if isinstance(token, TokenDoc) else token[0]


class CheckedRetry:
    """The engine's retry service as the model drives it: each recording of a selection watched and
    checked (raw values, the run it records in); everything else passed through."""

    def __init__(self, inner: Any, machine: RetryRules) -> None:
        self._inner = inner
        self._m = machine

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def record_selection(self, selection: Any, *, run: RunState | None = None, **kw: Any) -> Any:
        m = self._m
        own, m.retry_builds_its_run = m.retry_builds_its_run, False
        before = m.raw_values()
        watch = Watch(selection, None if own else run,
                      seen={(c.address, c.url): Selected(c.status, c.checked_at) for c in selection.candidates})
        m.watch = watch
        # Recorded by another run since the selection (an interleaving before this call): left as it
        # recorded them, and reported as changed meanwhile.
        changed = sum(1 for c in selection.candidates if (el := m.store.find_element(c.address, c.url)) is None
                      or (el.status, el.checked_at) != (c.status, c.checked_at))
        try:
            with m.runs_built_by_the_retry(watch) if own else nullcontext():
                out = self._inner.record_selection(selection, run=None if own else run, **kw)
        finally:
            m.watch = None
        m.world.violations.extend(counted_converged_unchanged(getattr(out, "url_outcomes", ())))
        if out.skipped is None and out.changed_meanwhile != changed:
            m.world.violations.append(f"a retry reported {out.changed_meanwhile} selected elements changed "
                                      f"meanwhile; another run recorded {changed} of them")
        m.check_raw_values(watch, before, out)
        m.check_retry_report(selection, changed, watch, out)
        m.stats["retries building their own run"] += int(own)
        m.stats["raw values tried"] += len(watch.tries)
        for t in watch.tries:
            m.stats[f"raw values answered {t.answer if t.answer in ('transient', 'gone') else 'a URL'}"] += 1
        return out


class RetryRules:
    """Rules and checks of the retry use case; `install_retry_checks` is called once the machine's
    engines, store, world and clock exist."""

    # The machine's (url_machine_model.UrlRules) attributes this mixin reads.
    world: Any
    store: Any
    clock: Any
    engines: dict[bool, Any]
    engine: Any
    profiles: Any
    tokens: list[str]
    new_token: Callable[..., None]
    doing: Callable[..., Any]
    _run: Callable[[Why], RunState]
    _check_token_outcome: Callable[[Any], None]

    watch: Watch | None = None
    retry_builds_its_run: bool = False
    deadline_passed: bool = False
    """The running retry's deadline passed (test_support/url_machine_outages.py): it may leave raw values."""

    def install_retry_checks(self, stats: Counter[str]) -> None:
        """Wrap the engines' retry services, recorders and `decide`, and answer raw values as the world
        says; `stats` counts what the retries met (bench/model_test.py prints it)."""
        self.stats = stats
        self.shortener: dict[str, str] = {}
        """Raw value -> what its shortener answers now (RAW_ANSWERS)."""
        self.raw_owner: dict[str, tuple[str, str]] = {}
        """Raw value -> (token, field)."""
        self.raw_model: dict[tuple[str, str], UnresolvedValue] = {}
        """(token, field) -> the raw value the store must keep, as the model follows it (its profile's,
        then each retry's try): none once dropped or resolved."""
        self.profiles.resolve_value = self._resolve
        for engine in self.engines.values():
            object.__setattr__(engine, "retry", CheckedRetry(engine.retry, self))
            recorder = engine.recorder
            recorder.record_url = self._watching_record_url(recorder.record_url)
        inner = attempt_module.decide  # the model's counting `decide` (restored to the real one at teardown)

        def decide(state: Any, element: Any, **kw: Any) -> Any:
            self._check_request(element.url, kw["request"])
            return inner(state, element, **kw)

        attempt_module.decide = decide

    # ------------------------------------------------------------------ the world's shorteners

    def _resolve(self, field: str, raw: str) -> str:
        answer = self.shortener.get(raw, "gone")
        watch = self.watch
        if watch is None:
            self.world.violations.append(f"{raw}: a raw value resolved outside a retry run")
        else:
            address = self.raw_owner[raw][0]
            doc = self.store.find_token(address)
            held = doc.element(answer) if doc is not None and answer not in ("transient", "gone") else None
            watch.tries.append(Try(address, field, self.clock(), answer, held=held))
        if answer == "transient":
            raise UnresolvedValueError(f"cannot resolve shortlink {raw!r}: timed out")
        if answer == "gone":
            raise DroppedValue(f"cannot resolve shortlink {raw!r}: HTTP 404")
        return answer

    @rule(urls=st.lists(st.sampled_from(RAW_ANSWERS[3:]), max_size=2, unique=True),
          raws=st.lists(st.tuples(st.sampled_from(RAW_ANSWERS), st.sampled_from(("fresh", "one try left")),
                                  st.booleans()), min_size=1, max_size=2))
    def a_token_with_raw_values(self, urls: list[str], raws: list[tuple[str, str, bool]]) -> None:
        """A token traded just now whose profile carries raw values the reader could not resolve (tried
        once at the read, or already `one try left`; checked at the read, or never dated): a live run
        stores it with them."""
        self.new_token(urls)
        address = self.tokens[-1]
        now = self.clock()
        budget = self.world.limits.max_attempts
        values = []
        for (answer, tries, dated), name in zip(raws, RAW_FIELDS, strict=False):
            raw = f"https://bit.ly/{address}-{name}"
            self.shortener[raw] = answer
            self.raw_owner[raw] = (address, name)
            values.append(UnresolvedValue(field=name, value=raw, reason="timed out",
                                          attempts=1 if tries == "fresh" else max(1, budget - 1),
                                          checked_at=now if dated else None))
        self.raw_model.update({(address, v.field): v for v in values})
        self.profiles.add(address, urls, symbol=address, unresolved=tuple(values))
        with self.doing("live"):
            self._check_token_outcome(self.engine.processor.record(address, address, self._run(Why.LIVE)))

    @rule(data=st.data(), answer=st.sampled_from(RAW_ANSWERS))
    def a_shortener_changes(self, data: st.DataObject, answer: str) -> None:
        if self.shortener:
            self.shortener[data.draw(st.sampled_from(sorted(self.shortener)))] = answer

    @rule()
    def the_next_retry_builds_its_own_run(self) -> None:
        """The next retry is recorded without a run given (as retry_job records it): it builds its own."""
        self.retry_builds_its_run = True

    @contextmanager
    def runs_built_by_the_retry(self, watch: Watch) -> Iterator[None]:
        """The retry module builds its run itself: one URL at a time (the model's interleavings are its
        own), and counted among the operation's runs."""
        op = self.world.op

        def build(min_interval: timedelta = DEFAULT_MIN_INTERVAL, **kw: Any) -> RunState:
            run = RunState(min_interval, calls=CallSlots(per_token=1), **kw)
            op.runs.append(run)
            watch.run = run
            return run

        real = retry_module.RunState
        retry_module.RunState = build  # type: ignore[misc,assignment]
        try:
            yield
        finally:
            retry_module.RunState = real  # type: ignore[misc]

    # ------------------------------------------------------------------ checks

    def raw_values(self) -> dict[tuple[str, str], UnresolvedValue]:
        """Every raw value the store keeps, by (token, field): on the tokens stored with some (only a
        new token's profile brings them)."""
        held: dict[tuple[str, str], UnresolvedValue] = {}
        for address in sorted({a for a, _ in self.raw_owner.values()}):
            doc = self.store.find_token(address)
            for v in doc.unresolved if doc is not None else ():
                held[(address, v.field)] = v
        return held

    def _check_request(self, url: str, request: RunIntent) -> None:
        """Every decision is made for the request of the run the model drives: live, reconcile, a retry
        as of its selection, naming the statuses the operator named (a late holder's is a live run)."""
        w = self.world
        kind = "live" if w.stale else w.op.kind
        why = WHY_OF.get(kind)
        if why is None:
            return
        named = w.op.named if why is Why.RETRY_NAMED else frozenset()
        watch = self.watch
        since = watch.selection.selected_at if why in (Why.RETRY, Why.RETRY_NAMED) and watch is not None else None
        if request.why is not why or request.named != named or (since is not None and request.since != since):
            w.violations.append(f"decide {url} in a {kind} run ({sorted(s.value for s in named)}, selected at "
                                f"{since}): made for {request}")

    def _watching_record_url(self, real: Callable[..., Any]) -> Callable[..., Any]:
        def record_url(token: Any, url: str, run: RunState, selected: Selected | None = None) -> Any:
            watch, w = self.watch, self.world
            if watch is not None and not w.stale and w.op.kind in ("retry", "named_retry"):
                address = _address(token)
                if not watch.tries:  # the selection's elements, as the selection saw them
                    want = watch.seen.get((address, url))
                    if want is not None and selected != want:
                        w.violations.append(f"{address} {url}: a retry judges it as {selected}, its selection "
                                            f"saw {want}")
                else:
                    last = watch.tries[-1]
                    if last.address == address and last.answer == url and run is watch.run:
                        last.recorded = True
            return real(token, url, run, selected)

        return record_url

    def check_retry_report(self, selection: Any, changed: int, watch: Watch, out: Any) -> None:
        """A retry's report: each URL whose lock was lost (reported so, or its write refused) counted
        lost; what it selected and did not record (cut short) counted remaining with what was past its
        limit; no raw value tried once it was cut short by its deadline or the loss of its job lock."""
        if out.skipped is not None:
            return
        w = self.world
        outcomes = [o for o in out.url_outcomes if isinstance(o, UrlOutcome)]
        lost = sum(1 for o in outcomes if o.lease_lost or o.status is EngineOutcome.LOST)
        if len(outcomes) == out.processed and out.lost != lost:
            w.violations.append(f"a retry reports {out.lost} URL(s) lost, {lost} of its URLs lost their lock")
        cut = len(selection.candidates) - changed - out.processed
        if out.remaining != selection.remaining + cut:
            w.violations.append(f"a retry reports {out.remaining} remaining: {selection.remaining} past its limit "
                                f"and {cut} selected but cut short")
        if cut > 0 and watch.tries:
            w.violations.append(f"a retry cut short ({out.stopped_by}) still tried raw values: {watch.tries}")

    def check_raw_values(self, watch: Watch, before: dict[tuple[str, str], UnresolvedValue], out: Any) -> None:
        """After a retry: the raw values due were tried, oldest first up to the limit, and each stored
        as its answer says; the others are untouched."""
        w = self.world
        selection = watch.selection
        after = self.raw_values()
        interval = timedelta(minutes=selection.min_interval_minutes)
        due_by = selection.selected_at - interval
        tried = {(t.address, t.field): t for t in watch.tries}
        if len(tried) != len(watch.tries):
            w.violations.append(f"a retry tried a raw value twice: {[(t.address, t.field) for t in watch.tries]}")
        counts = getattr(out, "unresolved", {}) or {}
        sure = not (out.skipped or set(counts) - {"resolved", "retrying", "dropped"}
                    or out.stopped_by in (retry_module.STOPPED_BY_DEADLINE, retry_module.STOPPED_BY_LOCK_LOST)
                    or self.deadline_passed)
        if out.skipped and watch.tries:
            w.violations.append(f"a retry that did not hold its job lock tried raw values: {watch.tries}")
        # Judged on the check times the store keeps (to the ms on Mongo), as its query judges them.
        if sure:
            due = sorted((k for k, v in before.items() if v.checked_at is None or v.checked_at <= due_by),
                         key=lambda k: (before[k].checked_at is not None, before[k].checked_at or due_by))
            for key in tried.keys() - set(due):
                w.violations.append(f"{key}: a raw value checked at {before[key].checked_at} tried by a retry selected "
                                    f"at {selection.selected_at} with interval {interval} (due by {due_by})")
            want = min(len(due), selection.limit)
            if len(tried) != want:
                w.violations.append(f"a retry limited to {selection.limit} tried {len(tried)} raw value(s) of "
                                    f"{len(due)} due: {sorted(tried)} of {due}")
            elif len(due) > want:
                def age(k: tuple[str, str]) -> tuple[bool, datetime]:
                    c = before[k].checked_at
                    return (c is not None, as_stored(c) if c is not None else due_by)
                newest_tried = max(age(k) for k in tried)
                left = [k for k in due if k not in tried and age(k) < newest_tried]
                if left:
                    w.violations.append(f"a retry limited to {selection.limit} tried {sorted(tried)}, but {left} "
                                        f"were due longer")
        budget = w.limits.max_attempts
        said = Counter("retrying" if t.answer == "transient" and before[k].attempts + 1 < budget else
                       "resolved" if t.answer not in ("transient", "gone") else "dropped"
                       for k, t in tried.items() if k in before)
        if sure and said != Counter(counts):
            w.violations.append(f"a retry reports its raw values as {counts}, its tries were {dict(said)}")
        for key, v in before.items():
            now = after.get(key)
            t = tried.get(key)
            if t is None:
                if now != v and sure:
                    w.violations.append(f"{key}: a raw value not tried changed from {v!r} to {now!r}")
                continue
            doc = self.store.find_token(key[0])
            holds = doc is not None and doc.element(t.answer) is not None
            if t.answer == "transient":
                if v.attempts + 1 >= budget:
                    if now is not None:
                        w.violations.append(f"{key}: still failing at attempt {v.attempts + 1} of {budget}, kept "
                                            f"({now!r})")
                elif now is None:
                    w.violations.append(f"{key}: still failing at attempt {v.attempts + 1} of {budget}, dropped")
                elif (now.attempts != v.attempts + 1 or now.checked_at is None
                      or not as_stored(selection.selected_at) <= now.checked_at <= t.at or now.value != v.value):
                    w.violations.append(f"{key}: still failing, kept as {now!r}; tried at {t.at} after "
                                        f"{v.attempts} attempt(s) (selected at {selection.selected_at})")
            elif now is not None:
                w.violations.append(f"{key}: the shortener answered {t.answer!r}, the value is kept ({now!r})")
            elif t.answer != "gone":
                el = doc.element(t.answer) if doc is not None else None
                if t.held is not None and t.held.status is FetchStatus.OK and (
                        el is None or (el.status, el.checked_at) != (t.held.status, t.held.checked_at)):
                    w.violations.append(f"{key}: resolved to {t.answer}, which the token held as ok at "
                                        f"{t.held.checked_at}; it became {el!r}")
                if not holds:
                    w.violations.append(f"{key}: resolved to {t.answer}, which the token does not hold")
                elif not t.recorded and sure:
                    w.violations.append(f"{key}: resolved to {t.answer}, not recorded by the retry's run")
        for key in after.keys() - before.keys():
            w.violations.append(f"{key}: a raw value appeared during a retry ({after[key]!r})")
        for key, t in tried.items():  # the model follows what the rules say of each try
            v = self.raw_model.pop(key, None)
            if v is not None and t.answer == "transient" and v.attempts + 1 < budget:
                kept = after.get(key)
                self.raw_model[key] = v.model_copy(update={"attempts": v.attempts + 1, "checked_at": (
                    kept.checked_at if kept is not None and kept.checked_at is not None else t.at)})

    @invariant()
    def raw_values_are_kept_as_the_model_follows_them(self) -> None:
        """The store keeps exactly the raw values the model follows: the profile's at the token's
        creation (their attempts and check time, to the millisecond every store keeps), then as each
        retry's tries left them; nothing else moves them."""
        held = {k: (v.value, v.attempts, v.checked_at and as_stored(v.checked_at)) for k, v in self.raw_values().items()}
        want = {k: (v.value, v.attempts, v.checked_at and as_stored(v.checked_at)) for k, v in self.raw_model.items()}
        assert held == want, f"the store keeps the raw values {held}, the model follows {want}"
