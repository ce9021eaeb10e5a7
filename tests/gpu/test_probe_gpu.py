"""The probe bands on a real NVIDIA GPU (`make gpu-check`, under 3 minutes; skipped without a GPU).

torch only (the GPU wheel of paddle is rarely beside it); bert and rnn, 10 steps each run.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from envkit.probe.compare import compare_reports
from envkit.probe.runner import ProbeOptions, run_on_host

pytestmark = pytest.mark.gpu

Report = dict[str, Any]


@pytest.fixture(scope="module")
def probe() -> Callable[..., Report]:
    cache: dict[str, Report] = {}

    def run(name: str, **kw: Any) -> Report:
        if name not in cache:
            opts = ProbeOptions(frameworks=("torch",), steps=10, **kw)
            cache[name] = run_on_host(opts, label=name)
            assert cache[name]["frameworks"]["torch"]["status"] == "ok", cache[name]["frameworks"]["torch"]
        return copy.deepcopy(cache[name])

    return run


def verdict(a: Report, b: Report) -> str:
    result = compare_reports(a, b)
    for c in result.comparisons:  # the numbers, for the note (pytest -s)
        print(f"{c.framework} {c.workload} {c.metric}: {c.verdict} {c.max_rel_diff}")
    return result.verdict


def test_strict_vs_strict_is_identical(probe: Callable[..., Report]) -> None:
    assert verdict(probe("gpu", device="cuda"), probe("gpu-again", device="cuda")) == "identical"


def test_tf32_vs_strict_is_precision_drift(probe: Callable[..., Report]) -> None:
    assert verdict(probe("gpu", device="cuda"), probe("tf32", device="cuda", tf32=True)) == "precision-drift"


def test_bf16_autocast_vs_strict_is_precision_drift(probe: Callable[..., Report]) -> None:
    assert (
        verdict(probe("gpu", device="cuda"), probe("bf16", device="cuda", autocast="bf16"))
        == "precision-drift"
    )


def test_cpu_vs_gpu_fp32_is_equivalent(probe: Callable[..., Report]) -> None:
    assert verdict(probe("cpu"), probe("gpu", device="cuda")) == "equivalent"
