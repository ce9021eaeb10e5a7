"""What a dump says of its step's mixed precision (:func:`envkit.incident.amp.recorded_amp`), strictly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from envkit.errors import DumpError
from envkit.guard.dump import Dump
from envkit.incident.amp import recorded_amp


def dump(scale: Any = None, autocast: Any = None, step: int = 7) -> Dump:
    records = [{"step": 6, "loss_scale": 2.0}, {"step": step, "loss_scale": scale}]
    manifest: dict[str, Any] = {"step": 7, "framework": "torch", "files": {}}
    if autocast is not None:
        manifest["autocast"] = autocast
    return Dump(Path("RUN/incidents/step-7"), manifest, {"records.json": records})


def test_the_steps_own_scale_and_the_declared_autocast() -> None:
    amp = recorded_amp(dump(1024.0, "bf16"))
    assert (amp.loss_scale, amp.autocast, amp.note) == (1024.0, "bfloat16", None)
    assert recorded_amp(dump(65536, "FP16")).autocast == "float16"
    assert recorded_amp(dump(None)).loss_scale is None  # no GradScaler
    assert recorded_amp(dump(3.0, step=8)).loss_scale is None  # not the dump's step: not used


def test_an_undeclared_or_unknown_autocast_is_said() -> None:
    assert "declared no autocast" in (recorded_amp(dump(1024.0)).note or "")
    amp = recorded_amp(dump(None, "fp8"))
    assert amp.autocast is None and "'fp8' is not bf16 or fp16" in (amp.note or "")


@pytest.mark.parametrize("scale", ["1024", -1.0, 0, float("inf"), True, [1024]])
def test_a_loss_scale_that_is_no_positive_number_is_refused(scale: Any) -> None:
    with pytest.raises(DumpError, match="loss_scale"):
        recorded_amp(dump(scale))


@pytest.mark.parametrize("autocast", [16, ["bf16"], {"dtype": "bf16"}])
def test_an_autocast_that_is_no_string_is_refused(autocast: Any) -> None:
    with pytest.raises(DumpError, match="autocast"):
        recorded_amp(dump(1.0, autocast))


def test_records_that_are_no_list_are_refused() -> None:
    bad = Dump(Path("d"), {"step": 7}, {"records.json": {"step": 7}})
    with pytest.raises(DumpError, match=r"records\.json"):
        recorded_amp(bad)
