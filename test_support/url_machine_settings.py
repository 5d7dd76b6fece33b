"""The settings the model's engines run with, built as a deployment builds them (docs/operations.md,
"Settings" and "Spend budgets"; docs/architecture.md, "Settled numbers"): from what an operator writes,
as text (the attempts and the back-off as `SOCIAL_RECORDING_<NAME>` values, the spend budgets as the JSON
of `"<n>/day;<m>/month"` per paid account), read by the settings (`Settings`: its parsing, its budget
parser, its defaults for whatever is not written: the AF floor everywhere, every number on the defaults'
machine). The engines take the numbers these settings give; the model expects its own numbers, written
in the model (its limits, its budgets, the documented AF floor), so a default or a budget text read
wrongly fails the first decision, budget hold or window read that meets it.

A mixin of the model (test_support/url_machine_model.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

from social_recording.settings import Settings

AF_FLOOR = 3
"""The AF floor as docs/architecture.md gives it ("Settled numbers": 3 investors), the model's own:
tokens with this many AF investors are recorded, with one fewer they are not (the live sensor's threshold
and reconcile's floor)."""


def budget_text(per_day: int | None, per_month: int | None) -> str:
    """A budget as an operator writes it ("2/day;5/month"). A month's limit below the day's is refused as
    a typo (that day limit could never be reached), so a month of zero is written alone."""
    parts = [f"{per_day}/day"] if per_day is not None and (per_month is None or per_month >= per_day) else []
    parts += [] if per_month is None else [f"{per_month}/month"]
    return ";".join(parts) or "none"


class _Written(Settings):
    """The settings read from what is written alone: the test process's own environment (a developer's
    `SOCIAL_RECORDING_*`) never reaches the model's engines."""

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)


def deployment_settings(texts: Mapping[str, str]) -> Settings:
    """The settings a deployment with these values (by setting name, as text) runs with."""
    given: dict[str, Any] = dict(texts)
    return _Written(**given)


class SettingsRules:
    """The model's settings, from its limits and budgets written as text. Expects the model's `limits`
    (with `texts`: what an operator writes for them) and `per_month`."""

    limits: ClassVar[Any]
    per_month: ClassVar[Mapping[str, int]]

    def written_settings(self) -> dict[str, str]:
        """What the operator of this machine's deployment writes: its limits, and a budget per paid
        account naming its day and (on the machines that set one) its month."""
        from test_support.url_machine_model import SPEND_PER_DAY

        budgets = {a: budget_text(n, self.per_month.get(a)) for a, n in SPEND_PER_DAY.items()}
        return {**self.limits.texts, "spend_budgets": json.dumps(budgets)}

    def deployment_settings(self) -> Settings:
        return deployment_settings(self.written_settings())
