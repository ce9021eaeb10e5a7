"""Issue 33's pieces on their own: calibrated spikes, dump budgets, update spikes, the ledger, the page,
replay verdicts (non-deterministic code; only the differences that act on a CPU-only run)."""

from __future__ import annotations

import json
import math
import random
import statistics
from pathlib import Path
from typing import Any

import pytest

from envkit.errors import GuardError
from envkit.guard.checks import DumpBudget, rank_outliers
from envkit.guard.ledger import Ledger, LedgerEntry
from envkit.guard.records import IncidentKind, StepRecord
from envkit.guard.schedules import LrSetter
from envkit.guard.spikes import MAD_TO_SIGMA, RECENT, RECUR, RECUR_MARGIN, SpikeDetector
from envkit.guard.updates import UpdateTracker
from envkit.incident.page import read_steps, render_page


def reference(window: list[float], value: float, warmup: int, threshold: float, factor: float) -> bool:
    """The rule as written in spikes.py's docstring, with statistics.median over the window."""
    if len(window) < warmup:
        return False
    med = statistics.median(window)
    half = sorted(window[-(len(window) // 2) :])  # the spread above the median of the recent half
    level = statistics.median(half)
    mad = statistics.median(v - level for v in half[len(half) // 2 :])
    spread = MAD_TO_SIGMA * mad if mad > 0 else abs(med) * 1e-3 + 1e-12
    recent = factor * statistics.median(window[-RECENT:])  # and the last RECENT values' median
    recurs = sum(v * RECUR_MARGIN >= value for v in window) >= RECUR  # the run's own pattern
    return value > max(med + threshold * spread, factor * med, recent) and not recurs


@pytest.mark.parametrize("factor", [1.0, 1.5, 4.0])
@pytest.mark.parametrize("seed", range(4))
def test_the_sorted_window_decides_as_the_reference(factor: float, seed: int) -> None:
    """The O(1) median and the skipped MAD change no decision (heavy tails, ties, negatives, NaN)."""
    rng = random.Random(seed)
    d = SpikeDetector(window=30, warmup=8, threshold=6.0, factor=factor)
    window: list[float] = []
    for i in range(600):
        kind = rng.random()
        value = (
            math.nan
            if kind < 0.02
            else rng.choice([1.0, 2.0])
            if kind < 0.1
            else -rng.lognormvariate(0, 1)
            if seed == 3
            else rng.lognormvariate(0, 1) * (20 if kind > 0.98 else 1)
        )
        want = math.isfinite(value) and reference(window, value, 8, 6.0, factor)
        assert (d.check(value) is not None) == want, (i, value)
        if math.isfinite(value):
            window = [*window, value][-30:]


def test_the_factor_spares_heavy_tailed_healthy_norms() -> None:
    """A norm 8 σ above the median but only 2.4× it (seen in clean nanoGPT runs) is no spike at 4×."""
    d4, d1 = SpikeDetector(100, 20, 6.0, 4.0), SpikeDetector(100, 20, 6.0)
    for v in [1.0 + 0.02 * math.sin(i) for i in range(50)]:
        d4.check(v)
        d1.check(v)
    assert d1.check(2.4) is not None and d4.check(2.4) is None
    assert d4.check(4.5) is not None


def test_bad_factor_refused() -> None:
    with pytest.raises(ValueError, match="factor"):
        SpikeDetector(10, 5, 6.0, 0.5)


def test_warnings_never_starve_incidents() -> None:
    """Five false spikes, then a NaN: the NaN still gets its dump (issue 33's max_dumps=5 case)."""
    budget = DumpBudget(per_kind=5, per_warning=2)
    spikes = [budget.take(IncidentKind.GRAD_SPIKE) for _ in range(5)]
    assert spikes == [True, True, False, False, False]
    assert budget.take(IncidentKind.NONFINITE_GRAD) and budget.take(IncidentKind.UPDATE_SPIKE)
    assert [budget.take(IncidentKind.NONFINITE_LOSS) for _ in range(6)] == [True] * 5 + [False]
    assert budget.total == 2 + 1 + 1 + 5


def test_rank_outliers() -> None:
    assert rank_outliers([1.0, 1.0, 1.0]) is None and rank_outliers([2.0]) is None
    assert rank_outliers([1.0, 1.0, 1.5]) == "2"
    assert rank_outliers([1.0, 1.5]) == "0,1"  # no majority: every rank


def _rec(step: int, lr: float, ratio: float) -> StepRecord:
    return StepRecord(step, 1.0, 1.0, lrs=[lr], update_ratios=[ratio])


def test_an_lr_warmup_never_trips_and_a_5000x_lr_does() -> None:
    t = UpdateTracker(10.0, warmup=5)
    for i in range(30):  # lr from 1e-5 to 1e-3 in 30 steps: each at most 1.2× the largest before
        lr = 1e-5 * (100 ** (i / 29))
        assert t.spike(_rec(i, lr, lr * 0.3), lambda: LrSetter.NONE) is None
    found = t.spike(_rec(30, 5.0, 5.0 * 0.3), lambda: LrSetter.NONE)
    assert found is not None and found.message.startswith("the update was 5,000× larger than any before")
    assert "the learning rate is 5, 5,000× the largest before (0.001)" in found.message
    assert (
        t.spike(_rec(31, 1e-3, 3e-4), lambda: LrSetter.NONE) is None
    )  # the skipped step did not join the history
    assert t.context(_rec(31, 1e-3, 3e-4))["largest_before"]["lrs"] == [pytest.approx(1e-3)]


def test_update_ratios_from_the_group_norms() -> None:
    t = UpdateTracker(10.0, 5)
    rec = StepRecord(0, 1.0, 4.0)
    t.record(rec, [0.1, 0.2], [3.0, 1.0, 6.0, 0.0], clip=2.0)  # grad norms 3, 1; weights 6, 0
    assert rec.lrs == [0.1, 0.2]
    assert rec.update_ratios is not None
    assert rec.update_ratios[0] == pytest.approx(0.1 * (2.0 / 4.0) * 3.0 / 6.0, rel=1e-5)
    assert rec.update_ratios[1] == math.inf
    bare = StepRecord(0, 1.0, 1.0)
    t.record(bare, [0.1], [], clip=None)  # a framework without group norms: the lr only
    assert bare.lrs == [0.1] and bare.update_ratios is None


def test_the_ledger_appends_and_finds(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    first = Ledger(path)
    assert first.find(3, lambda: "d") is None
    first.add(LedgerEntry(3, "nonfinite-grad", "aa" * 32, "run-1"))
    first.add(LedgerEntry(9, "error", None, "run-1"))
    again = Ledger(path)
    assert again.find(3, lambda: "aa" * 32) == (again.entries[0], "step and digest")
    assert again.find(3, lambda: "bb" * 32) == (again.entries[0], "step")  # other tensors there
    assert again.find(7, lambda: "aa" * 32) == (again.entries[0], "digest")  # a reshuffled loader
    assert again.find(9, lambda: None) == (again.entries[1], "step")
    assert again.find(8, lambda: "cc" * 32) is None
    assert Ledger(path, "off").find(3, lambda: "aa" * 32) is None


def test_a_torn_last_line_is_tolerated_an_edited_one_refused(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    row = json.dumps({"step": 1, "kind": "error", "digest": None, "run": "r"})
    path.write_text(row + '\n{"step": 2, "ki')  # killed mid-append
    assert [e.step for e in Ledger(path).entries] == [1]
    for bad in ('{"step": "x"}', "[1, 2]", '{"kind": "error"}', '{"step": 1, "kind": "e", "digest": 5}'):
        path.write_text(bad + "\n" + row + "\n")
        with pytest.raises(GuardError, match="ledger"):
            Ledger(path)
    with pytest.raises(GuardError, match="skip, replay or off"):
        Ledger(path, "sometimes")


def _summary(run: Path, incidents: list[dict[str, Any]]) -> dict[str, Any]:
    return {"run": str(run), "steps": 3, "skipped": 1, "overflows": 0, "clipped_steps": 0,
            "incidents": incidents}  # fmt: skip


def test_the_page_marks_incidents_and_escapes_everything(tmp_path: Path) -> None:
    rows = [
        StepRecord(0, 2.0, 1.0, lrs=[1e-3, 1e-3], update_ratios=[1e-4, 2e-5]).to_json(),
        StepRecord(1, math.nan, math.nan, lrs=[1e-3, 1e-3]).to_json(),
        StepRecord(2, 1.5, 0.8, lrs=[1e-3, 1e-3], update_ratios=[1e-4, 2e-5]).to_json(),
    ]
    (tmp_path / "steps.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"step": 3, "lo')
    steps = read_steps(tmp_path)
    assert (steps.rows, steps.first, steps.last, steps.torn) == (3, 0, 2, 1)
    hostile = "<script>alert(1)</script>"
    page = render_page(
        _summary(tmp_path, [{"step": 1, "kind": "nonfinite-loss", "action": "skipped", "message": hostile}]),
        steps,
        lambda inc: [f"explained {hostile}"],
    )
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert page.count(">#1</text>") == 4  # the incident on each of the four curves
    assert "update ratio lr·|grad|/|weight|" in page and "group 1" in page
    assert "explained &lt;script&gt;" in page


def test_a_page_of_a_run_without_lr_or_update_says_so(tmp_path: Path) -> None:
    (tmp_path / "steps.jsonl").write_text(json.dumps(StepRecord(0, 1.0, 1.0).to_json()) + "\n")
    page = render_page(_summary(tmp_path, []), read_steps(tmp_path), lambda inc: [])
    assert page.count("not recorded") == 2 and "<p>none</p>" in page


def test_a_cpu_only_replay_ranks_the_thread_count_not_tf32(tmp_path: Path) -> None:
    """Recorded with 2 threads (and nanoGPT's TF32 switches on), replayed with 1: the threads lead;
    TF32 and cuDNN switches cannot move a CPU-only step and are not ranked at all."""
    pytest.importorskip("torch")
    from envkit.guard import example
    from envkit.guard.dump import read_dump, write_manifest
    from envkit.guard.localize import Replay
    from envkit.incident.replay import judge, side_report

    run = tmp_path / "run"
    example.train(run, bad_at=3)
    dump = run / "incidents" / "step-3"
    env = json.loads((dump / "env.json").read_text())
    here = json.loads(json.dumps(env))
    switches = env["info"]["switches"]
    switches.update({"num_threads": 2, "cuda.matmul.allow_tf32": True, "cudnn.allow_tf32": True})
    (dump / "env.json").write_text(json.dumps(env))
    manifest = json.loads((dump / "manifest.json").read_text())
    manifest.pop("files")
    manifest["outcome"] = {"loss": 1.25, "grad_norm": 2.5}  # the recording host's numbers
    write_manifest(dump, manifest)
    here["info"]["switches"]["num_threads"] = 1
    runs = [Replay(1.5, 2.75), Replay(1.5, 2.75)]
    verdict = judge(read_dump(dump), runs, lambda fw: side_report(here, "this host"))
    assert verdict.verdict == "environment"
    kinds = [c["kind"] for c in verdict.causes]
    assert kinds[0] == "threads" and "tf32" not in kinds, verdict.causes
    assert not any("cudnn" in c["message"] or "TF32" in c["message"] for c in verdict.causes)
    gpu_here = json.loads(json.dumps(here))
    gpu_here["info"]["cuda_available"] = True  # one side with a GPU: TF32 may act, ranked first
    on_gpu = judge(read_dump(dump), runs, lambda fw: side_report(gpu_here, "a GPU host"))
    assert on_gpu.causes[0]["kind"] == "tf32"
