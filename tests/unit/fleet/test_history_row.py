"""The per-GPU history row of `make gpu-check` (``tests/gpu/history_gpu.py``), run here on the CPU.

With no GPU the row says so; with ``device="cpu"`` it runs the real probe (torch on CPU, cold
processes) and the real fleet history: a clean device is stable with 0 flips and its probe times,
a repeat with a planted flipped bit (``ENVKIT_TEST_PERTURB``) is a flip, the device mercurial, the row failed.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.gpu import history_gpu

pytestmark = pytest.mark.frameworks


def test_without_a_gpu_the_row_says_no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(history_gpu, "gpu_count", lambda: 0)
    row = history_gpu.history_row(20)
    assert row == {"check": "per-GPU history", "status": "no GPU", "ok": True, "devices": []}
    assert history_gpu.row_lines(row) == ["--   per-GPU history: no GPU (nvidia-smi lists none): not run"]


def test_a_clean_device_is_stable_with_no_flip() -> None:
    row = history_gpu.history_row(2, steps=2, device="cpu")
    (device,) = row["devices"]
    assert row["ok"] and row["status"] == "ran"
    assert (device["task"], device["repeats"], device["verdict"], device["flips"]) == ("cpu", 2, "stable", 0)
    assert device["cold_s"] > 0 and device["median_s"] > 0
    assert history_gpu.row_lines(row)[0].startswith("ok   per-GPU history cpu: stable, 0 flip(s) in 2 strict")


def test_a_repeat_with_other_bits_is_a_flip(monkeypatch: pytest.MonkeyPatch) -> None:
    from envkit.probe.runner import run_on_host as real

    calls: list[int] = []

    def flipped_second(opts: Any, *, label: str) -> Any:
        calls.append(1)
        if len(calls) == 2:  # the second repeat: one step's loss loses its low bit (the real payload)
            monkeypatch.setitem(os.environ, "ENVKIT_TEST_PERTURB", "p=1,seed=3")
        else:
            monkeypatch.delitem(os.environ, "ENVKIT_TEST_PERTURB", raising=False)
        return real(opts, label=label)

    monkeypatch.setattr(history_gpu, "run_on_host", flipped_second)
    row = history_gpu.history_row(2, steps=3, device="cpu")
    (device,) = row["devices"]
    assert not row["ok"] and (device["flips"], device["verdict"]) == (1, "mercurial")
    assert history_gpu.row_lines(row)[0].startswith("FAIL per-GPU history cpu: mercurial, 1 flip(s)")
