"""Bands at any length: torch on CPU, 1 vs 2 threads and fp32 vs bf16 autocast, at 10, 100 and 1,000 steps.

Prints, per pair and length, the verdict of every workload, the onset difference (first
``Bands.window`` steps) and the largest later difference, with the margins to the edges:
1 vs 2 threads must stay ``equivalent`` and bf16 ``precision-drift`` at every length.
The full run measures 10 and 100 steps (three probe runs per length); the 1,000-step lengths of
docs/guides/probe.md take about a minute per probe run here: ask for them with
``ENVKIT_BENCH_BANDS_STEPS=10,100,1000``. ``ENVKIT_BENCH_BANDS_REPORTS=DIR`` keeps the reports
there and reuses them. (Own names: ``ENVKIT_BENCH_STEPS`` and ``ENVKIT_BENCH_REPORTS`` are other
benchmarks' counts.)
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from pathlib import Path
from typing import Any

from benchmarks._goals import knob
from envkit.comparison.bands import Bands, onset_max
from envkit.comparison.pairwise import compare_reports, rel_diff
from envkit.probe.model import ProbeReport
from envkit.probe.report import dump_report, load_report
from envkit.probe.runner import ProbeOptions, run_on_host

STEPS_ENV = "ENVKIT_BENCH_BANDS_STEPS"
DEFAULT_STEPS = "10,100"  # the full run; 1,000 steps on request (about a minute per probe run here)

# pair title -> (the first run's ProbeOptions fields, the second's, the band the pair must be in)
PAIRS: dict[str, tuple[dict[str, Any], dict[str, Any], str]] = {
    "1 vs 2 threads": ({"threads": 1}, {"threads": 2}, "equivalent"),
    "fp32 vs bf16 autocast": ({"threads": 1}, {"threads": 1, "autocast": "bf16"}, "precision-drift"),
}


def _report(folder: Path, steps: int, options: dict[str, Any]) -> ProbeReport:
    name = "-".join(f"{k}{v}" for k, v in sorted(options.items())) + f"-{steps}.json"
    path = folder / name
    if path.is_file():
        return load_report(path)
    opts = ProbeOptions(frameworks=("torch",), steps=steps, device="cpu", **options)
    report = run_on_host(opts, label=name)
    path.write_text(dump_report(report))
    return report


def _split(a: ProbeReport, b: ProbeReport, wl: str, bands: Bands) -> tuple[float, float]:
    """(onset max, later max) of the loss and grad norm differences of one workload."""
    ra, rb = a.frameworks["torch"].workloads[wl], b.frameworks["torch"].workloads[wl]
    diffs = [
        (sa.step, rel_diff(getattr(sa, m), getattr(sb, m)))
        for sa, sb in zip(ra.steps, rb.steps, strict=True)
        for m in ("loss", "grad_norm")
    ]
    late = max((d for s, d in diffs if s > bands.window), default=0.0)
    return onset_max(diffs, bands.window) or 0.0, late


def _times(what: str, edge: float, value: float, name: str) -> str:
    return f"{what} {edge / value:.0f}x below {name}" if value else f"{what} identical"


def main() -> None:
    if importlib.util.find_spec("torch") is None:
        print("skipped: torch is needed")
        return
    lengths = [int(s) for s in knob(STEPS_ENV, DEFAULT_STEPS, "6").split(",")]
    if os.environ.get(STEPS_ENV):
        note = f" ({STEPS_ENV})"
    else:
        note = f" (default; {STEPS_ENV}=10,100,1000 adds 1,000 steps: about a minute per probe run here)"
    print(f"   lengths: {', '.join(map(str, lengths))} steps{note}", flush=True)
    bands = Bands()
    keep = os.environ.get("ENVKIT_BENCH_BANDS_REPORTS")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for title, (ka, kb, expected) in PAIRS.items():
            for steps in lengths:
                a, b = _report(folder, steps, ka), _report(folder, steps, kb)
                result = compare_reports(a, b, bands)
                for wl in ("rnn", "bert"):
                    verdicts = {c.verdict for c in result.comparisons if c.workload == wl}
                    worst = max(verdicts, key=("identical", "equivalent", "precision-drift", "diverged",
                                               "invalid").index)  # fmt: skip
                    onset, late = _split(a, b, wl, bands)
                    if expected == "equivalent":
                        margin = _times("onset", bands.equivalent, onset, "the equivalent edge")
                        margin += ", " + _times("later", bands.drift, late, "the drift edge")
                    else:
                        margin = f"onset {onset / bands.equivalent:.0f}x above equivalent, "
                        margin += f"{bands.drift / max(onset, 1e-30):.1f}x below the drift edge"
                    flag = "ok" if worst in (expected, "identical") else f"WRONG (expected {expected})"
                    print(f"   {title:<22} {steps:>5} steps {wl:<5} {worst:<16} onset {onset:.1e} "
                          f"later {late:.1e}  {margin}  {flag}")  # fmt: skip
