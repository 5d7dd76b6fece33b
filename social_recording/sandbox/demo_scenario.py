"""The bundled demo scenario, composed: `scenarios/demo_base.json` (the tokens the tracker shows, their
shortlinks) and each platform's part, `social_recording/platforms/<p>/demo.json` (its targets' scripted
outcomes, and tokens of its own when it needs some), in the catalogue's order. A platform brings its
demo part in its folder; `python -m social_recording.sandbox.demo_scenario` writes the composition to
`scenarios/demo.json`, the file every run reads, and social_recording_tests/sandbox/test_scenario.py
checks the file is the composition (docs/architecture.md, "The sandbox")."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from social_recording.domain.platform import Platform
from social_recording.platforms.catalogue import CATALOGUE
from social_recording.sandbox.scenario import DEMO_SCENARIO_PATH

BASE_PATH = DEMO_SCENARIO_PATH.with_name("demo_base.json")
PLATFORMS_DIR = Path(__file__).resolve().parent.parent / "platforms"
MERGED = ("redirects", "targets", "rate_limits")
"""The keyed parts of a fragment; `tokens` are appended; a key given twice is an error naming both files."""


def fragment_path(platform: Platform) -> Path:
    return PLATFORMS_DIR / platform.value / "demo.json"


def _read(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a demo fragment is a JSON object")
    unknown = sorted(set(data) - {"tokens", *MERGED})
    if unknown and path != BASE_PATH:
        raise ValueError(f"{path}: a demo fragment holds only tokens, {', '.join(MERGED)}; got {unknown}")
    return data


def composed() -> dict[str, Any]:
    """The base with every platform's fragment added, in the catalogue's order."""
    scenario = _read(BASE_PATH)
    origin: dict[tuple[str, str], Path] = {(part, key): BASE_PATH for part in MERGED for key in scenario.get(part, {})}
    for descriptor in CATALOGUE:
        path = fragment_path(descriptor.platform)
        if not path.is_file():
            continue
        fragment = _read(path)
        scenario.setdefault("tokens", []).extend(fragment.get("tokens", []))
        for part in MERGED:
            for key, value in fragment.get(part, {}).items():
                if (part, key) in origin:
                    raise ValueError(f"{path}: {part} {key!r} is given in {origin[(part, key)]} already")
                origin[(part, key)] = path
                scenario.setdefault(part, {})[key] = value
    return scenario


def composed_text() -> str:
    return json.dumps(composed(), indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    DEMO_SCENARIO_PATH.write_text(composed_text(), encoding="utf-8")
    print(f"wrote {DEMO_SCENARIO_PATH}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
