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
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from envkit.incident.replay import align_names, replay_dump  # noqa: E402

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


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("ddp")
    (tmp / "worker.py").write_text(WORKER)
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


def test_a_ddp_dump_replays_with_the_bare_model(ddp_run: Path) -> None:
    dump = ddp_run / "rank-1" / "incidents" / "step-2-rank-1"
    header = json.loads((dump / "model.safetensors").read_bytes()[8:].split(b"}}", 1)[0] + b"}}")
    assert any(k.startswith("module.") for k in header)
    verdict = replay_dump(dump, bare)
    assert verdict.verdict == "reproducible", verdict.to_json()
    assert verdict.replays[0]["error"] is None


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
