"""The lists about platforms and providers outside the code are checked against the catalogue, each
failure naming the file and the line to write: docs/operations.md's "Providers" table and
"Configuration" rows, README.md's platform list, docker-compose.yml's secret files and the code
server's `*_FILE` variables, deploy/make-secrets.sh's empty key files, and .env.example (no key).
The lists inside the tests and test_support are read from the catalogue itself."""

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
    assert f"\n| {keys} | — | provider keys" in readme, (
        f"docs/operations.md, \"Configuration\": the provider keys' row must start `| {keys} | — | provider keys`")
    paid = ", ".join(d.platform.value for d in CATALOGUE if d.paid)
    assert f"allow paid platforms ({paid}:" in readme, (
        f"docs/operations.md, \"Configuration\": SOCIAL_RECORDING_ENABLE_PAID's row must say `allow paid platforms ({paid}:`")


def test_readme_names_every_platform_in_the_catalogue_order() -> None:
    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    names = ", ".join(d.display_name for d in CATALOGUE)
    assert f"follows each social link ({names})" in text, (
        f"README.md, first paragraph: write `follows each social link ({names})`")


def test_make_secrets_creates_an_empty_file_for_every_provider_key() -> None:
    script = (ROOT / "deploy" / "make-secrets.sh").read_text(encoding="utf-8")
    found = re.search(r"^for name in ((?:[^;]|\\\n)*?); do$", script, re.M)
    assert found is not None, "deploy/make-secrets.sh lost its `for name in ...; do` line of empty files"
    names = found.group(1).replace("\\\n", " ").split()
    missing = [key.lower() for key in CATALOGUE.key_variables() if key.lower() not in names]
    assert missing == [], f"deploy/make-secrets.sh: add {' '.join(missing)} to the `for name in ...` line"


def test_compose_reads_exactly_the_provider_keys_from_secret_files() -> None:
    """A provider key is a secret file, never an environment value: compose declares one secret per
    key the descriptors name and hands the code server each as `<KEY>_FILE`; .env.example names none."""
    compose = (ROOT / "docker-compose.yml").read_text(encoding="utf-8")
    declared = re.findall(r"^  ([a-z0-9_]+):\n    file: \$\{SECRETS_DIR:-\./secrets\}/\1$", compose, re.M)
    passed = re.findall(r"^      ([A-Z0-9_]+)_FILE: /run/secrets/([a-z0-9_]+)$", compose, re.M)
    listed = re.search(r"^    secrets: \[(dagster_postgres_password, store_url, lock_url, tracker_api_key[^\]]*)\]", compose, re.M)
    assert listed is not None, "docker-compose.yml: the code server's `secrets: [...]` list is missing"
    for key in CATALOGUE.key_variables():
        name = key.lower()
        assert name in declared, (f"docker-compose.yml, top-level `secrets:`: add `  {name}:` and "
                                  f"`    file: ${{SECRETS_DIR:-./secrets}}/{name}`")
        assert (key, name) in passed, (f"docker-compose.yml, the user_code service's `environment:`: add "
                                       f"`      {key}_FILE: /run/secrets/{name}`")
        assert name in re.split(r"[\s,]+", listed.group(1)), (
            f"docker-compose.yml, the user_code service's `secrets: [...]`: add {name}")
    env_example = (ROOT / ".env.example").read_text(encoding="utf-8")
    assert not [k for k in CATALOGUE.key_variables() if re.search(rf"^{k}=", env_example, re.M)], (
        ".env.example: a provider key is a secret file (secrets/<key>), never a variable here")
