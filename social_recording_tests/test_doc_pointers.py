"""Pointers into the documents stay true when a document is reorganised: every `docs/<file>.md,
"<section>"` or `README, "<section>"` written in code, configuration or a document names a file that
exists and a heading it has, every markdown link to a file of the repository resolves, and every
repository path a YAML comment names exists."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CODE_DIRS = ("social_recording", "social_recording_tests", "bench", "dev", "deploy", ".ci")
CODE_SUFFIXES = {".py", ".sh", ".yaml", ".yml", ".conf", ".toml", ".in"}
ROOT_FILES = ("Makefile", "Dockerfile", "dagster.yaml", "workspace.yaml", "docker-compose.yml",
              "docker-compose.test.yml", "pyproject.toml", ".env.example", ".ci/run")
YAML_FILES = ("dagster.yaml", "workspace.yaml", "docker-compose.yml", "docker-compose.test.yml")

# A document: README (the root's), or a path of the repository ending in .md. Not preceded by a quote
# or a path character, so `REPO / "README.md"` in code is no pointer.
DOCUMENT = r"(?<![\"'/\w.-])(README(?:\.md)?|(?:[\w.-]+/)+[\w.-]+\.md)"
# The section follows as `, "Section"`, ` ("Section")` or `("Section")`.
POINTER = re.compile(DOCUMENT + r"\)?(?:\s*,\s*|\s*\(\s*|\s+)[\"“]([^\"”\n]{2,100})[\"”]")
MARKDOWN_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
PATH_SUFFIXES = (".py", ".sh", ".yaml", ".yml", ".md", ".conf", ".toml", ".lock", ".json", ".in", ".txt")
GENERATED = ("secrets/", "build/")  # made by `make secrets` / `make helm-values`, not in the repository
PATH_ROOTS = ("deploy/", "docs/", "bench/", "dev/", "social_recording/", "social_recording_tests/")


def _documents() -> list[Path]:
    found = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted(REPO.glob("bench/*.md")),
             *sorted(REPO.glob("social_recording_tests/*.md")), *sorted(REPO.glob("social_recording/**/*.md"))]
    return [p for p in found if p.is_file()]


def _sources() -> list[Path]:
    found = {REPO / name for name in ROOT_FILES if (REPO / name).is_file()}
    for top in CODE_DIRS:
        found.update(p for p in (REPO / top).rglob("*")
                     if p.is_file() and p.suffix in CODE_SUFFIXES and "__pycache__" not in p.parts)
    found.discard(Path(__file__).resolve())  # its docstring shows the grammar with placeholders
    return sorted(found) + _documents()


def _flat(text: str) -> str:
    """The text with its line breaks gone, comment markers and indentation included, so a pointer
    wrapped over two comment or docstring lines reads as one."""
    return re.sub(r"[ \t]*\n[ \t]*(?:#+[ \t]*)?", " ", text)


def _headings(document: Path) -> set[str]:
    text = re.sub(r"(?ms)^```.*?^```", "", document.read_text(encoding="utf-8"))
    return {m.group(1).strip() for m in HEADING.finditer(text)}


def _pointers() -> Iterator[tuple[Path, str, str]]:
    for source in _sources():
        text = MARKDOWN_LINK.sub(r"\1", _flat(source.read_text(encoding="utf-8", errors="replace")))
        for match in POINTER.finditer(text):
            yield source, match.group(1), match.group(2)


def _target(name: str) -> Path:
    return REPO / ("README.md" if name == "README" else name)


def test_the_pointer_grammar_finds_the_pointers() -> None:
    """A check that finds nothing passes for nothing: the code's usual forms are all recognised."""
    found = {(source.relative_to(REPO).as_posix(), name, section) for source, name, section in _pointers()}
    assert ("social_recording/locks/outage.py", "docs/architecture.md", "Backend outages") in found
    assert (".ci/run", "README", "Set up and test") in found
    assert ("deploy/redis.conf", "docs/operations.md", "Redis persistence") in found
    assert ("social_recording/platforms/web/generator.py", "social_recording/platforms/web/README.md",
            "Submit failures") in found
    assert len(found) > 100


def test_every_pointer_names_a_document_and_a_section_it_has() -> None:
    broken = []
    for source, name, section in _pointers():
        document = _target(name)
        where = f"{source.relative_to(REPO)}: {name}, \"{section}\""
        if not document.is_file():
            broken.append(f"{where}: no such document")
        elif section not in _headings(document):
            broken.append(f"{where}: no such heading")
    assert not broken, "\n".join(sorted(set(broken)))


def test_every_repository_document_a_pointer_or_link_names_exists() -> None:
    """Bare document paths (`social_recording/platforms/x/README.md.`) and markdown links between
    documents, the latter relative to the document that holds them."""
    missing = []
    for source in _sources():
        text = source.read_text(encoding="utf-8", errors="replace")
        for match in re.finditer(DOCUMENT, text):
            name = match.group(1)
            if name.startswith(PATH_ROOTS) and not _target(name).is_file():
                missing.append(f"{source.relative_to(REPO)}: {name}")
        if source.suffix != ".md":
            continue
        for link in MARKDOWN_LINK.findall(text):
            if "://" in link or link.startswith(("#", "mailto:")):
                continue
            if not (source.parent / link.split("#", 1)[0]).exists():
                missing.append(f"{source.relative_to(REPO)}: link {link}")
    assert not missing, "\n".join(sorted(set(missing)))


def _yaml_files() -> list[Path]:
    return [*(REPO / name for name in YAML_FILES if (REPO / name).is_file()),
            *sorted((REPO / "deploy").rglob("*.yaml"))]


def _comment(line: str) -> str:
    stripped = line.lstrip()
    if stripped.startswith("#"):
        return stripped
    at = line.find(" #")
    return line[at:] if at >= 0 else ""


def test_every_path_a_yaml_comment_names_exists() -> None:
    missing = []
    for yaml_file in _yaml_files():
        for number, line in enumerate(yaml_file.read_text(encoding="utf-8").splitlines(), 1):
            for token in re.findall(r"[\w./$-]+", _comment(line)):
                token = token.rstrip(".,:;")
                if "://" in token or token.startswith(("/", "./", "$", *GENERATED)) or "/" not in token and "." not in token:
                    continue
                if not (token.endswith(PATH_SUFFIXES) or token.endswith("/") or token.startswith(PATH_ROOTS[:4])):
                    continue
                # A path is the repository's; a file name alone may also sit beside the YAML file.
                places = [REPO / token] if "/" in token else [REPO / token, yaml_file.parent / token]
                if not any(place.exists() for place in places):
                    missing.append(f"{yaml_file.relative_to(REPO)}:{number}: {token}")
    assert not missing, "\n".join(missing)
