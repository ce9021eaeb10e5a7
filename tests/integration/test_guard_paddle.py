# mypy: disable-error-code="misc, name-defined, index"
# (the models subclass the framework's untyped Module/Layer, imported through importorskip)
"""envkit.guard with real Paddle (CPU): the same API, bitwise-healthy runs, planted causes, replay."""

from __future__ import annotations

import json
import math
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

paddle = pytest.importorskip("paddle")
nn = paddle.nn
F = paddle.nn.functional

from envkit.cli import main  # noqa: E402
from envkit.errors import GuardStopped  # noqa: E402
from envkit.guard import Guard, ReadOptions, SpikeOptions  # noqa: E402

pytestmark = [pytest.mark.frameworks, pytest.mark.filterwarnings("ignore::UserWarning")]


def mlp() -> tuple[Any, Any]:
    paddle.seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 3))
    return model, paddle.optimizer.AdamW(parameters=model.parameters(), learning_rate=1e-2)


def batches(n: int, nan_at: int | None = None) -> list[tuple[Any, Any]]:
    paddle.seed(1)
    out = [(paddle.randn([4, 8]), paddle.randint(0, 3, [4])) for _ in range(n)]
    if nan_at is not None:
        x = out[nan_at][0].numpy()
        x[0, :] = math.nan
        out[nan_at] = (paddle.to_tensor(x), out[nan_at][1])
    return out


def ce(model: Any, batch: Any) -> Any:
    return F.cross_entropy(model(batch[0]), batch[1])


def numbers(model: Any, losses: list[float]) -> list[str]:
    return [*(v.hex() for v in losses), *(float(p.astype("float64").sum()).hex() for p in model.parameters())]


@pytest.mark.parametrize(("clip", "k"), [(None, 1), (0.05, 1), (0.05, 10)])
def test_healthy_guarded_run_is_bitwise_the_unguarded_loop(
    tmp_path: Path, clip: float | None, k: int
) -> None:
    model, opt = mlp()
    ref = []
    for batch in batches(8):
        loss = ce(model, batch)
        loss.backward()
        if clip is not None:
            paddle.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        opt.clear_grad()
        ref.append(float(loss))
    expected = numbers(model, ref)
    model, opt = mlp()
    guard = Guard(model, opt, run=tmp_path / "run", clip=clip, reads=ReadOptions(k, defer=k > 1))
    for i, batch in enumerate(batches(8)):
        with guard.step(i, batch) as g:
            g.backward(ce(model, batch))
            g.optimizer_step()
    guard.close()
    assert numbers(model, [r.loss for r in guard.records]) == expected
    assert not guard.incidents


def test_nan_step_is_skipped_and_dumped_with_paddle_rng(tmp_path: Path) -> None:
    model, opt = mlp()
    guard = Guard(model, opt, run=tmp_path / "run", loss_fn=ce)
    for i, batch in enumerate(batches(5, nan_at=2)):
        with guard.step(i, batch) as g:
            g.backward(ce(model, batch))
            g.optimizer_step()
    guard.close()
    (incident,) = guard.incidents
    assert incident.step == 2 and incident.action == "skipped"
    assert all(math.isfinite(float(p.sum())) for p in model.parameters())
    rng = json.loads((tmp_path / "run" / "incidents" / "step-2" / "rng.json").read_text())
    assert rng["paddle.cpu"] and "python" in rng
    assert main(["guard", "show", str(tmp_path / "run")]) == 1


def test_deferred_reads_mask_a_nan_on_the_device(tmp_path: Path) -> None:
    model, opt = mlp()
    guard = Guard(model, opt, run=tmp_path / "run", clip=1.0, reads=ReadOptions(5, defer=True))
    for i, batch in enumerate(batches(10, nan_at=2)):
        with guard.step(i, batch) as g:
            g.backward(ce(model, batch))
            g.optimizer_step()
    guard.close()
    (incident,) = guard.incidents
    assert incident.step == 2 and incident.action == "skipped"
    assert all(math.isfinite(float(p.sum())) for p in model.parameters())


def eager_rng() -> list[list[Any]]:
    """Paddle's CPU generator as rng.json holds it, converted at once (what the guard did per step)."""
    return [list(s.__getstate__()) for s in paddle.get_rng_state(device="cpu")]


@pytest.mark.parametrize("k", [1, 5])
def test_recorded_generator_state_is_the_one_before_the_step(tmp_path: Path, k: int) -> None:
    """The guard keeps paddle's generator as a snapshot and converts it late (a dump, a replay): what
    it converts is still the state before the step, after the step's dropout drew from it."""
    model, opt = mlp()
    guard = Guard(model, opt, run=tmp_path / "run", loss_fn=ce, reads=ReadOptions(k, defer=k > 1))
    before: list[list[list[Any]]] = []
    recorded: list[Any] = []
    for i, batch in enumerate(batches(8, nan_at=6)):
        before.append(eager_rng())
        with guard.step(i, batch) as g:
            g.backward(ce(model, batch))
            g.optimizer_step()
        recorded.append(g.rng)
    guard.close()
    assert len({json.dumps(b) for b in before}) == 8  # dropout moved the generator every step
    rng = json.loads((tmp_path / "run" / "incidents" / "step-6" / "rng.json").read_text())
    assert rng["paddle.cpu"] == before[6]
    for state, expected in zip(recorded, before, strict=True):
        assert state.json_values()["paddle.cpu"] == expected


def test_norms_and_reads_are_paddles_own_bits(tmp_path: Path) -> None:
    """total_norm is ClipGradByGlobalNorm's squared_l2_norm kernel per gradient, summed on the host on
    the CPU, bit for bit (clip_grad_norm_'s total within float32 rounding; clip() scales by the latter:
    test_healthy_guarded_run_is_bitwise_the_unguarded_loop); read() gives the float64 copy's values."""
    model, opt = mlp()
    guard = Guard(model, opt, run=tmp_path / "run")
    loss = ce(model, batches(1)[0])
    loss.backward()
    a = guard.adapter
    total = a.total_norm(a.grads())
    squares = [paddle._C_ops.squared_l2_norm(p.grad) for p in model.parameters()]
    assert total == math.sqrt(sum(sq.item() for sq in squares))  # on the CPU: each Σx² read, summed
    exact = math.sqrt(sum(float(p.grad.astype("float64").square().sum()) for p in model.parameters()))
    assert total == pytest.approx(exact, rel=1e-6)
    per_param = a.last_param_norms()
    assert list(per_param) == [n for n, _ in model.named_parameters()]
    ref = paddle.nn.utils.clip_grad_norm_(model.parameters(), 1e9)
    assert total == pytest.approx(float(ref), rel=1e-5)
    assert list(per_param.values()) == pytest.approx(
        [float(paddle.linalg.norm(p.grad)) for p in model.parameters()], rel=1e-5
    )
    wide = [
        loss,
        total,
        paddle.to_tensor(math.inf),
        paddle.to_tensor(1e-40),
        paddle.to_tensor(0.1, "float64"),
    ]
    expected = [v if isinstance(v, float) else v.astype("float64").item() for v in wide]
    assert [v.hex() for v in a.read(wide)] == [v.hex() for v in expected]
    half = [paddle.to_tensor(0.1, "float16"), loss]  # not float32/64: the float64 copy, as before
    assert a.read(half) == [float(v.astype("float64")) for v in half]
    norms = a.param_norms()
    assert list(norms.values()) == [float(paddle.linalg.norm(p.grad)) for p in model.parameters()]
    guard.close()


class LogSoftmaxHead(nn.Layer):
    """A hand-written softmax, then log. (Paddle's own F.softmax clips the shifted logits at -64 on
    CPU, seen here as log-probabilities of exactly -64: it never underflows to 0.)"""

    def forward(self, x: Any) -> Any:
        z = x * 1000.0
        e = paddle.exp(z - z.max(axis=-1, keepdim=True))
        return paddle.log(e / e.sum(axis=-1, keepdim=True))


class Scorer(nn.Layer):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.proj = nn.Linear(d, d, weight_attr=nn.initializer.Normal(std=1.0))

    def forward(self, x: Any) -> Any:
        return paddle.exp(self.proj(x))


class Gate(nn.Layer):
    def forward(self, x: Any) -> Any:
        return paddle.exp(x)


class Classifier(nn.Layer):
    def __init__(self, head: nn.Layer, d: int = 8, classes: int = 3) -> None:
        super().__init__()
        self.log_head = isinstance(head, LogSoftmaxHead)
        self.enc = nn.Linear(d, classes if self.log_head else d)
        self.head = head
        self.out = nn.Linear(d, classes)
        self.criterion = nn.CrossEntropyLoss()

    def forward(self, x: Any, y: Any) -> Any:
        h = self.head(self.enc(x))
        if self.log_head:
            return F.nll_loss(h, y)
        return self.criterion(self.out(h), y)


class Positional(nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.tok = nn.Embedding(50, 8)
        self.pos = nn.Embedding(16, 8)
        self.out = nn.Linear(8, 3)

    def forward(self, ids: Any, y: Any) -> Any:
        positions = paddle.arange(ids.shape[1]).unsqueeze(0)
        return F.cross_entropy(self.out((self.tok(ids) + self.pos(positions)).mean(1)), y)


class Backbone(nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(16, 16)
        self.head = nn.Linear(16, 1)

    def forward(self, x: Any, y: Any) -> Any:
        return F.mse_loss(self.head(self.body(x)), y)


def grouped(lr: float, body_factor: float) -> tuple[Any, Any]:
    """A Backbone whose SGD has two parameter groups: the body's with a ``learning_rate`` factor."""
    paddle.seed(0)
    model = Backbone()
    groups = [
        {"params": model.body.parameters(), "learning_rate": body_factor},
        {"params": model.head.parameters()},
    ]
    return model, paddle.optimizer.SGD(learning_rate=lr, parameters=groups)


def model_loss(model: Any, batch: Any) -> Any:
    return model(batch[0], batch[1])


def first_incident(model: Any, data: list[Any], tmp_path: Path) -> Any:
    opt = paddle.optimizer.SGD(parameters=model.parameters(), learning_rate=1e-3)
    guard = Guard(model, opt, run=tmp_path / "run", loss_fn=model_loss, policy="stop")
    with pytest.raises((GuardStopped, ValueError, IndexError)):
        for i, batch in enumerate(data):
            with guard.step(i, batch) as g:
                g.backward(model_loss(model, batch))
                g.optimizer_step()
    return guard.incidents[0]


def xy(d: int = 8, scale: float = 1.0, seq: int | None = None, label: int | None = None) -> tuple[Any, Any]:
    paddle.seed(3)
    x = paddle.randint(0, 50, [4, seq]) if seq else paddle.randn([4, d]) * scale
    return x, paddle.to_tensor([0, 1, 2, label if label is not None else 1])


def test_planted_log_of_underflowed_softmax(tmp_path: Path) -> None:
    paddle.seed(0)
    inc = first_incident(Classifier(LogSoftmaxHead()), [xy()], tmp_path)
    mod = inc.localization["first_nonfinite_module"]
    assert (mod["module"], mod["type"]) == ("head", "LogSoftmaxHead")


def test_planted_std1_linear_saturates(tmp_path: Path) -> None:
    paddle.seed(0)
    inc = first_incident(Classifier(Scorer(64), d=64), [xy(64, scale=10.0)], tmp_path)
    assert (
        inc.localization["first_nonfinite_module"]["module"],
        inc.localization["first_nonfinite_module"]["type"],
    ) == ("head", "Scorer")


def test_planted_unnormalized_0_255_input(tmp_path: Path) -> None:
    paddle.seed(0)
    x = paddle.randint(0, 256, [4, 8]).astype("float32")
    x[0, 0] = 255.0
    inc = first_incident(Classifier(Gate()), [(x, paddle.to_tensor([0, 1, 2, 1]))], tmp_path)
    assert inc.localization["first_nonfinite_module"]["module"] == "head"
    assert any("0–255" in h for h in inc.localization["hints"])


def test_planted_label_out_of_range(tmp_path: Path) -> None:
    paddle.seed(0)
    inc = first_incident(Classifier(Gate()), [xy(scale=0.1, label=7)], tmp_path)
    assert str(inc.kind) == "error"
    assert inc.localization["raised_in"] == "criterion"


def test_planted_sequence_longer_than_the_position_table(tmp_path: Path) -> None:
    paddle.seed(0)
    inc = first_incident(Positional(), [xy(seq=12), xy(seq=20)], tmp_path)
    assert inc.step == 1 and inc.localization["raised_in"] == "pos"
    assert any("16 rows" in h for h in inc.localization["hints"])


def test_planted_lr_1e3_on_a_fresh_head_names_the_head(tmp_path: Path) -> None:
    model, opt = grouped(1e-3, 1e-3)  # the body's factor: an lr of 1e-6 for it
    paddle.seed(5)
    data = [(paddle.randn([8, 16]) * 30, paddle.randn([8, 1])) for _ in range(60)]
    guard = Guard(
        model, opt, run=tmp_path / "run", loss_fn=model_loss, spikes=SpikeOptions("stop", window=10, warmup=5)
    )
    with pytest.raises(GuardStopped, match="spike"):
        for i, batch in enumerate(data):
            with guard.step(i, batch) as step:
                step.backward(model_loss(model, batch))
                step.optimizer_step()
    assert guard.incidents[0].localization["largest_update"]["parameter"].startswith("head.")


def test_replay_of_a_paddle_dump_is_reproducible(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    model, opt = mlp()
    guard = Guard(model, opt, run=tmp_path / "run", policy="warn", loss_fn=ce)
    for i, batch in enumerate(batches(4, nan_at=3)):
        with guard.step(i, batch) as g:
            g.backward(ce(model, batch))
            g.optimizer_step()
    guard.close()
    (tmp_path / "paddle_entry.py").write_text(
        textwrap.dedent(
            """
            import paddle
            import paddle.nn.functional as F

            def build():
                paddle.seed(0)
                nn = paddle.nn
                model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 3))
                opt = paddle.optimizer.AdamW(parameters=model.parameters(), learning_rate=1e-2)
                return model, opt, lambda m, b: F.cross_entropy(m(b[0]), b[1])
            """
        )
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("paddle_entry", None)
    dump = tmp_path / "run" / "incidents" / "step-3"
    assert main(["guard", "replay", str(dump), "--entry", "paddle_entry:build", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["result"]["verdict"] == "reproducible"


def test_hapi_callback_skips_a_nan_batch_inside_model_fit(tmp_path: Path) -> None:
    from envkit.guard.hapi import GuardCallback

    paddle.seed(0)
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    model = paddle.Model(net)
    model.prepare(
        paddle.optimizer.Adam(parameters=net.parameters(), learning_rate=1e-2), nn.CrossEntropyLoss()
    )
    x = paddle.randn([16, 8])
    x[9, :] = math.nan  # in the third batch of 4
    y = paddle.randint(0, 3, [16, 1])
    data = paddle.io.TensorDataset([x, y])
    callback = GuardCallback(tmp_path / "run", clip=1.0)
    model.fit(data, batch_size=4, epochs=1, shuffle=False, verbose=0, callbacks=[callback])
    guard = callback.guard
    assert guard is not None
    assert [r.skipped is not None for r in guard.records] == [False, False, True, False]
    assert guard.incidents[0].step == 2 and guard.incidents[0].dump == "incidents/step-2"
    assert all(math.isfinite(float(p.sum())) for p in net.parameters())
    assert "minimize" not in vars(model._optimizer)  # the wrappers are gone after fit
    assert main(["guard", "show", str(tmp_path / "run")]) == 1


def test_a_learning_rate_spike_is_an_update_spike_before_it_is_applied(tmp_path: Path) -> None:
    """Paddle records each group's lr and update ratio per step, and a 5000× lr (set_lr at step 30)
    is the named cause, skipped before the optimizer applies it (the weights stay as they were)."""
    model, opt = mlp()
    guard = Guard(model, opt, run=tmp_path / "run", loss_fn=ce)
    weights: list[str] = []
    for i, batch in enumerate(batches(40)):
        if i == 30:
            opt.set_lr(opt.get_lr() * 5000)
            weights = numbers(model, [])
        with guard.step(i, batch) as g:
            g.backward(ce(model, batch))
            g.optimizer_step()
        if i == 30:
            assert numbers(model, []) == weights  # skipped: not applied
            opt.set_lr(1e-2)
    guard.close()
    first = guard.records[0]
    assert first.lrs == pytest.approx([1e-2]) and first.update_ratios and first.update_ratios[0] > 0
    [incident] = guard.incidents
    assert (incident.step, str(incident.kind), incident.action) == (30, "update-spike", "skipped")
    assert "the learning rate is 50" in incident.message and "5,000× the largest before" in incident.message


def test_parameter_groups_have_their_own_lr_and_update_ratio(tmp_path: Path) -> None:
    model, opt = grouped(1e-2, 0.1)  # Paddle's factor: 1e-3 for the body
    guard = Guard(model, opt, run=tmp_path / "run")
    batch = (paddle.randn([8, 16]), paddle.randn([8, 1]))
    with guard.step(0, batch) as g:
        g.backward(model_loss(model, batch))
        a = guard.adapter
        grads = {n: p.grad.astype("float64") for n, p in model.named_parameters()}
        weights = {n: p.astype("float64") for n, p in model.named_parameters()}
        g.optimizer_step()
    guard.close()

    def norm(parts: dict[str, Any], prefix: str) -> float:
        return math.sqrt(sum(float(t.square().sum()) for n, t in parts.items() if n.startswith(prefix)))

    [rec] = guard.records
    assert rec.lrs == pytest.approx([1e-3, 1e-2])
    expected = [
        lr * norm(grads, p) / norm(weights, p)
        for lr, p in zip(rec.lrs or [], ("body.", "head."), strict=True)
    ]
    assert rec.update_ratios == pytest.approx(expected, rel=1e-5)
    assert a.group_lrs(a.lr()) == rec.lrs


class Buffered(nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.register_buffer("seen", paddle.zeros([1]))
        self.inner = nn.Sequential(nn.Linear(2, 2))
        self.inner[0].register_buffer("scale", paddle.ones([2]), persistable=False)

    def forward(self, x: Any) -> Any:
        self.seen.set_value(self.seen + 1)
        return self.inner(self.fc(x)) * self.inner[0].scale


def test_buffers_are_named_buffers_copied_even_one_registered_later(tmp_path: Path) -> None:
    model = Buffered()
    opt = paddle.optimizer.SGD(parameters=model.parameters())
    guard = Guard(model, opt, run=tmp_path / "run")
    model.fc.register_buffer("late", paddle.full([3], 7.0))  # after the guard was made
    saved = guard.adapter.buffers()
    assert list(saved) == [n for n, _ in model.named_buffers()] == ["seen", "fc.late", "inner.0.scale"]
    for n, b in model.named_buffers():
        assert saved[n].numpy().tolist() == b.numpy().tolist() and saved[n] is not b
    model(paddle.randn([3, 4]))
    assert saved["seen"].item() == 0.0 and model.seen.item() == 1.0  # a copy, not the live buffer
    guard.close()


def test_a_kernel_paddle_lacks_turns_the_fast_norm_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """squared_l2_norm missing for a dtype (float16/bfloat16 on the CPU raise NotFound, a
    RuntimeError): that step and the rest of the run take clip_grad_norm_'s arithmetic."""
    from envkit.guard import paddle_adapter

    model, opt = mlp()
    guard = Guard(model, opt, run=tmp_path / "run")
    a = guard.adapter
    assert isinstance(a, paddle_adapter.PaddleAdapter) and a._fast_norm

    def missing(x: Any) -> Any:
        raise RuntimeError("(NotFound) The kernel with key (CPU, Undefined(AnyLayout), float16) ...")

    monkeypatch.setattr(paddle_adapter, "_SQUARED_L2", missing)
    for i, batch in enumerate(batches(2)):
        with guard.step(i, batch) as g:
            g.backward(ce(model, batch))
            ref = float(paddle.nn.utils.clip_grad_norm_(model.parameters(), 1e9))
            g.optimizer_step()
        assert guard.records[-1].grad_norm == ref and not a._fast_norm
    assert list(a.last_param_norms()) == [n for n, _ in model.named_parameters()]
    guard.close()


def test_a_clipped_step_computes_clip_grad_norms_total_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With clip= the recorded norm is clip_grad_norm_'s own total, the one clip() scales by (not a
    second norm of another arithmetic), and the update ratio still comes with it."""
    from envkit.guard import paddle_adapter

    calls: list[int] = []
    exact = paddle_adapter.PaddleAdapter._exact_norm

    def counted(self: Any, grads: list[Any]) -> Any:
        calls.append(len(grads))
        return exact(self, grads)

    monkeypatch.setattr(paddle_adapter.PaddleAdapter, "_exact_norm", counted)
    model, opt = mlp()
    guard = Guard(model, opt, run=tmp_path / "run", clip=0.05)
    for i, batch in enumerate(batches(3)):
        with guard.step(i, batch) as g:
            g.backward(ce(model, batch))
            ref = float(paddle.nn.utils.clip_grad_norm_(model.parameters(), 1e9))
            g.optimizer_step()
        rec = guard.records[-1]
        assert (
            rec.grad_norm == ref and rec.update_ratios and rec.clipped_norm == pytest.approx(0.05, rel=1e-4)
        )
    guard.close()
    assert calls == [4, 4, 4]


def test_a_paddle_without_the_private_calls_takes_the_public_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """_getitem_from_offset and core's grad switch are Paddle's own internals: without them, item()
    and paddle.set_grad_enabled give the same records (and the grad mode is restored)."""
    from envkit.guard import paddle_adapter

    def run(folder: str) -> list[tuple[str, str]]:
        model, opt = mlp()
        guard = Guard(model, opt, run=tmp_path / folder)
        for i, batch in enumerate(batches(3)):
            with guard.step(i, batch) as g:
                g.backward(ce(model, batch))
                g.optimizer_step()
        guard.close()
        return [(r.loss.hex(), r.grad_norm.hex()) for r in guard.records]

    expected = run("internals")
    monkeypatch.setattr(paddle_adapter, "_ITEM_AT", None)
    monkeypatch.setattr(paddle_adapter, "_HAS_GRAD", paddle.is_grad_enabled)
    monkeypatch.setattr(paddle_adapter, "_SET_GRAD", paddle.set_grad_enabled)
    assert run("public") == expected
    assert paddle.is_grad_enabled()


def cuda_scaler(monkeypatch: pytest.MonkeyPatch, init: float = 1024.0) -> Any:
    """A real ``paddle.amp.GradScaler``, enabled as on a CUDA place (its constructor turns it off
    on the CPU; only that check sees a GPU place): scale, unscale_, step and update are Paddle's.
    The AMP state ``auto_cast`` leaves behind (float16: the scaler stays on) is put back after."""
    from types import SimpleNamespace

    from paddle.amp import grad_scaler
    from paddle.amp.auto_cast import amp_global_state

    state = amp_global_state()
    monkeypatch.setattr(state, "amp_dtype", state.amp_dtype)
    gpu = SimpleNamespace(
        is_gpu_place=lambda: True, is_xpu_place=lambda: False, is_custom_place=lambda: False
    )
    with monkeypatch.context() as m:
        m.setattr(grad_scaler, "_dygraph_tracer", lambda: SimpleNamespace(_expected_place=gpu))
        scaler = paddle.amp.GradScaler(init_loss_scaling=init)
    assert scaler.is_enable() and list(scaler._scale.shape) == [1]
    return scaler


def amp_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, guarded: bool, init: float, big: int | None = None
) -> tuple[list[str], Any]:
    """Four steps of Paddle's AMP loop (``auto_cast`` forward, the GradScaler's scale/step/update),
    guarded or as Paddle's docs write it; step ``big``'s inputs 10⁴× larger."""
    model, opt = mlp()
    scaler = cuda_scaler(monkeypatch, init)
    guard = (
        Guard(model, opt, run=tmp_path / ("run" if guarded else "plain"), scaler=scaler) if guarded else None
    )
    losses = []
    for i, batch in enumerate(batches(4)):
        if i == big:
            batch = (batch[0] * 1e4, batch[1])
        if guard is None:
            with paddle.amp.auto_cast(dtype="float16"):
                loss = ce(model, batch)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            opt.clear_grad()
        else:
            with guard.step(i, batch) as g:
                with paddle.amp.auto_cast(dtype="float16"):
                    loss = ce(model, batch)
                g.backward(loss)
                g.optimizer_step()
        losses.append(float(loss))
        assert scaler.is_enable()
    if guard is not None:
        guard.close()
    return numbers(model, losses), guard


def test_a_grad_scaler_run_is_guarded_and_bitwise_the_unguarded_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a GPU the GradScaler's scale is a float32 tensor of shape [1], and ``float()`` of one
    raises in Paddle 3: the guard's read of it stopped every AMP training at its first step."""
    plain, _ = amp_run(tmp_path, monkeypatch, False, 1024.0)
    guarded, guard = amp_run(tmp_path, monkeypatch, True, 1024.0)
    assert guarded == plain
    assert [r.loss_scale for r in guard.records] == [1024.0] * 4
    assert not guard.incidents


def test_a_loss_scale_overflow_goes_as_in_paddles_own_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scaled gradients that overflow float32: the GradScaler skips the step and lowers the scale, as
    unguarded, and the guard records the overflow without an incident. Paddle 3.3.1's own
    ``GradScaler._update`` formats ``float(self._scale)`` on an overflow, which raises under numpy
    2.4 (a [1] tensor): then the unguarded loop stops there and the guarded one must stop the same
    way, recorded as raised, never as a skip."""
    try:
        plain, _ = amp_run(tmp_path, monkeypatch, False, 2.0**127, big=1)
    except TypeError as upstream:
        with pytest.raises(TypeError, match=str(upstream)[:40]):
            amp_run(tmp_path, monkeypatch, True, 2.0**127, big=1)
        lines = (tmp_path / "run" / "steps.jsonl").read_text(encoding="utf-8").splitlines()
        last = json.loads(lines[-1])
        assert last["step"] == 1 and last["skipped"] is None and "TypeError" in last["raised"]
        return
    guarded, guard = amp_run(tmp_path, monkeypatch, True, 2.0**127, big=1)
    assert guarded == plain
    assert guard.records[1].overflow and guard.records[1].skipped and not guard.incidents
    assert guard.records[2].loss_scale == guard.records[1].loss_scale / 2


def test_a_step_the_guard_skips_under_a_grad_scaler_leaves_it_ready_and_its_scale_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lr × 5000 at step 25 of 30 under Paddle's AMP loop: the guard skips it as an update spike
    and ends the GradScaler's step without lowering the scale or touching its counts (the next
    ``unscale_`` used to raise 'unscale_() has already been called on this optimizer')."""
    model, opt = mlp()
    scaler = cuda_scaler(monkeypatch, 1024.0)
    guard = Guard(model, opt, run=tmp_path / "run", scaler=scaler)
    counts = []
    for i, batch in enumerate(batches(30)):
        if i == 25:
            opt.set_lr(opt.get_lr() * 5000)
        counts.append((float(scaler._scale.item()), scaler._incr_count, scaler._decr_count))
        with guard.step(i, batch) as g:
            with paddle.amp.auto_cast(dtype="float16"):
                loss = ce(model, batch)
            g.backward(loss)
            g.optimizer_step()
    guard.close()
    assert [(r.step, r.skipped is not None) for r in guard.records][24:] == [
        (24, False),
        *((i, True) for i in range(25, 30)),
    ]
    assert str(guard.incidents[0].kind) == "update-spike" and not guard.records[25].overflow
    assert counts[25] == counts[29] == (1024.0, 25, 0)


def test_a_nan_batch_the_guard_skips_under_a_grad_scaler_goes_as_paddles_own_skip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A NaN batch at step 2: its gradients overflow, the guard records a nonfinite-loss incident and
    ends the step as the GradScaler's own skip (its step and update: the scale backs off). Paddle
    3.3.1's ``_update`` raises a TypeError there under numpy 2.4 (a [1] tensor to float): then the
    unguarded loop raises it too, and the guarded one the same."""
    nan = batches(6, nan_at=2)

    def run(guarded: bool) -> tuple[list[float], Any]:
        model, opt = mlp()
        scaler = cuda_scaler(monkeypatch, 1024.0)
        guard = Guard(model, opt, run=tmp_path / f"run-{guarded}", scaler=scaler) if guarded else None
        scales = []
        for i, batch in enumerate(nan):
            scales.append(float(scaler._scale.item()))
            if guard is None:
                with paddle.amp.auto_cast(dtype="float16"):
                    loss = ce(model, batch)
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
                opt.clear_grad()
                continue
            with guard.step(i, batch) as g:
                with paddle.amp.auto_cast(dtype="float16"):
                    loss = ce(model, batch)
                g.backward(loss)
                g.optimizer_step()
        return scales, guard

    try:
        plain, _ = run(False)
    except TypeError as upstream:
        with pytest.raises(TypeError, match=str(upstream)[:40]):
            run(True)
        return
    scales, guard = run(True)
    assert scales == plain and scales[3] == scales[2] / 2
    assert [(i.step, str(i.kind), i.action) for i in guard.incidents] == [(2, "nonfinite-loss", "skipped")]
