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


ABSURD = "9" * 5000


@pytest.mark.parametrize(("raw", "named"), [
    # json keeps the last of two keys: here that would silently mean "no budget"
    ('{"twitterapi": "2/day", "twitterapi": "none"}', "budget for 'twitterapi' given twice ('2/day', then 'none')"),
    ('{"twitterapi": "20/day;10/month"}', "budget for 'twitterapi': 10 paid requests per month is below 20 per day"),
    ('{"twitterapi": 5}', "budget for 'twitterapi' is the number 5; expected text such as '500/day;10000/month'"),
    ('{"apify": 1.5}', "budget for 'apify' is the number 1.5"),
    ('{"urlscan": null}', "budget for 'urlscan' is null (no value)"),
    ('{"urlscan": true}', "budget for 'urlscan' is true (a yes/no value)"),
    ('{"urlscan": ["5/day"]}', "budget for 'urlscan' is a JSON list"),
    ('["twitterapi"]', "expected a JSON object of account -> budget"),
    (f'{{"twitterapi": "{ABSURD}/day"}}', "budget for 'twitterapi': a 5000-digit number of paid requests per day"),
    (f'{{"twitterapi": {ABSURD}}}', "budget for 'twitterapi' is a 5000-digit number"),
])
def test_every_refusal_names_the_account_and_the_value_in_plain_words(
    monkeypatch: pytest.MonkeyPatch, raw: str, named: str
) -> None:
    monkeypatch.setenv(VAR, raw)
    with pytest.raises(SettingsError) as info:
        load_settings()
    message = str(info.value)
    assert VAR in message and named in message
    assert "Exceeds the limit" not in message and "valid string" not in message  # our words, not Python's
    assert len(message) < 600  # an absurd value is named, not echoed whole


def test_a_month_limit_equal_to_the_day_limit_and_a_twelve_digit_limit_are_accepted(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VAR, '{"twitterapi": "10/day;10/month", "urlscan": "999999999999/month"}')
    assert load_settings().budgets == {"twitterapi": Budget("twitterapi", 10, 10),
                                       "urlscan": Budget("urlscan", per_month=999999999999)}
