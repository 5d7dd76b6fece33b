"""bench/unseen_mutants.py measures the model test against mutants it was not built against; a batch
whose lines moved would measure nothing (every mutant would fail to apply). These checks keep every
batch applicable and apart from the project's list without running the model (the measure itself is
a benchmark: bench/README.md)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import unseen_mutants  # type: ignore[import-not-found]  # noqa: E402

from test_support.mutants import MUTANTS, Mutant  # noqa: E402

PARTS = ("domain/url_machine.py", "domain/policy.py", "domain/dedupe.py", "recording/call_guard.py",
         "recording/spend_check.py", "store/write_refusal.py", "store/sqlite/url_write.py",
         "store/mongo/url_states.py", "store/mongo/url_write.py", "store/mongo/documents.py",
         "store/mongo/queries.py")


@pytest.mark.parametrize("batch", sorted(unseen_mutants.BATCHES))
def test_every_unseen_mutant_names_one_line_once(batch: str) -> None:
    mutants: dict[str, Mutant] = unseen_mutants.BATCHES[batch]
    for name, m in mutants.items():
        source = (REPO / m.path).read_text()
        assert source.count(m.original) == 1, f"{name}: {m.original!r} found {source.count(m.original)} times in {m.path}"
        assert m.mutant != m.original and m.store in ("sqlite", "mongomock"), name


def test_the_fresh_batch_is_new_and_spread_over_every_part_that_carries_a_rule() -> None:
    fresh: dict[str, Mutant] = unseen_mutants.FRESH
    assert len(fresh) >= 24, len(fresh)
    earlier = {(m.path, m.original, m.mutant) for m in [*MUTANTS.values(), *unseen_mutants.UNSEEN.values()]}
    assert not set(fresh) & (set(MUTANTS) | set(unseen_mutants.UNSEEN))
    assert not [n for n, m in fresh.items() if (m.path, m.original, m.mutant) in earlier]
    for part in PARTS:
        assert any(m.path.endswith(part) for m in fresh.values()), f"no fresh mutant of {part}"
    assert all(m.store == "mongomock" for m in fresh.values() if "/mongo/" in m.path)


def _mutated_source(m: Mutant) -> str:
    """The file `m` changes, with `m` applied and its whitespace squeezed out (one change, however written)."""
    return re.sub(r"\s+", "", (REPO / m.path).read_text().replace(m.original, m.mutant))


def test_the_fresh2_batch_repeats_no_earlier_mutant_and_covers_every_part() -> None:
    fresh2: dict[str, Mutant] = unseen_mutants.FRESH2
    assert len(fresh2) >= 40, len(fresh2)
    earlier = [*MUTANTS.values(), *unseen_mutants.UNSEEN.values(), *unseen_mutants.FRESH.values()]
    assert not set(fresh2) & (set(MUTANTS) | set(unseen_mutants.UNSEEN) | set(unseen_mutants.FRESH))
    # Not the same change written another way either: no fresh2 mutant yields the source an earlier one does.
    sources = {(m.path, _mutated_source(m)) for m in earlier if (REPO / m.path).read_text().count(m.original) == 1}
    assert not [n for n, m in fresh2.items() if (m.path, _mutated_source(m)) in sources]
    for part in PARTS:
        assert any(m.path.endswith(part) for m in fresh2.values()), f"no fresh2 mutant of {part}"
    assert all(m.store == "mongomock" for m in fresh2.values() if "/mongo/" in m.path)


def test_the_fresh3_batch_repeats_no_earlier_mutant_and_covers_every_part() -> None:
    fresh3: dict[str, Mutant] = unseen_mutants.FRESH3
    assert len(fresh3) >= 40, len(fresh3)
    earlier = [*MUTANTS.values(), *unseen_mutants.UNSEEN.values(), *unseen_mutants.FRESH.values(),
               *unseen_mutants.FRESH2.values()]
    assert not set(fresh3) & (set(MUTANTS) | set(unseen_mutants.UNSEEN) | set(unseen_mutants.FRESH)
                              | set(unseen_mutants.FRESH2))
    # Not the same change written another way either: no fresh3 mutant yields the source an earlier one does.
    sources = {(m.path, _mutated_source(m)) for m in earlier if (REPO / m.path).read_text().count(m.original) == 1}
    assert not [n for n, m in fresh3.items() if (m.path, _mutated_source(m)) in sources]
    for part in (*PARTS, "domain/spend.py", "recording/attempt.py", "store/sqlite/rows.py"):
        assert any(m.path.endswith(part) for m in fresh3.values()), f"no fresh3 mutant of {part}"
    assert all(m.store == "mongomock" for m in fresh3.values() if "/mongo/" in m.path)


ORDER = unseen_mutants.ORDER


@pytest.mark.parametrize("batch", ORDER[4:])
def test_a_later_batch_repeats_no_earlier_mutant(batch: str) -> None:
    assert set(ORDER) == set(unseen_mutants.BATCHES)
    mine: dict[str, Mutant] = unseen_mutants.BATCHES[batch]
    assert len(mine) >= 40, len(mine)
    earlier = [MUTANTS, *(unseen_mutants.BATCHES[b] for b in ORDER[:ORDER.index(batch)])]
    assert not set(mine) & set().union(*earlier)
    sources = {(m.path, _mutated_source(m)) for mutants in earlier for m in mutants.values()
               if (REPO / m.path).read_text().count(m.original) == 1}
    assert not [n for n, m in mine.items() if (m.path, _mutated_source(m)) in sources]
    assert all(m.store == "mongomock" for m in mine.values() if "/mongo/" in m.path)
