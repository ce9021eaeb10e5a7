"""The inventory half of the real-world corpus (issue 34): every file at least at its recorded level.

``tests/corpus/inventory/<kind>/`` holds real environment listings (collect_env from Jetson, Windows,
WSL, macOS, ROCm, GH200; conda list in every layout, explicit files, env export, pip freeze and pip
list, conda-lock, pixi.lock, poetry.lock, pylock, uv.lock, torch/detectron2 tables) with the facts read
by hand before envkit ran. ``make fidelity`` prints the same grades per class and per kind.
"""

from __future__ import annotations

from collections import Counter

import pytest

from tests.corpus._record import LEVELS, Graded, records
from tests.corpus.grade_inventory import grade_all


@pytest.fixture(scope="module")
def graded() -> list[Graded]:
    return grade_all()


def test_the_corpus_is_real_and_recorded() -> None:
    found = list(records("inventory"))
    assert len(found) >= 90
    for record in found:
        assert record.level in LEVELS, record.path
        # where it was found: a repository, an issue address, or (a search index hit that named neither)
        # the index's file id and where in the file the excerpt is
        source = record.source
        assert source.get("repo") or source.get("url") or source.get("file_id"), record.path
        assert record.expected, record.path
        if record.level not in ("exact",) and record.expected.get("refuse") is None:
            assert record.disagreement, f"{record.path}: a {record.level} file says which side is wrong"
    kinds = Counter(r.kind for r in found)
    for kind in ("collect-env", "conda-list", "conda-explicit", "env-export", "pip-freeze", "pip-list"):
        assert kinds[kind] >= 2, kind
    for kind in ("conda-lock", "pixi-lock", "uv-lock", "pylock", "poetry-lock"):
        assert kinds[kind] >= 1, kind


def test_no_file_crashes_a_reader(graded: list[Graded]) -> None:
    assert [g.record.path.name for g in graded if g.level == "crash"] == []


def test_every_file_is_at_least_at_its_recorded_level(graded: list[Graded]) -> None:
    regressed = [
        f"{g.record.path.name}: {g.record.level} -> {g.level} ({g.detail})" for g in graded if g.regressed
    ]
    assert regressed == []


def test_exact_or_minor_for_at_least_95_percent(graded: list[Graded]) -> None:
    good = sum(g.level in ("exact", "minor") for g in graded)
    assert good / len(graded) >= 0.95, f"{good}/{len(graded)}"


def test_no_wrong_reading(graded: list[Graded]) -> None:
    """A confident wrong answer is worse than a refusal: none left on the corpus."""
    assert [f"{g.record.path.name}: {g.detail}" for g in graded if g.level == "wrong"] == []
