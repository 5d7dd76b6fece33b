"""SOCIAL_RECORDING_SPEND_BUDGETS: optional (no budget by default), per paid billing account, and a
clear error naming the bad value (docs/architecture.md, "Spend budgets")."""

from __future__ import annotations

import pytest

from social_recording.domain.spend import Budget
from social_recording.settings import SettingsError, load_settings

VAR = "SOCIAL_RECORDING_SPEND_BUDGETS"


def test_no_budget_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(VAR, raising=False)
    assert load_settings().budgets == {}


def test_budgets_per_paid_account(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VAR, '{"twitterapi": "500/day;10000/month", "urlscan": "200/day", "apify": "none"}')
    assert load_settings().budgets == {"twitterapi": Budget("twitterapi", 500, 10000),
                                       "urlscan": Budget("urlscan", per_day=200)}


@pytest.mark.parametrize(("raw", "named"), [
    ("garbage", "got 'garbage'"),
    ('{"twitterapi": "5x/day"}', "cannot read '5x/day'"),
    ('{"github": "10/day"}', "'github', which is not a paid billing account"),
    ('{"twitterapi": "-1/day"}', "cannot read '-1/day'"),
])
def test_a_bad_budget_is_an_error_naming_the_variable_and_the_value(
    monkeypatch: pytest.MonkeyPatch, raw: str, named: str
) -> None:
    monkeypatch.setenv(VAR, raw)
    with pytest.raises(SettingsError) as info:
        load_settings()
    assert VAR in str(info.value) and named in str(info.value)
