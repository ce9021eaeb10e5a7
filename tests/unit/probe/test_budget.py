"""``envkit probe --budget``: the steps that fit a time budget, and the report saying how many ran.

The plan is a pure function of timed steps (a fake adapter and clock here); the real payload runs
torch rnn on CPU: a budget that leaves room runs every step with the same bits as a run without one
(the timed step is thrown away), a budget spent on the framework's import runs one step and says so.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from envkit.cli import main
from envkit.errors import FleetError
from envkit.fleet.run_plan import options_from_json, options_to_json
from envkit.payload import PAYLOAD_DIR
from envkit.probe.runner import ProbeOptions, payload_argv, run_on_host

RNN = ProbeOptions(frameworks=("torch",), workloads=("rnn",), steps=30, threads=1, readiness=False)


@pytest.fixture
def common() -> Iterator[ModuleType]:
    """The payload's ``common`` module (it imports its siblings by their plain names)."""
    sys.path.insert(0, str(PAYLOAD_DIR))
    try:
        yield importlib.import_module("common")
    finally:
        sys.path.remove(str(PAYLOAD_DIR))


class _Adapter:
    """Steps that take ``seconds[workload]`` on a fake clock."""

    def __init__(self, clock: list[float], seconds: dict[str, float]) -> None:
        self.clock, self.seconds, self.current = clock, seconds, ""

    def make_params(self, workload: str, cfg: Any) -> list[float]:
        self.current = workload
        return [0.0]

    def make_optimizer(self, workload: str, params: list[float], lr: float) -> None:
        return None

    def forward_loss(self, workload: str, params: list[float], cfg: Any, step: int, poison: bool) -> float:
        self.clock[0] += self.seconds[workload]
        return 1.0

    def item(self, loss: float) -> float:
        return loss

    def backward(self, loss: float) -> None:
        return None

    def step(self, opt: None, params: list[float]) -> None:
        return None

    def param_norm(self, p: float) -> float:
        return 0.0


def _plan(common: ModuleType, steps: int, left: float, seconds: dict[str, float]) -> dict[str, Any]:
    clock = [100.0]
    cfg = common.Config(
        0, steps, "strict", "float32", "cpu", False, "", "", 2, False, 1, budget_until=100.0 + left
    )
    return dict(common.budget_plan(_Adapter(clock, seconds), list(seconds), cfg, clock=lambda: clock[0]))


def test_the_plan_takes_the_largest_ladder_count_that_fits(common: ModuleType) -> None:
    # 0.1 s per step (rnn 0.02 + bert 0.08), 10.1 s left, 0.1 s of it timing: 10 s x 0.8 / 0.1 = 80 fit -> 50
    plan = _plan(common, 1000, 10.1, {"rnn": 0.02, "bert": 0.08})
    assert (plan["fit"], plan["steps"], plan["steps_asked"]) == (80, 50, 1000)
    assert plan["step_s"] == {"rnn": 0.02, "bert": 0.08}
    assert _plan(common, 40, 10.1, {"rnn": 0.02, "bert": 0.08})["steps"] == 40  # everything asked fits
    assert _plan(common, 40, 60.0, {"rnn": 0.02, "bert": 0.08})["steps"] == 40  # never more than asked
    none = _plan(common, 10, 0.05, {"rnn": 0.02, "bert": 0.08})  # the timing itself spent it
    assert (none["fit"], none["steps"]) == (0, 1) and none["left_s"] < 0


def test_a_budget_with_room_runs_every_step_with_the_same_bits() -> None:
    plain = run_on_host(RNN, label="plain")
    budget = run_on_host(replace(RNN, budget_s=600.0), label="budget")
    a, b = (r.frameworks["torch"].workloads["rnn"] for r in (plain, budget))
    assert [s.loss for s in a.steps] == [s.loss for s in b.steps] and len(b.steps) == 30
    assert a.final_params_sha256 == b.final_params_sha256  # the timed step left nothing behind
    assert budget.config.steps == 30 and budget.config.get("budget_s") == 600.0
    plan = budget.document["frameworks"]["torch"]["budget"]  # type: ignore[index]
    assert plan["steps"] == 30 and plan["steps_asked"] == 30 and plan["fit"] >= 30


def test_a_budget_spent_before_the_steps_runs_one_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["probe", "--frameworks", "torch", "--workloads", "rnn", "--steps", "30", "--threads", "1",
                 "--budget", "0.01s", "-o", str(tmp_path / "r.json"), "--no-store"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert "budget 0.01 s: 1 of 30 steps ran (0 fitted; one timed step: rnn " in out
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["config"]["steps"] == 1 and report["config"]["budget_s"] == 0.01
    assert len(report["frameworks"]["torch"]["workloads"]["rnn"]["steps"]) == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--budget", "60s"], "--budget plans the steps of one framework, not 2"),
        (["--frameworks", "torch", "--budget", "0"], "a duration above 0"),
        (["--frameworks", "torch", "--budget", "soon"], "'soon' is not a duration"),
        (["--frameworks", "torch", "--budget", "nan"], "a duration above 0"),
        (["--compare", "a.json", "b.json", "--budget", "1m"], "--budget applies to a probe that runs"),
        (["--scheduler", "local", "--budget", "1m"], "--budget plans the steps of one framework"),
    ],
)
def test_bad_budgets_are_usage_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["probe", *argv]) == 2
    captured = capsys.readouterr()
    assert message in captured.out + captured.err and "Traceback" not in captured.err


def test_the_budget_reaches_the_payload_and_a_fleet_manifest() -> None:
    opts = replace(RNN, budget_s=90.0)
    argv = payload_argv(opts, ["torch"])
    assert argv[argv.index("--budget") + 1] == "90"
    assert "--budget" not in payload_argv(RNN, ["torch"])
    written = options_to_json(opts)
    assert written["budget_s"] == 90.0 and "budget_s" not in options_to_json(RNN)  # older readers
    assert options_from_json(written, "run.json").budget_s == 90.0
    with pytest.raises(FleetError, match=r"options\.budget_s: a number from 0 to 86400"):
        options_from_json({**written, "budget_s": "90"}, "run.json")
