"""N-way comparison of a fleet run: 1,000 stored reports (the issue's bound: under 5 s).

The reports have the payload's shape and a realistic size (torch and paddle, rnn and bert, 10 steps,
per-parameter grad norms, 150 distributions: ~60 KB each): 990 bitwise identical, 8 with a thread
count of 2 (rounding-noise differences), 2 with one flipped low bit (same fingerprint: suspect).
Timed: loading and checking every file, grouping, judging the outliers (``compare_n`` on STORE/RUN).
"""

from __future__ import annotations

import json
import random
import struct
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._goals import scaled
from envkit.comparison.many import compare_n

N = scaled(1000, 20)
STEPS = 10
PARAMS = {"rnn": 4, "bert": 40}


def _flip(value: float) -> float:
    (bits,) = struct.unpack("<q", struct.pack("<d", value))
    (out,) = struct.unpack("<d", struct.pack("<q", bits ^ 1))
    return float(out)


def _workload(rng: random.Random, n_params: int, noise: float) -> dict[str, Any]:
    names = [f"layer{i // 4}.p{i}" for i in range(n_params)]
    steps = []
    for s in range(1, STEPS + 1):
        loss = 2.0 / s * (1 + noise * s)
        steps.append(
            {
                "step": s,
                "loss": loss,
                "grad_norm": loss * 3.1,
                "op_error": None,
                "finite": {"loss": True, "grads": True, "params": True},
                "first_nonfinite_param": None,
            }
        )
    norms = {n: rng.uniform(0.1, 2.0) for n in names}
    return {
        "status": "ok",
        "params": names,
        "steps": steps,
        "nonfinite": None,
        "param_grad_norms": {"first": dict(norms), "last": {n: v * (1 + noise) for n, v in norms.items()}},
        "final_param_norms": {n: v * 5 for n, v in norms.items()},
        "final_params_sha256": f"{noise!r}".ljust(64, "0"),
    }


def _report(host: str, threads: int, noise: float) -> dict[str, Any]:
    rng = random.Random(7)
    fw = {
        name: {
            "status": "ok",
            "applied": {},
            "device": "cpu",
            "info": {"version": "2.13.0", "gpus": [], "switches": {"num_threads": threads}},
            "workloads": {wl: _workload(rng, n, noise) for wl, n in PARAMS.items()},
        }
        for name in ("paddle", "torch")
    }
    dists = {f"package-{i}": f"1.{i}.0" for i in range(150)}
    return {
        "schema": 1,
        "kind": "envkit-probe-report",
        "label": "run-bench",
        "config": {
            "seed": 0,
            "steps": STEPS,
            "workloads": ["rnn", "bert"],
            "mode": "strict",
            "dtype": "float32",
            "device": "cpu",
            "tf32": False,
            "autocast": None,
            "threads": threads,
        },
        "fingerprint": {
            "host": host,
            "env": {"OMP_NUM_THREADS": str(threads)},
            "distributions": dists,
            "cpu": {"model": "Xeon", "affinity": 64},
            "python": {"version": "3.11.7"},
        },
        "frameworks": fw,
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run-bench"
        run.mkdir()
        (run / "run.json").write_text(json.dumps({"run": "run-bench", "scheduler": "slurm"}))
        base = _report("x", 1, 0.0)
        for i in range(N):
            host = f"node{i:04d}"
            if i % 125 == 7:  # 8 nodes with 2 threads
                report = _report(host, 2, 1e-7)
            else:
                report = json.loads(json.dumps(base))
                report["fingerprint"]["host"] = host
                if i in (N // 2, N - N // 10):  # 2 silently faulty nodes
                    step = report["frameworks"]["torch"]["workloads"]["bert"]["steps"][3]
                    step["loss"] = _flip(step["loss"])
            (run / f"{host}.json").write_text(json.dumps(report, indent=1, sort_keys=True))
        size = sum(p.stat().st_size for p in run.glob("*.json")) / N
        start = time.perf_counter()
        done = compare_n([str(run)], Path(tmp))
        seconds = time.perf_counter() - start
    r = done.result
    suspects = [o.name for o in r.outliers if o.suspect]
    print(f"   {N} reports ({size / 1e3:.0f} KB each) compared N-way in {seconds:.2f} s (bound: 5 s)")
    print(
        f"   {len(r.groups)} groups, majority {len(r.groups[0].members)}, {len(r.outliers)} outliers, "
        f"suspects: {', '.join(suspects)}"
    )
