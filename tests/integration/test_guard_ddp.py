"""Two real processes (torch DDP over gloo, CPU), a NaN planted on rank 1 only: every rank skips the
same step, nobody hangs in the all-reduce (the subprocess timeout proves it), the report names rank 1."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

pytestmark = [pytest.mark.frameworks, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
WORKER = textwrap.dedent(
    """
    import datetime, json, math, os, sys, warnings
    import torch, torch.distributed as dist
    from envkit.guard import Guard

    warnings.simplefilter("ignore")
    rank, run = int(os.environ["RANK"]), sys.argv[1]
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    model = torch.nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    guard = Guard(model, opt, run=run, clip=1.0)
    g = torch.Generator().manual_seed(10 + rank)
    applied = []
    for step in range(5):
        x, y = torch.randn(6, 4, generator=g), torch.randn(6, 1, generator=g)
        if rank == 1 and step == 2:
            x[0, 0] = math.nan
        with guard.step(step, (x, y)) as s:
            s.backward(torch.nn.functional.mse_loss(model(x), y))
            if rank == 1 and step == 4:  # a faulty device: its all-reduced gradients come out wrong
                for p in model.parameters():
                    p.grad.mul_(1.01)
            applied.append(s.optimizer_step())
    guard.close()
    weights = [float(p.detach().double().sum()) for p in model.parameters()]
    print(json.dumps({"rank": rank, "applied": applied, "weights": weights}))
    dist.destroy_process_group()
    """
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_nan_on_one_rank_skips_everywhere_without_a_hang(tmp_path: Path) -> None:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    port = _free_port()
    procs = []
    for rank in range(2):
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "RANK": str(rank),
            "WORLD_SIZE": "2",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            "OMP_NUM_THREADS": "1",
        }
        procs.append(
            subprocess.Popen(
                [sys.executable, str(script), str(tmp_path / "run")],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    results = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=240)  # a hang in the all-reduce fails here
            assert p.returncode == 0, err[-3000:]
            results.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert [r["applied"] for r in results] == [[True, True, False, True, True]] * 2
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    nan, mismatch = report["guard"]["incidents"]
    assert nan["step"] == 2 and nan["ranks"] == [1]
    assert "on rank 1 of 2" in nan["message"]
    # fairseq's check: after the all-reduce the replicas must agree; two that differ: both named
    assert (mismatch["step"], mismatch["kind"], mismatch["ranks"]) == (4, "rank-mismatch", [0, 1])
    assert "rank 1: " in mismatch["message"]
    steps = report["guard"]["steps"]
    assert steps[2]["rank_losses"][0] != "nan" and steps[2]["rank_losses"][1] == "nan"
    assert (tmp_path / "run" / "rank-1" / "report.json").is_file()


PADDLE_WORKER = textwrap.dedent(
    """
    import json, math, os, sys, warnings
    import paddle, paddle.distributed as dist
    from envkit.guard import Guard

    def work(run):
        warnings.simplefilter("ignore")
        dist.init_parallel_env()
        rank = dist.get_rank()
        paddle.seed(0)
        net = paddle.nn.Sequential(paddle.nn.Linear(4, 8), paddle.nn.Tanh(), paddle.nn.Linear(8, 1))
        model = paddle.DataParallel(net)
        opt = paddle.optimizer.SGD(parameters=model.parameters(), learning_rate=0.1)
        guard = Guard(model, opt, run=run, clip=1.0)
        paddle.seed(10 + rank)
        applied = []
        for step in range(5):
            x, y = paddle.randn([6, 4]), paddle.randn([6, 1])
            if rank == 1 and step == 2:
                x = paddle.full([6, 4], math.nan)
            with guard.step(step, (x, y)) as s:
                s.backward(paddle.nn.functional.mse_loss(model(x), y))
                applied.append(s.optimizer_step())
        guard.close()
        weights = [float(p.astype("float64").sum()) for p in model.parameters()]
        with open(os.path.join(run, f"result-{rank}.json"), "w") as fh:
            json.dump({"rank": rank, "applied": applied, "weights": weights}, fh)

    if __name__ == "__main__":
        os.makedirs(sys.argv[1], exist_ok=True)
        dist.spawn(work, args=(sys.argv[1],), nprocs=2, backend="gloo")
    """
)


def test_paddle_cpu_collective_nan_on_one_rank(tmp_path: Path) -> None:
    pytest.importorskip("paddle")
    script = tmp_path / "paddle_worker.py"
    script.write_text(PADDLE_WORKER)
    run = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, str(script), str(run)], env=env, capture_output=True, text=True, timeout=240
    )  # a hang in the all-reduce fails here
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = [json.loads((run / f"result-{r}.json").read_text()) for r in range(2)]
    assert [r["applied"] for r in results] == [[True, True, False, True, True]] * 2
    assert results[0]["weights"] == results[1]["weights"]
    (incident,) = json.loads((run / "report.json").read_text())["guard"]["incidents"]
    assert incident["step"] == 2 and incident["ranks"] == [1]
