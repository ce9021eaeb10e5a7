# mypy: disable-error-code="misc, name-defined, index"
# (the models subclass the framework's untyped Module/Layer, imported through importorskip)
"""envkit.guard with real torch (CPU): bitwise-healthy runs, skips, overflows, planted causes, replay."""

from __future__ import annotations

import json
import math
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

from envkit.cli import main  # noqa: E402
from envkit.errors import DumpError, GuardStopped  # noqa: E402
from envkit.guard import Guard, Limits, ReadOptions, RunlogOptions, SpikeOptions  # noqa: E402
from envkit.incident.replay import load_entry, replay_dump  # noqa: E402

pytestmark = [pytest.mark.frameworks, pytest.mark.filterwarnings("ignore::UserWarning")]


def mlp() -> tuple[Any, Any]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 3))
    return model, torch.optim.AdamW(model.parameters(), lr=1e-2)


def batches(n: int, nan_at: int | None = None) -> list[tuple[Any, Any]]:
    g = torch.Generator().manual_seed(1)
    out = [(torch.randn(4, 8, generator=g), torch.randint(0, 3, (4,), generator=g)) for _ in range(n)]
    if nan_at is not None:
        out[nan_at][0][0, 0] = math.nan
    return out


def ce(model: Any, batch: Any) -> Any:
    return F.cross_entropy(model(batch[0]), batch[1])


def unguarded(steps: int, clip: float | None) -> list[str]:
    model, opt = mlp()
    losses = []
    for batch in batches(steps):
        loss = ce(model, batch)
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item().hex())
    return [*losses, *(p.detach().double().sum().item().hex() for p in model.parameters())]


def guarded(
    run: Path, steps: int, clip: float | None, k: int = 1, nan_at: int | None = None
) -> tuple[Guard, list[str]]:
    model, opt = mlp()
    guard = Guard(model, opt, run=run, clip=clip, reads=ReadOptions(k, defer=k > 1), loss_fn=ce)
    for i, batch in enumerate(batches(steps, nan_at)):
        with guard.step(i, batch) as g:
            g.backward(ce(model, batch))
            g.optimizer_step()
    guard.close()
    losses = [r.loss.hex() for r in guard.records]
    return guard, [*losses, *(p.detach().double().sum().item().hex() for p in model.parameters())]


@pytest.mark.parametrize(("clip", "k"), [(None, 1), (1.0, 1), (0.05, 10)])
def test_healthy_guarded_run_is_bitwise_the_unguarded_loop(
    tmp_path: Path, clip: float | None, k: int
) -> None:
    guard, numbers = guarded(tmp_path / "run", 12, clip, k)
    assert numbers == unguarded(12, clip)
    assert not guard.incidents
    if clip == 0.05:  # the clip bites: the norm after is recorded and the report counts the step
        assert all(r.clipped_norm is not None and r.clipped_norm <= 0.05 * 1.0001 for r in guard.records)
        assert json.loads((tmp_path / "run" / "report.json").read_text())["guard"]["clipped_steps"] == 12


def test_nan_step_is_skipped_dumped_and_localized(tmp_path: Path) -> None:
    model, opt = mlp()
    guard = Guard(model, opt, run=tmp_path / "run", loss_fn=ce)
    data = batches(6, nan_at=3)
    for i, batch in enumerate(data):
        with guard.step(i, batch) as g:
            g.backward(ce(model, batch))
            assert g.optimizer_step() is (i != 3)
    guard.close()
    (incident,) = guard.incidents
    assert (incident.step, str(incident.kind), incident.action) == (3, "nonfinite-loss", "skipped")
    assert all(math.isfinite(float(p.detach().sum())) for p in model.parameters())
    loc = incident.localization or {}
    assert loc["batch"]["[0]"]["finite"] is False  # the NaN came in with the data
    dump = tmp_path / "run" / "incidents" / "step-3"
    manifest = json.loads((dump / "manifest.json").read_text())
    assert {"batch.safetensors", "rng.safetensors", "model.safetensors", "optimizer.safetensors"} <= set(
        manifest["files"]
    )
    assert all(len(f["sha256"]) == 64 for f in manifest["files"].values())
    assert not list(dump.glob("*.pt")) and not list(dump.glob("*.pkl"))
    rng = json.loads((dump / "rng.json").read_text())
    assert "python" in rng and "numpy" in rng  # numpy is loaded by torch here
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["kind"] == "envkit-probe-report"
    assert report["frameworks"]["torch"]["workloads"]["train"]["nonfinite"]["step"] == 4  # 1-based
    assert (tmp_path / "run" / "steps.csv").read_text().splitlines()[0].startswith("step,loss,grad_norm")
    assert len((tmp_path / "run" / "steps.jsonl").read_text().splitlines()) == 6


def test_k10_masks_a_nan_on_the_device_and_reports_it_at_the_read(tmp_path: Path) -> None:
    guard, _ = guarded(tmp_path / "run", 10, 1.0, k=5, nan_at=2)
    (incident,) = guard.incidents
    assert incident.step == 2 and incident.action == "skipped"
    assert (
        json.loads((tmp_path / "run" / "incidents" / "step-2" / "manifest.json").read_text())["exact"]
        is False
    )
    assert all(math.isfinite(float(p.detach().sum())) for p in guard.model.parameters())


def test_steps_jsonl_grows_while_the_run_goes_on(tmp_path: Path) -> None:
    model, opt = mlp()
    guard = Guard(model, opt, run=tmp_path / "run", log=RunlogOptions(flush_every=4))
    for i, batch in enumerate(batches(10)):
        with guard.step(i, batch) as g:
            g.backward(ce(model, batch))
            g.optimizer_step()
        if i == 8:  # not closed yet: what a run that dies here leaves
            lines = (tmp_path / "run" / "steps.jsonl").read_text().splitlines()
            assert [json.loads(line)["step"] for line in lines] == list(range(8))
    guard.close()
    assert len((tmp_path / "run" / "steps.jsonl").read_text().splitlines()) == 10


def test_policy_stop_raises_with_the_report_and_skip_cap_stops(tmp_path: Path) -> None:
    model, opt = mlp()
    guard = Guard(model, opt, run=tmp_path / "a", policy="stop")
    batch = batches(1, nan_at=0)[0]
    with pytest.raises(GuardStopped, match=r"report .*report\.json"), guard.step(0, batch) as g:
        g.backward(ce(model, batch))
        g.optimizer_step()
    model, opt = mlp()
    guard = Guard(model, opt, run=tmp_path / "b", policy="skip", limits=Limits(max_skips=3))
    with pytest.raises(GuardStopped, match="3 skips in a row"):
        for i in range(5):
            with guard.step(i, batch) as g:
                g.backward(ce(model, batch))
                g.optimizer_step()
    assert [r.skipped is not None for r in guard.records] == [True, True, True]


def test_scheduler_steps_only_with_applied_updates(tmp_path: Path) -> None:
    model, opt = mlp()
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    guard = Guard(model, opt, run=tmp_path / "run", scheduler=sched)
    for i, batch in enumerate(batches(5, nan_at=1)):
        with guard.step(i, batch) as g:
            g.backward(ce(model, batch))
            g.optimizer_step()
    assert sched.last_epoch == 4  # 5 steps, one skipped
    assert [r.lr for r in guard.records] == [1e-2, 5e-3, 5e-3, 2.5e-3, 1.25e-3]


def test_gradscaler_overflow_is_an_overflow_not_an_incident(tmp_path: Path) -> None:
    model, opt = mlp()
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**127)  # 4 · loss · 2**127 overflows float32
    guard = Guard(model, opt, run=tmp_path / "run", scaler=scaler)
    for i, batch in enumerate(batches(3)):
        with guard.step(i, batch) as g:
            g.backward(ce(model, batch) * 4)
            g.optimizer_step()
    guard.close()
    assert not guard.incidents
    assert guard.records[0].overflow and guard.records[0].skipped
    assert scaler.get_scale() < 2.0**127
    assert main(["guard", "show", str(tmp_path / "run")]) == 0


def test_checkpoint_refused_after_a_warned_nonfinite_step(tmp_path: Path) -> None:
    model, opt = mlp()
    guard = Guard(model, opt, run=tmp_path / "run", policy="warn")
    saved: list[int] = []
    batch = batches(1, nan_at=0)[0]
    with pytest.warns(UserWarning, match="the loss is nan"), guard.step(0, batch) as g:
        g.backward(ce(model, batch))
        g.optimizer_step()
    with pytest.warns(UserWarning, match="checkpoint refused"):
        assert guard.checkpoint(saved.append, 1) is False
    assert saved == []


# -- the planted causes ---------------------------------------------------------------------------


class LogSoftmaxHead(nn.Module):
    def forward(self, x: Any) -> Any:
        return torch.log(torch.softmax(x * 1000.0, dim=-1))  # underflows to 0, log gives -inf


class Scorer(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.proj = nn.Linear(d, d)
        nn.init.normal_(self.proj.weight, std=1.0)  # std 1: the pre-activations are huge

    def forward(self, x: Any) -> Any:
        return torch.exp(self.proj(x))  # a softmax numerator without the max subtracted


class Gate(nn.Module):
    def forward(self, x: Any) -> Any:
        return torch.exp(x)


class Classifier(nn.Module):
    def __init__(self, head: nn.Module, d: int = 8, classes: int = 3) -> None:
        super().__init__()
        self.enc = nn.Linear(d, classes if isinstance(head, LogSoftmaxHead) else d)
        self.head = head
        self.out = nn.Linear(d, classes)
        self.criterion = nn.CrossEntropyLoss()

    def forward(self, x: Any, y: Any) -> Any:
        h = self.head(self.enc(x))
        if isinstance(self.head, LogSoftmaxHead):
            return F.nll_loss(h, y)
        return self.criterion(self.out(h), y)


class Positional(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.tok = nn.Embedding(50, 8)
        self.pos = nn.Embedding(16, 8)  # a position table of 16
        self.out = nn.Linear(8, 3)

    def forward(self, ids: Any, y: Any) -> Any:
        positions = torch.arange(ids.shape[1]).unsqueeze(0)
        return F.cross_entropy(self.out((self.tok(ids) + self.pos(positions)).mean(1)), y)


def model_loss(model: Any, batch: Any) -> Any:
    return model(batch[0], batch[1])


def first_incident(model: Any, data: list[Any], tmp_path: Path, lr: float = 1e-3) -> Any:
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    guard = Guard(model, opt, run=tmp_path / "run", loss_fn=model_loss, policy="stop")
    with pytest.raises((GuardStopped, IndexError)):
        for i, batch in enumerate(data):
            with guard.step(i, batch) as g:
                g.backward(model_loss(model, batch))
                g.optimizer_step()
    return guard.incidents[0]


def xy(d: int = 8, scale: float = 1.0, seq: int | None = None, label: int | None = None) -> tuple[Any, Any]:
    g = torch.Generator().manual_seed(3)
    x = torch.randint(0, 50, (4, seq), generator=g) if seq else torch.randn(4, d, generator=g) * scale
    y = torch.tensor([0, 1, 2, label if label is not None else 1])
    return x, y


def test_planted_log_of_underflowed_softmax(tmp_path: Path) -> None:
    torch.manual_seed(0)
    inc = first_incident(Classifier(LogSoftmaxHead()), [xy()], tmp_path)
    mod = inc.localization["first_nonfinite_module"]
    assert (mod["module"], mod["type"]) == ("head", "LogSoftmaxHead")


def test_planted_std1_linear_saturates(tmp_path: Path) -> None:
    torch.manual_seed(0)
    inc = first_incident(Classifier(Scorer(64), d=64), [xy(64, scale=10.0)], tmp_path)
    assert inc.localization["first_nonfinite_module"]["module"] == "head"
    assert inc.localization["first_nonfinite_module"]["type"] == "Scorer"


def test_planted_unnormalized_0_255_input(tmp_path: Path) -> None:
    torch.manual_seed(0)
    x = torch.randint(0, 256, (4, 8), generator=torch.Generator().manual_seed(0)).float()
    x[0, 0] = 255.0
    inc = first_incident(Classifier(Gate()), [(x, torch.tensor([0, 1, 2, 1]))], tmp_path)
    loc = inc.localization
    assert loc["first_nonfinite_module"]["module"] == "head"
    assert any("0–255" in h and "[0]" in h for h in loc["hints"])


def test_planted_label_out_of_range(tmp_path: Path) -> None:
    torch.manual_seed(0)
    inc = first_incident(Classifier(Gate()), [xy(scale=0.1, label=7)], tmp_path)
    assert str(inc.kind) == "error" and inc.action == "raised"
    assert inc.localization["raised_in"] == "criterion"
    assert (tmp_path / "run" / "incidents" / "step-0" / "manifest.json").is_file()


def test_planted_sequence_longer_than_the_position_table(tmp_path: Path) -> None:
    torch.manual_seed(0)
    inc = first_incident(Positional(), [xy(seq=12), xy(seq=20)], tmp_path)
    assert inc.step == 1
    assert inc.localization["raised_in"] == "pos"
    assert any("16 rows" in h for h in inc.localization["hints"])


class Backbone(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(16, 16)
        self.head = nn.Linear(16, 1)  # freshly initialized

    def forward(self, x: Any, y: Any) -> Any:
        return F.mse_loss(self.head(self.body(x)), y)


def test_planted_lr_1e3_on_a_fresh_head_is_a_spike_naming_the_head(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = Backbone()
    opt = torch.optim.SGD(
        [{"params": model.body.parameters(), "lr": 1e-6}, {"params": model.head.parameters(), "lr": 1e-3}]
    )
    g = torch.Generator().manual_seed(5)
    data = [(torch.randn(8, 16, generator=g) * 30, torch.randn(8, 1, generator=g)) for _ in range(60)]
    guard = Guard(
        model, opt, run=tmp_path / "run", loss_fn=model_loss, spikes=SpikeOptions("stop", window=10, warmup=5)
    )
    with pytest.raises(GuardStopped, match="spike"):
        for i, batch in enumerate(data):
            with guard.step(i, batch) as step:
                step.backward(model_loss(model, batch))
                step.optimizer_step()
    inc = guard.incidents[0]
    assert str(inc.kind) in ("loss-spike", "grad-spike")
    assert inc.localization["largest_update"]["parameter"].startswith("head.")


# -- replay ----------------------------------------------------------------------------------------


def _entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "guard_entry.py").write_text(
        textwrap.dedent(
            """
            import torch
            import torch.nn.functional as F

            def build():
                torch.manual_seed(0)
                model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Dropout(0.1),
                                            torch.nn.Linear(16, 3))
                opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
                return model, opt, lambda m, b: F.cross_entropy(m(b[0]), b[1])
            """
        )
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("guard_entry", None)


def _spiky_run(tmp_path: Path) -> Path:
    """A run whose step 4 is warned as an incident (a planted NaN in a dropout model): a dump to replay."""
    model, opt = mlp()
    guard = Guard(model, opt, run=tmp_path / "run", policy="warn", loss_fn=ce)
    for i, batch in enumerate(batches(6, nan_at=4)):
        with pytest.warns(UserWarning) if i == 4 else _null(), guard.step(i, batch) as g:
            g.backward(ce(model, batch))
            g.optimizer_step()
    guard.close()
    return tmp_path / "run" / "incidents" / "step-4"


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *a: object) -> None:
        return None


def test_replay_is_reproducible_and_a_changed_batch_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = _spiky_run(tmp_path)
    _entry(tmp_path, monkeypatch)
    assert main(["guard", "replay", str(dump), "--entry", "guard_entry:build", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["result"]
    assert out["verdict"] == "reproducible"
    assert out["replays"][0]["loss"] == "nan"
    # the batch changed after the fact: its recorded sha256 no longer matches
    from safetensors.torch import load_file, save_file

    batch = load_file(str(dump / "batch.safetensors"))
    batch["b0"][0, 0] = 0.0
    save_file(batch, str(dump / "batch.safetensors"))
    assert main(["guard", "replay", str(dump), "--entry", "guard_entry:build"]) == 2
    assert "sha256" in capsys.readouterr().err


def _rewrite(
    dump: Path, *, loss: float | None = None, framework: str | None = None, threads: int = 0
) -> None:
    """Edit a dump as another host (or a mislabeling tool) would have written it, and re-hash it."""
    from envkit.guard.dump import write_manifest

    manifest = json.loads((dump / "manifest.json").read_text())
    manifest.pop("files")
    if loss is not None:
        manifest["outcome"]["loss"] = loss
    if framework is not None:
        manifest["framework"] = framework
    if threads:
        env = json.loads((dump / "env.json").read_text())
        env["info"]["switches"]["num_threads"] = threads
        (dump / "env.json").write_text(json.dumps(env))
    write_manifest(dump, manifest)


def test_replay_says_transient_when_the_recorded_outcome_differs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recorded outcome that this same host does not reproduce: the device is suspect."""
    dump = _spiky_run(tmp_path)
    _entry(tmp_path, monkeypatch)
    _rewrite(dump, loss=1.25)  # as if the recording device had computed another number
    assert replay_dump(dump, load_entry("guard_entry:build")).verdict == "transient"


def test_replay_says_environment_with_ranked_causes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dump = _spiky_run(tmp_path)
    _entry(tmp_path, monkeypatch)
    _rewrite(dump, loss=1.25, threads=64)  # another result, from a host with other threads
    verdict = replay_dump(dump, load_entry("guard_entry:build"))
    assert verdict.verdict == "environment"
    assert any(c["kind"] == "threads" for c in verdict.causes)


def test_replay_refuses_a_dump_of_the_other_framework(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dump = _spiky_run(tmp_path)
    _entry(tmp_path, monkeypatch)
    _rewrite(dump, framework="paddle")
    with pytest.raises(DumpError, match="a paddle dump, and this model is torch"):
        replay_dump(dump, load_entry("guard_entry:build"))


def test_probe_compare_reads_two_guarded_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """RUN/report.json is a probe report: 1 vs 2 intra-op threads compare as alike, threads as a cause."""
    before = torch.get_num_threads()
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            guarded(tmp_path / f"t{n}", 6, 1.0)
    finally:
        torch.set_num_threads(before)
    code = main(
        [
            "probe",
            "--compare",
            str(tmp_path / "t1" / "report.json"),
            str(tmp_path / "t2" / "report.json"),
            "--json",
        ]
    )
    result = json.loads(capsys.readouterr().out)["result"]
    text = json.dumps(result)
    assert code == 0, text[:2000]
    assert '"identical"' in text or '"equivalent"' in text
    assert "threads" in text


def test_n_way_compare_of_guarded_runs_names_the_run_with_the_nan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, nan_at in (("a", None), ("b", None), ("bad", 3)):
        guarded(tmp_path / name, 6, 1.0, nan_at=nan_at)
    reports = [str(tmp_path / name / "report.json") for name in ("a", "b", "bad")]
    assert main(["probe", "--compare", *reports]) == 1
    out = capsys.readouterr().out
    assert "3 reports, 2 bitwise group(s)" in out
    assert f"{reports[2]}: invalid" in out


def test_bf16_autocast_against_fp32_is_precision_drift_with_autocast_as_a_cause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, dtype in (("fp32", None), ("bf16", torch.bfloat16)):
        model, opt = mlp()
        guard = Guard(
            model, opt, run=tmp_path / name, clip=1.0, log=RunlogOptions(autocast="bf16" if dtype else None)
        )
        for i, batch in enumerate(batches(12)):
            with guard.step(i, batch) as g:
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype is not None):
                    loss = ce(model, batch)
                g.backward(loss.float())
                g.optimizer_step()
        guard.close()
    reports = [str(tmp_path / n / "report.json") for n in ("fp32", "bf16")]
    main(["probe", "--compare", *reports, "--json"])
    result = json.dumps(json.loads(capsys.readouterr().out)["result"])
    assert '"precision-drift"' in result
    assert "autocast" in result and "inconsistent" not in result


@pytest.mark.parametrize(
    ("norms", "named"),
    [([1.0, 1.0, 1.0], None), ([1.0, 1.0, 1.5], [2]), ([1.0, 1.0 + 1e-9, 1.0], None), ([1.0, 2.0], [0, 1])],
)
def test_cross_rank_check_names_the_ranks_outside_the_majority(
    tmp_path: Path, norms: list[float], named: list[int] | None
) -> None:
    from envkit.guard.records import StepRecord

    model, opt = mlp()
    guard = Guard(model, opt, run=tmp_path / "run", loss_fn=None)
    rec = StepRecord(0, 1.0, norms[0], rank_losses=[1.0] * len(norms), rank_norms=norms)
    with pytest.warns(UserWarning) if named else _null():
        guard._rank_check(guard.step(0, batches(1)[0]), rec)
    assert [i.ranks for i in guard.incidents] == ([named] if named else [])
