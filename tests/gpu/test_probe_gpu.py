"""The probe bands on a real NVIDIA GPU (skipped without one): the checks of `gpu_check.py` under pytest."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from envkit.probe.model import ProbeReport
from tests.gpu.gpu_check import CHECKS, check, prober

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def run() -> Callable[[str], ProbeReport]:
    return prober()


@pytest.mark.parametrize(("title", "a", "b", "expected"), CHECKS, ids=[c[0] for c in CHECKS])
def test_gpu_band(run: Callable[[str], ProbeReport], title: str, a: str, b: str, expected: str) -> None:
    verdict, rows = check(run, a, b)
    assert verdict == expected, f"{title}: {rows}"
