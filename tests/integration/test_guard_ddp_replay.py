"""A DDP dump replays with the documented entry (issue 44 item 5): names ``module.…`` either way.

Two real processes train a DistributedDataParallel model over gloo (CPU) under the guard; rank 1's
batch holds a NaN at step 2, so each rank dumps its step. The dump's model names start with
``module.`` (the wrapper's); ``guard replay`` with an entry that returns the bare model maps them
(before: ``missing 0.weight … unknown module.0.weight …``). The other way, a dump of a bare model
replays with an entry that returns the DDP-wrapped one (a one-process gloo group here).
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from envkit.incident.replay import align_names, replay_dump  # noqa: E402
from envkit.incident.show import render_replay  # noqa: E402

pytestmark = [pytest.mark.frameworks, pytest.mark.filterwarnings("ignore::UserWarning")]

REPO = Path(__file__).resolve().parents[2]
WORKER = textwrap.dedent(
    """
    import datetime, math, os, sys, warnings
    import torch, torch.distributed as dist
    from envkit.guard import Guard

    warnings.simplefilter("ignore")
    rank, run = int(os.environ["RANK"]), sys.argv[1]
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    model = torch.nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    guard = Guard(model, opt, run=run)
    g = torch.Generator().manual_seed(10 + rank)
    for step in range(4):
        x, y = torch.randn(6, 4, generator=g), torch.randn(6, 1, generator=g)
        if rank == 1 and step == 2:
            x[0, 0] = math.nan
        with guard.step(step, (x, y)) as s:
            s.backward(torch.nn.functional.mse_loss(model(x), y))
            s.optimizer_step()
    guard.close()
    dist.destroy_process_group()
    """
)


# DDP under fp16 autocast and a GradScaler("cpu"), two micro-batches a step (the first under no_sync),
# dropout (each rank's generator), the lr x10,000 at step 10 on both ranks: a finite update spike
AMP_WORKER = textwrap.dedent(
    """
    import contextlib, datetime, os, sys, warnings
    import torch, torch.distributed as dist
    from envkit.guard import Guard

    warnings.simplefilter("ignore")
    rank, run = int(os.environ["RANK"]), sys.argv[1]
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Linear(8, 32), torch.nn.GELU(), torch.nn.Dropout(0.2), torch.nn.Linear(32, 4)
    )
    model = torch.nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**12)
    guard = Guard(model, opt, run=run, policy="skip", scaler=scaler)
    torch.manual_seed(100 + rank)  # each rank's own dropout
    g = torch.Generator().manual_seed(10 + rank)
    for step in range(12):
        if step == 10:
            opt.param_groups[0]["lr"] = 10.0
        batches = []
        with guard.step(step, batches) as s:
            for micro in range(2):
                x, y = torch.randn(16, 8, generator=g), torch.randint(0, 4, (16,), generator=g)
                batches.append((x, y))
                sync = model.no_sync() if micro == 0 else contextlib.nullcontext()
                with sync:
                    with torch.autocast("cpu", dtype=torch.float16):
                        loss = torch.nn.functional.cross_entropy(model(x), y) / 2
                    s.backward(loss)
            s.optimizer_step()
        opt.param_groups[0]["lr"] = 1e-3
    guard.close()
    dist.destroy_process_group()
    """
)


def amp_net() -> Any:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(8, 32), torch.nn.GELU(), torch.nn.Dropout(0.2), torch.nn.Linear(32, 4)
    )


def amp_loss(model: Any, batch: Any) -> Any:
    """One micro-batch's loss as the loop computes it (the entry takes one micro-batch)."""
    with torch.autocast("cpu", dtype=torch.float16):
        return torch.nn.functional.cross_entropy(model(batch[0]), batch[1]) / 2


def amp_bare() -> tuple[Any, Any, Any]:
    model = amp_net()
    return model, torch.optim.AdamW(model.parameters(), lr=1e-3), amp_loss


def net() -> Any:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))


def mse(model: Any, batch: Any) -> Any:
    return torch.nn.functional.mse_loss(model(batch[0]), batch[1])


def bare() -> tuple[Any, Any, Any]:
    model = net()
    return model, torch.optim.SGD(model.parameters(), lr=0.1), mse


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _torchrun(tmp: Path, worker: str) -> Path:
    (tmp / "worker.py").write_text(worker)
    port = _free_port()
    procs = []
    for rank in range(2):
        env = {
            **os.environ, "PYTHONPATH": str(REPO), "RANK": str(rank), "WORLD_SIZE": "2",
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "OMP_NUM_THREADS": "1",
        }  # fmt: skip
        procs.append(subprocess.Popen([sys.executable, str(tmp / "worker.py"), str(tmp / "run")], env=env))
    for p in procs:
        assert p.wait(180) == 0
    return tmp / "run"


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _torchrun(tmp_path_factory.mktemp("ddp"), WORKER)


@pytest.fixture(scope="module")
def amp_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _torchrun(tmp_path_factory.mktemp("ddp-amp"), AMP_WORKER)


def test_a_ddp_dump_replays_with_the_bare_model(ddp_run: Path) -> None:
    dump = ddp_run / "rank-1" / "incidents" / "step-2-rank-1"
    header = json.loads((dump / "model.safetensors").read_bytes()[8:].split(b"}}", 1)[0] + b"}}")
    assert any(k.startswith("module.") for k in header)
    verdict = replay_dump(dump, bare)
    assert verdict.verdict == "reproducible", verdict.to_json()
    assert verdict.replays[0]["error"] is None


def test_the_healthy_ranks_dump_replays_the_whole_step_and_names_the_rank_at_fault(ddp_run: Path) -> None:
    """Rank 0's batch was finite; its recorded gradient norm is NaN because the all-reduce averaged in
    rank 1's. Alone, its replay gave a finite norm and said "transient: suspect the device"; with rank
    1's dump beside it (where the run wrote it) both ranks' steps run and their gradients are
    all-reduced: bitwise the recorded NaN, and the fault is said to be rank 1's batch."""
    dump = ddp_run / "incidents" / "step-2-rank-0"
    verdict = replay_dump(dump, bare)
    assert verdict.verdict == "reproducible", verdict.to_json()
    assert verdict.recorded["grad_norm"] != verdict.recorded["grad_norm"]  # NaN, recorded
    assert verdict.replays[0]["loss"] == verdict.recorded["loss"]  # rank 0's own, finite
    assert verdict.localization["rank"] == 1
    assert verdict.localization["nonfinite_batch"]["index"] == [0, 0]
    assert verdict.localization["replayed_as"]["ranks_replayed"] == [0, 1]
    said = "\n".join(verdict.notes)
    assert "the fault is on rank 1, not on rank 0" in said and "batch[0] at [0, 0]" in said
    assert "suspect the device" not in said
    assert "on rank 1 (its step went non-finite" in render_replay(verdict.to_json())


def test_one_ranks_dump_alone_compares_its_loss_and_names_the_rank_the_records_blame(
    ddp_run: Path, tmp_path: Path
) -> None:
    alone = tmp_path / "step-2-rank-0"
    shutil.copytree(ddp_run / "incidents" / "step-2-rank-0", alone)
    verdict = replay_dump(alone, bare)
    assert verdict.verdict == "reproducible", verdict.to_json()
    assert verdict.replays[0]["grad_norm"] == verdict.replays[0]["grad_norm"]  # its own: finite
    said = "\n".join(verdict.notes)
    assert "only this rank's loss was compared" in said
    assert "rank 1 recorded a non-finite loss at this step" in said


def test_another_runs_dump_of_the_same_rank_and_step_is_not_taken(
    ddp_run: Path, amp_run: Path, tmp_path: Path
) -> None:
    both = tmp_path / "dumps"
    shutil.copytree(ddp_run / "incidents" / "step-2-rank-0", both / "step-2-rank-0")
    shutil.copytree(ddp_run / "rank-1" / "incidents" / "step-2-rank-1", both / "step-2-rank-1")
    assert replay_dump(both / "step-2-rank-0", bare).localization["replayed_as"]["ranks_replayed"] == [0, 1]
    # a rank 1 dump of step 2 from another run (its loss is not the one rank 0 recorded for rank 1)
    shutil.rmtree(both / "step-2-rank-1")
    other = next((amp_run / "rank-1" / "incidents").iterdir())
    shutil.copytree(other, both / "step-2-rank-1")
    manifest = json.loads((both / "step-2-rank-1" / "manifest.json").read_text())
    manifest["step"] = 2
    (both / "step-2-rank-1" / "manifest.json").write_text(json.dumps(manifest))
    verdict = replay_dump(both / "step-2-rank-0", bare)
    assert verdict.localization["replayed_as"]["ranks_replayed"] == [0]
    assert "another run's dump" in "\n".join(verdict.localization["replayed_as"]["missing"])


@pytest.mark.parametrize("rank", [0, 1])
def test_a_ddp_fp16_scaler_accumulating_step_replays_bitwise_with_the_bare_model(
    amp_run: Path, rank: int
) -> None:
    """DDP + fp16 autocast + GradScaler + two micro-batches: the update spike's dump of either rank
    replays bitwise with the bare model and an entry that takes one micro-batch (before: the entry's
    step raised on the list of micro-batches; with one, the local gradient norm was not the recorded
    all-reduced one: 'transient')."""
    folder = amp_run / "incidents" if rank == 0 else amp_run / f"rank-{rank}" / "incidents"
    dump = folder / f"step-10-rank-{rank}"
    manifest = json.loads((dump / "manifest.json").read_text())
    assert manifest["kind_of_incident"] == "update-spike" and manifest["backwards"] == 2
    records = json.loads((dump / "records.json").read_text())
    assert records[-1]["loss_scale"] == 4096.0
    verdict = replay_dump(dump, amp_bare)
    assert verdict.verdict == "reproducible", verdict.to_json()
    assert [r["grad_norm"] for r in verdict.replays] == [verdict.recorded["grad_norm"]] * 2
    assert verdict.replays[0]["loss"] == verdict.recorded["loss"]
    said = "\n".join(verdict.notes)
    assert "recorded loss scale 4096" in said and "2 micro-batches" in said and "all-reduced" in said


def test_a_bare_dump_replays_with_a_ddp_wrapped_entry(tmp_path: Path) -> None:
    from envkit.guard import Guard

    model, opt, _ = bare()
    guard = Guard(model, opt, run=tmp_path / "run")
    g = torch.Generator().manual_seed(1)
    for step in range(3):
        x, y = torch.randn(6, 4, generator=g), torch.randn(6, 1, generator=g)
        if step == 2:
            x[1, 1] = float("inf")
        with guard.step(step, (x, y)) as s:
            s.backward(mse(model, (x, y)))
            s.optimizer_step()
    guard.close()
    dist = torch.distributed
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{_free_port()}", rank=0, world_size=1,
        timeout=datetime.timedelta(seconds=60),
    )  # fmt: skip
    try:

        def wrapped() -> tuple[Any, Any, Any]:
            m = torch.nn.parallel.DistributedDataParallel(net())
            return m, torch.optim.SGD(m.parameters(), lr=0.1), mse

        verdict = replay_dump(tmp_path / "run" / "incidents" / "step-2", wrapped)
    finally:
        dist.destroy_process_group()
    assert verdict.verdict == "reproducible", verdict.to_json()


@pytest.mark.parametrize(
    ("saved", "model", "expected"),
    [
        (["module.a.w", "module.b"], ["a.w", "b"], ["a.w", "b"]),
        (["a.w", "b"], ["module.a.w", "module.b"], ["module.a.w", "module.b"]),
        (["_fsdp_wrapped_module.l._fsdp_wrapped_module.w"], ["l.w"], ["l.w"]),
        (["_layers.fc.weight"], ["fc.weight"], ["fc.weight"]),
        (["_orig_mod.x"], ["module.x"], ["module.x"]),
        (["module.a", "module.c"], ["a", "b"], ["module.a", "module.c"]),  # a misfit stays
        (["module.a", "a"], ["a"], ["module.a", "a"]),  # ambiguous: left as it is
        (["module.module.a"], ["module.a"], ["module.a"]),  # a submodule named "module" under DDP: kept
    ],
)
def test_names_that_differ_only_by_wrappers_are_mapped(
    saved: list[str], model: list[str], expected: list[str]
) -> None:
    assert sorted(align_names(dict.fromkeys(saved, 0), model)) == sorted(expected)
