"""A platform's own test cases, kept in its folder (`social_recording/platforms/<p>/cases.json`): its
contract case (the successful answer test_contract.py replays) and its behaviour cases (URL -> the
requests it makes -> the graph or the error), each answer a recorded fixture of the folder or a
status with a JSON body. A platform added with its folder brings its tests without editing this tree
(docs/architecture.md, "Providers in one place")."""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from social_recording.domain.platform import Platform
from social_recording.platforms.catalogue import CATALOGUE

PLATFORMS_DIR = Path(__file__).resolve().parents[2] / "social_recording" / "platforms"

Answer = str | dict[str, Any]
"""A fixture file of the platform's folder (a recorded answer's wrapper, `{"status", "headers",
"body_text"}`, as its fixtures/SOURCES.md says; else the body as written: JSON, or an `.html` page), or
`{"status", "json", "headers"?}`. Answers are keyed by request path, or a pattern of paths (`*` for any
part, `fnmatch`), the exact path first."""


@dataclass(frozen=True)
class FolderCases:
    platform: Platform
    folder: Path
    contract: dict[str, Any] | None
    cases: list[dict[str, Any]]

    def response(self, answer: Answer) -> httpx.Response:
        if isinstance(answer, dict):
            return httpx.Response(int(answer["status"]), json=answer.get("json"), headers=answer.get("headers") or {})
        text = (self.folder / answer).read_text(encoding="utf-8")
        if answer.endswith(".html"):
            return httpx.Response(200, text=text, headers={"content-type": "text/html; charset=utf-8"})
        record = json.loads(text)
        if not isinstance(record, dict) or "body_text" not in record:  # a body written by us
            return httpx.Response(200, content=text.encode("utf-8"), headers={"content-type": "application/json"})
        headers = {k: v for k, v in (record.get("headers") or {}).items()
                   if k.lower() not in ("content-length", "transfer-encoding", "content-encoding", "connection")}
        return httpx.Response(int(record.get("status") or 200), content=str(record["body_text"]).encode("utf-8"),
                              headers=headers)

    def handler(self, answers: dict[str, Answer]) -> Any:
        """Answers by request path; a path no answer names gets a 404 (the test then fails on it)."""

        def handle(request: httpx.Request) -> httpx.Response:
            path = request.url.path
            answer = answers.get(path)
            if answer is None:
                answer = next((a for pattern, a in answers.items() if fnmatch.fnmatchcase(path, pattern)), None)
            if answer is None:
                return httpx.Response(404, json={"error": f"no answer scripted for {request.url.path}"})
            return self.response(answer)

        return handle


def folder_cases() -> list[FolderCases]:
    """Every platform of the catalogue whose folder has a cases.json."""
    found = []
    for descriptor in CATALOGUE:
        folder = PLATFORMS_DIR / descriptor.platform.value
        path = folder / "cases.json"
        if path.is_file():
            data = json.loads(path.read_text(encoding="utf-8"))
            found.append(FolderCases(descriptor.platform, folder, data.get("contract"), list(data.get("cases", []))))
    return found
