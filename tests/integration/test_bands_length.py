"""Bands that hold at any --steps, on real CPU torch: 1 vs 2 threads stays ``equivalent`` at 10 and 100
steps (1,000 steps: ``ENVKIT_BENCH_BANDS_STEPS=10,100,1000 python -m benchmarks bands``, minutes), and
the device is recorded (``--device auto`` resolves to CPU here).
"""

from __future__ import annotations

import importlib.util

import pytest

from envkit.comparison.pairwise import compare_reports
from envkit.probe.runner import ProbeOptions, run_on_host

pytestmark = [
    pytest.mark.frameworks,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch"),
]


@pytest.mark.parametrize("steps", [10, 100])
def test_one_vs_two_threads_stays_equivalent(steps: int) -> None:
    runs = [
        run_on_host(
            ProbeOptions(frameworks=("torch",), workloads=("bert",), steps=steps, threads=n), label=f"t{n}"
        )
        for n in (1, 2)
    ]
    result = compare_reports(runs[0], runs[1])
    assert result.verdict == "equivalent", [(c.metric, c.verdict, c.max_rel_diff) for c in result.comparisons]
    assert result.causes[0].kind == "threads"
    assert runs[0].config.get("device") == "cpu" and runs[0].config.get("device_requested") == "auto"
    assert runs[0].to_json()["frameworks"]["torch"]["device"] == "cpu"  # type: ignore[index]
