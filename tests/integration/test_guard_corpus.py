"""The guard corpus's CI subset (tests/guard_corpus/): every script's healthy run at its CI size and its
``ci: true`` faults, each run as a process and graded against its record (``make guard-corpus`` runs all).

A case must grade ``right``. The cases that the guard gets wrong today because of a bug named in issue 44
are ``xfail(strict=True)`` with the item: once the fix merges they pass, and strict turns the xfail
into a failure that says to drop the mark.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.guard_corpus._record import CLASSES, Case, Script, ci_cases, load
from tests.guard_corpus.grade import execute, grade

pytestmark = [pytest.mark.frameworks, pytest.mark.slow]

SCRIPTS = [ci_cases(s) for s in load(ci_subset=True)]

# measured on this branch's base (0091485), `python -m tests.guard_corpus --ci`
KNOWN: dict[str, str] = {
    "mnist/healthy": "issue 44 'What it must show' (<= 1 false alarm per 1,000 clean steps): Adadelta "
    "at lr 1.0 "
    "gets grad-spike warnings at steps 28, 45, 51 of a healthy run",
    "mnist/huge-input": "issue 44 item 6 (and the grad-spike false alarms of mnist/healthy before it): a "
    "finite huge input is told as an update spike naming a parameter, not the input",
    "word_language_model/healthy": "issue 44 item 2: the default configuration of word_language_model gets "
    "grad-spike warnings on a healthy run",
    "word_language_model/lr-ramp": "issue 44 items 2 and 6: grad-spike false alarms before the fault; an lr "
    "ramp 1 -> 1000 is never blamed on the learning rate",
    "paddle_vit/healthy": "issue 44 item 2: a LinearWarmup stepped per epoch is an update spike, 10 skips "
    "in a row stop the healthy run (GuardStopped at step 34)",
    "paddle_vit/loss-nan": "issue 44 items 2 and 6: the run stops on the per-epoch warm-up before the fault; "
    "a NaN made by the loss from finite outputs is not said",
    "nanogpt/lr-spike": "issue 44 item 1: the guard's skip under a GradScaler leaves the scaler unscaled; "
    "the next step raises 'unscale_() has already been called'",
    "mingpt_ddp/lr-spike": "issue 44 item 1: the guard's skip under a GradScaler crashes the next step "
    "(and items 4, 5: replay with the scale, of a DDP dump)",
    "ddp_torchrun/nan-batch-rank1": "issue 44 item 5: a DDP dump (module.-prefixed names) is refused by the "
    "documented entry's bare model",
}


def _params() -> list[object]:
    params: list[object] = []
    for script in SCRIPTS:
        for case in script.cases:
            marks = []
            if case.label in KNOWN:
                marks.append(pytest.mark.xfail(strict=True, reason=KNOWN[case.label]))
            params.append(pytest.param(script, case, id=case.label, marks=marks))
    return params


def test_the_ci_subset_covers_every_class_and_every_script() -> None:
    covered = {c for s in SCRIPTS for c in s.covers}
    assert covered == set(CLASSES), sorted(set(CLASSES) - covered)
    assert len(SCRIPTS) >= 12
    assert all(any(c.expect is None for c in s.cases) for s in SCRIPTS)  # every healthy run
    assert all(any(c.expect is not None for c in s.cases) for s in SCRIPTS)  # and one fault at least
    full = load()
    kinds = {c.fault.partition("@")[0] for s in full for c in s.cases if c.fault}
    assert kinds == {c.fault.partition("@")[0] for s in SCRIPTS for c in s.cases if c.fault}  # every kind
    assert all(sum(c.expect is not None for c in s.cases) >= 2 for s in full)  # >= 2 faults each
    assert all(c.steps >= 500 for s in full for c in s.cases if c.expect is None)  # own schedule


@pytest.mark.parametrize(("script", "case"), _params())
def test_case_grades_right(script: Script, case: Case, tmp_path: Path) -> None:
    graded = grade(script, case, execute(script, case, tmp_path))
    assert graded.grade == "right", f"{case.label}: {graded.grade}: {graded.detail}"
