"""envkit.guard in three training scripts written after real ones (tests/data/guard_scripts/).

Each script reproduces the patterns of a public training script (its docstring names which) on
tiny CPU sizes and generated data. The planted faults are caught at their step with the cause a
user would want: a NaN made only in backward names the module (``emb_norm``), an Inf in the batch
is said first (tensor and index), a learning rate 5000× too large is an update spike skipped before
it wrecks the weights, an unseeded generator is non-deterministic code; clean runs raise no alarm.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from envkit.guard import RunlogOptions
from envkit.incident.replay import load_entry, replay_dump
from envkit.incident.show import load_run, render_run

pytestmark = [pytest.mark.frameworks, pytest.mark.filterwarnings("ignore::UserWarning")]

SCRIPTS = Path(__file__).resolve().parents[1] / "data" / "guard_scripts"


def script(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """Import tests/data/guard_scripts/NAME.py (its folder on sys.path: the replay entry imports it)."""
    pytest.importorskip("paddle" if name == "paddle_cnn" else "torch")
    monkeypatch.syspath_prepend(str(SCRIPTS))
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    if name == "paddle_cnn":
        import paddle

        paddle.device.set_device("cpu")
    else:
        import torch

        torch.set_num_threads(1)
    return module


def steps_of(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "steps.jsonl").read_text().splitlines()]


def test_wlm_backward_nan_names_emb_norm_and_the_view_batch_dumps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """word_language_model's overlapping-view batch is dumped; the backward-only NaN names emb_norm."""
    wlm = script("wlm", monkeypatch)
    run = tmp_path / "run"
    out = wlm.train(run, 70, fault="unk", fault_step=60)
    assert out["steps"] == 70 and (run / "report.json").is_file()  # trained to the end
    [incident] = out["incidents"]
    assert (incident["step"], incident["kind"], incident["action"]) == (60, "nonfinite-grad", "skipped")
    assert incident["dump"] == "incidents/step-60" and (run / incident["dump"] / "manifest.json").is_file()
    back = incident["localization"]["first_nonfinite_backward"]
    assert (back["module"], back["type"]) == ("emb_norm", "EmbNorm"), incident["localization"]
    assert incident["localization"]["first_nonfinite_module"] is None  # the forward was finite
    text = render_run(load_run(run))
    assert "first non-finite gradient made in backward: emb_norm (EmbNorm)" in text
    verdict = replay_dump(run / incident["dump"], load_entry("wlm:build"))
    assert verdict.verdict == "reproducible"
    assert verdict.localization["first_nonfinite_backward"]["module"] == "emb_norm"


def test_wlm_clean_run_raises_no_alarm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The unmodified script at the default settings (once: 5 false grad spikes in 82 steps)."""
    wlm = script("wlm", monkeypatch)
    out = wlm.train(tmp_path / "run", 150)
    assert out["incidents"] == []


def test_paddle_inf_in_the_batch_is_said_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cnn = script("paddle_cnn", monkeypatch)
    run = tmp_path / "run"
    out = cnn.train(run, 45, fault="inf", fault_step=40)
    [incident] = out["incidents"]
    assert incident["step"] == 40 and incident["kind"].startswith("nonfinite")
    assert incident["message"].startswith("the batch holds inf in batch[0] at [3, 0, 14, 9] (1 of 25088")
    assert incident["context"]["nonfinite_batch"]["index"] == [3, 0, 14, 9]
    lines = render_run(load_run(run)).splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("incident at step 40"))
    assert "the batch holds inf in batch[0]" in lines[first]
    assert not any("clamp the argument" in line for line in lines)  # the input, not a model bug


def test_nanogpt_lr_spike_is_skipped_before_it_wrecks_the_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """get_lr returns 5000× at step 30: caught at step 30, before the update (not warned at 31)."""
    nanogpt = script("nanogpt", monkeypatch)
    run = tmp_path / "run"
    out = nanogpt.train(run, 45, fault="lr", fault_step=30)
    [incident] = out["incidents"]
    assert (incident["step"], incident["kind"], incident["action"]) == (30, "update-spike", "skipped")
    assert "larger than any before" in incident["message"] and "the learning rate is" in incident["message"]
    ctx = incident["context"]
    assert ctx["lrs"][0] > 1000 * ctx["largest_before"]["lrs"][0]
    steps = steps_of(run)
    assert all(len(s["lrs"]) == 2 and len(s["update_ratios"]) == 2 for s in steps)  # nanoGPT's 2 groups
    assert "(largest before: 0.001, 0.001); update lr·|grad|/|weight|" in render_run(load_run(run))


def test_nanogpt_unseeded_generator_is_nondeterministic_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nanogpt = script("nanogpt", monkeypatch)
    run = tmp_path / "run"
    out = nanogpt.train(run, 27, fault="lr,unseeded", fault_step=25)
    [incident] = out["incidents"]
    verdict = replay_dump(run / incident["dump"], load_entry("nanogpt:build_unseeded"))
    assert verdict.verdict == "nondeterministic"
    assert "non-deterministic code" in verdict.notes[0] and "device" not in verdict.notes[0]


def test_nanogpt_all_ignored_targets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nanogpt = script("nanogpt", monkeypatch)
    out = nanogpt.train(tmp_path / "run", 27, fault="ignored", fault_step=25)
    [incident] = out["incidents"]
    assert (incident["step"], incident["kind"]) == (25, "nonfinite-loss")
    hints = incident["localization"]["hints"]
    assert any("holds only -1: every target ignored" in h for h in hints), hints


@pytest.mark.slow
def test_nanogpt_compiled_is_guarded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """torch.compile'd (CPU, inductor): the guard sees the module it wraps; the fault is still named."""
    nanogpt = script("nanogpt", monkeypatch)
    run = tmp_path / "run"
    out = nanogpt.train(run, 24, fault="lr", fault_step=22, compile_model=True)
    [incident] = out["incidents"]
    assert (incident["step"], incident["kind"]) == (22, "update-spike")
    loaded = (run / incident["dump"] / "model.safetensors").read_bytes()[:4000]
    assert b"_orig_mod" not in loaded  # the wrapped module's names: the eager build() replays it
    verdict = replay_dump(run / incident["dump"], load_entry("nanogpt:build"))
    assert verdict.verdict in ("reproducible", "transient"), verdict  # eager replay of a compiled step


def test_nanogpt_warmup_steps_are_left_out_of_the_timed_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--warmup W`` (the torch.compile row of bench_guard_scripts): W steps run, then the clock starts."""
    nanogpt = script("nanogpt", monkeypatch)
    out = nanogpt.train(None, 4, warmup=3)
    assert (out["steps"], out["timed_steps"]) == (4, 1) and out["cpu_s"] >= 0
    assert nanogpt.train(None, 2)["timed_steps"] == 2  # no warm-up: every step, as before
    for bad in (4, 5, -1):
        with pytest.raises(ValueError, match="warmup"):
            nanogpt.train(None, 4, warmup=bad)
    with pytest.raises(SystemExit) as stop:
        nanogpt.main(["--no-guard", "--steps", "2", "--warmup", "2"])
    assert stop.value.code == 2


def test_wlm_resumed_run_honours_the_bad_batch_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batch an incident skipped is skipped again after a restart, or replayed on purpose."""
    wlm = script("wlm", monkeypatch)
    run = tmp_path / "run"
    first = wlm.train(run, 64, fault="unk", fault_step=60)
    assert [i["step"] for i in first["incidents"]] == [60]
    [entry] = [json.loads(line) for line in (run / "ledger.jsonl").read_text().splitlines()]
    assert entry["step"] == 60 and entry["kind"] == "nonfinite-grad" and len(entry["digest"]) == 64
    resumed = wlm.train(run, 64, fault="unk", fault_step=60, start=56)  # from a checkpoint at 56
    assert resumed["incidents"] == []
    summary = load_run(run)
    [hit] = summary["config"]["ledger"]["batches"]
    assert (hit["step"], hit["listed_step"], hit["action"]) == (60, 60, "skipped again")
    assert "ledger: step 60: skipped again" in render_run(summary)
    replayed = wlm.train(
        run, 64, fault="unk", fault_step=60, start=56, guard_options={"log": RunlogOptions(ledger="replay")}
    )
    assert [i["step"] for i in replayed["incidents"]] == [60]  # trained on on purpose: the NaN again
