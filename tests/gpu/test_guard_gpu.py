"""envkit.guard on a real NVIDIA GPU (marker gpu; skipped without CUDA). NOT RUN in the session that
wrote it (no GPU was lent): the CUDA generator state in dumps, bitwise-healthy runs, and no host
sync on the steps between reads (``torch.cuda.set_sync_debug_mode("error")`` raises on one)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from envkit.guard import Guard, ReadOptions  # noqa: E402
from envkit.incident.replay import replay_dump  # noqa: E402

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]


def build() -> tuple[Any, Any, Any]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Dropout(0.1), torch.nn.Linear(64, 4)
    )
    model = model.cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
    return model, opt, lambda m, b: torch.nn.functional.cross_entropy(m(b[0]), b[1])


def batches(n: int, nan_at: int | None = None) -> list[tuple[Any, Any]]:
    g = torch.Generator(device="cuda").manual_seed(1)
    out = [
        (
            torch.randn(16, 32, device="cuda", generator=g),
            torch.randint(0, 4, (16,), device="cuda", generator=g),
        )
        for _ in range(n)
    ]
    if nan_at is not None:
        out[nan_at][0][0, 0] = math.nan
    return out


def test_healthy_cuda_run_is_bitwise_the_unguarded_loop(tmp_path: Path) -> None:
    model, opt, loss_fn = build()
    ref = []
    for batch in batches(10):
        loss = loss_fn(model, batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        ref.append(loss.item())
    model, opt, loss_fn = build()
    guard = Guard(model, opt, run=tmp_path / "run", clip=1.0, reads=ReadOptions(5))
    for i, batch in enumerate(batches(10)):
        with guard.step(i, batch) as g:
            g.backward(loss_fn(model, batch))
            g.optimizer_step()
    guard.close()
    assert [r.loss for r in guard.records] == ref
    assert guard.check_every == 5  # deferred on the GPU by default


def test_no_host_sync_between_reads(tmp_path: Path) -> None:
    model, opt, loss_fn = build()
    guard = Guard(model, opt, run=tmp_path / "run", clip=1.0, reads=ReadOptions(4), spikes=None)
    data = batches(8)
    for i, batch in enumerate(data):
        with guard.step(i, batch) as g:
            loss = loss_fn(model, batch)
            g.backward(loss)
            if (i + 1) % 4:  # a step between reads: any device-to-host copy raises here
                torch.cuda.set_sync_debug_mode("error")
            try:
                g.optimizer_step()
            finally:
                torch.cuda.set_sync_debug_mode("default")
    guard.close()
    assert len(guard.records) == 8


def test_cuda_dump_keeps_the_cuda_generator_and_replays(tmp_path: Path) -> None:
    model, opt, loss_fn = build()
    guard = Guard(model, opt, run=tmp_path / "run", policy="warn", loss_fn=loss_fn)
    for i, batch in enumerate(batches(4, nan_at=2)):
        with guard.step(i, batch) as g:
            g.backward(loss_fn(model, batch))
            g.optimizer_step()
    guard.close()
    dump = tmp_path / "run" / "incidents" / "step-2"
    from safetensors.numpy import load_file

    assert "torch.cuda.0" in load_file(str(dump / "rng.safetensors"))
    assert json.loads((dump / "manifest.json").read_text())["exact"] is True
    assert replay_dump(dump, build).verdict == "reproducible"
