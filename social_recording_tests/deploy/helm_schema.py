"""Check deploy/helm/values.yaml against the Dagster chart's own values.schema.json.

Helm validates the chart's defaults merged with the override file; the override alone lacks the keys
the defaults supply. So `required` is not checked here, everything else is: every key we set must be
one the chart declares (its `additionalProperties: false` objects), with the declared type, enum or
const. The chart's schema points at Kubernetes' definitions by remote URL; with no network those
references are dropped, so Kubernetes objects inside (resources, probes) are checked only as far as
the chart's own schema describes them.

    helm pull dagster/dagster --repo https://dagster-io.github.io/helm --version 1.13.27 --untar
    python -m social_recording_tests.deploy.helm_schema dagster/values.schema.json
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import yaml

VALUES_FILE = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "values.yaml"

def _ignore_required(validator: Any, required: Any, instance: Any, schema: Any) -> Iterator[Any]:
    return iter(())


OverrideValidator = jsonschema.validators.extend(jsonschema.Draft7Validator, {"required": _ignore_required})
"""Draft 7 without `required` (an override is checked before the chart's defaults are merged in)."""


def _without_remote_refs(node: Any) -> Any:
    """`schema` with every `$ref` to another document dropped (the rest of that node still applies)."""
    if isinstance(node, dict):
        return {k: _without_remote_refs(v) for k, v in node.items()
                if not (k == "$ref" and isinstance(v, str) and not v.startswith("#"))}
    if isinstance(node, list):
        return [_without_remote_refs(v) for v in node]
    return node


def override_errors(values: Mapping[str, Any], schema: Mapping[str, Any]) -> Iterator[str]:
    """Each place where `values` breaks `schema`, as `path: message`."""
    validator = OverrideValidator(_without_remote_refs(schema))
    for error in sorted(validator.iter_errors(values), key=lambda e: list(e.absolute_path)):
        yield f"{'/'.join(map(str, error.absolute_path)) or '(top)'}: {error.message}"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 64
    errors = list(override_errors(yaml.safe_load(VALUES_FILE.read_text()), json.loads(Path(argv[0]).read_text())))
    for line in errors:
        print(line)
    print(f"{VALUES_FILE}: {'valid' if not errors else f'{len(errors)} error(s)'} against {argv[0]}")
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
