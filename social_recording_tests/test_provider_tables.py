"""The tables about providers outside the code are checked against the descriptors: docs/operations.md's
"Providers" table and "Configuration" rows, and .env.example's provider keys."""

from __future__ import annotations

import re
from pathlib import Path

from social_recording.domain.platform import Rate
from social_recording.platforms.catalogue import CATALOGUE

ROOT = Path(__file__).resolve().parent.parent
OPERATIONS = ROOT / "docs" / "operations.md"
UNITS = {1: "second", 60: "minute", 3600: "hour", 86_400: "day"}


def _rate(rates: tuple[Rate, ...]) -> str:
    return "; ".join(f"{r.requests:,}/{UNITS[r.per_seconds]}" for r in rates) or "—"


def providers_table() -> str:
    """docs/operations.md's "Providers" table, as the descriptors say it."""
    rows = ["| platform | provider account | paid | key | documented rate | calls at once per run |",
            "|---|---|---|---|---|---|"]
    for d in CATALOGUE:
        account = d.account
        key = "—" if account.key_variable is None else f"`{account.key_variable}`" + (
            " (optional)" if account.key_optional else "")
        rate = _rate(account.rates)
        if account.rates_without_key is not None:
            rate += f" ({_rate(account.rates_without_key)} without the key)"
        rows.append(f"| {d.platform.value} | {', '.join(a.name for a in d.accounts)} | {'yes' if d.paid else 'no'} "
                    f"| {key} | {rate} | {account.concurrency} |")
    return "\n".join(rows)


def test_operations_providers_table_is_the_descriptors() -> None:
    readme = OPERATIONS.read_text(encoding="utf-8")
    found = re.search(r"<!-- providers: generated from the descriptors -->\n(.*?)\n<!-- /providers -->", readme, re.S)
    assert found is not None, "docs/operations.md lost its Providers table markers"
    assert found.group(1) == providers_table(), "docs/operations.md's Providers table drifted; paste:\n" + providers_table()


def test_operations_configuration_rows_name_every_key_and_every_paid_platform() -> None:
    readme = OPERATIONS.read_text(encoding="utf-8")
    keys = ", ".join(f"`{v}`" for v in CATALOGUE.key_variables())
    assert f"\n| {keys} | — | provider keys" in readme
    paid = ", ".join(d.platform.value for d in CATALOGUE if d.paid)
    assert f"allow paid platforms ({paid}:" in readme


def test_compose_reads_exactly_the_provider_keys_from_secret_files() -> None:
    """A provider key is a secret file, never an environment value: compose declares one secret per
    key the descriptors name and hands the code server each as `<KEY>_FILE`; .env.example names none."""
    compose = (ROOT / "docker-compose.yml").read_text(encoding="utf-8")
    declared = re.findall(r"^  ([a-z0-9_]+):\n    file: \$\{SECRETS_DIR:-\./secrets\}/\1$", compose, re.M)
    passed = re.findall(r"^      ([A-Z0-9_]+)_FILE: /run/secrets/([a-z0-9_]+)$", compose, re.M)
    for key in CATALOGUE.key_variables():
        assert key.lower() in declared, f"no secret file declared for {key}"
        assert (key, key.lower()) in passed, f"{key} is not handed to the code server as {key}_FILE"
    env_example = (ROOT / ".env.example").read_text(encoding="utf-8")
    assert not [k for k in CATALOGUE.key_variables() if re.search(rf"^{k}=", env_example, re.M)]
