"""The model's walks of a URL lease over time and a write decided again (test_support/url_machine_lease.py):
a paid and a free URL's lease held through a call of four TTLs, its renewals answered, failing once,
or failing until its expiry (from the first, or after two landed); a worker meeting a URL's lock another worker holds (each after a failed
call, so the URL is called again); a reuse (a write
without a call) and a call's write each meeting a late holder's write. Listed among the model's walks
(test_support/url_machine_walks.py)."""

from __future__ import annotations

from collections.abc import Callable

from test_support.url_machine_lease import RENEWALS
from test_support.url_machine_model import POOL, UrlRules
from test_support.url_machine_steps import Draws, Steps, recorded_live

X, _, WEB, _, TG = POOL


def _failed_once(m: UrlRules, url: str) -> list[Callable[[], object]]:
    """Two tokens of `url`, the first's call of it failed; the provider answers again, its back-off passed."""
    return [lambda: m.some_tokens_and_answers([[url], [url]], {url: "5xx"}), recorded_live(m, "T000"),
            lambda: m.provider_changes(url, "ok"), lambda: m.clock_moves(61)]


def _held_through_a_long_call(how: str, url: str) -> Steps:
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        return [*_failed_once(m, url),
                lambda: m.a_lease_is_held_through_a_long_call(
                    Draws(lambda c: c == ("T000", url)), how, 4.0),  # type: ignore[arg-type]
                recorded_live(m, "T001")]
    return steps


def _a_second_worker(url: str, hold: float) -> Steps:
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        return [*_failed_once(m, url),
                lambda: m.a_second_worker_meets_a_urls_lock(Draws(lambda c: c == ("T000", url)), hold)]  # type: ignore[arg-type]
    return steps


def _a_write_meets_a_late_write(url: str, reuse: bool) -> Steps:
    """Two tokens of `url` failed (the second adopting the first's failure in its back-off); with
    `reuse` the first's call then answers: a new token's write without a call (a reuse of that answer,
    or an adoption of the back-off) meets a late write of the second token."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        answered = [lambda: m.provider_changes(url, "ok"), lambda: m.clock_moves(61), recorded_live(m, "T000")]
        return [lambda: m.some_tokens_and_answers([[url], [url]], {url: "5xx"}), recorded_live(m, "T000"),
                recorded_live(m, "T001"), *(answered if reuse else []),
                lambda: m.a_write_meets_a_late_write(Draws(lambda u: u == url), "ok")]  # type: ignore[arg-type]
    return steps


LEASE_WALKS: tuple[tuple[str, Steps], ...] = (
    *((f"a paid URL's lease held through a long call, {how}", _held_through_a_long_call(how, X))
      for how in RENEWALS),
    ("a free URL's lease held through a long call, renewed", _held_through_a_long_call("renewed", TG)),
    ("a worker meets a paid URL's lock held by another", _a_second_worker(X, 5.0)),
    ("a worker meets a free URL's lock held by another", _a_second_worker(TG, 40.0)),
    ("a reuse meets a late write", _a_write_meets_a_late_write(TG, True)),
    ("a reuse of a paid answer meets a late write", _a_write_meets_a_late_write(X, True)),
    ("an adoption of a back-off meets a late write", _a_write_meets_a_late_write(TG, False)),
)
"""(name, steps) of each walk."""
