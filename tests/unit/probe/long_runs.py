"""Guarded-run reports of many steps (the shape ``envkit.guard.runlog.RunLog`` writes), numbers chosen here.

Used by the HTML tests and ``benchmarks/bench_html.py``: a loss that decays with a seeded wobble, a
grad norm around 1, ``params`` parameters; side B can carry rounding-sized noise that grows with the
steps, a relative spike at one step, and a few parameters that differ.
"""

from __future__ import annotations

import math
import random
from typing import Any

from envkit.probe.model import KIND, SCHEMA


def long_report(
    steps: int,
    *,
    params: int = 100,
    host: str = "host-a",
    name: str = "exp1",
    noise: float = 0.0,
    spikes: dict[int, float] | None = None,
    differing: int = 0,
    prefix: str = "",
) -> dict[str, Any]:
    """A probe report of one guarded workload ``name``; ``noise`` is the relative difference at the last
    step (growing linearly from 0), ``spikes`` maps a step to the relative change of its loss, and the
    first ``differing`` parameters' norms are changed by a relative 1e-7 × their rank; ``prefix`` starts
    every parameter name."""
    rng = random.Random(0)  # the same base numbers on every side
    spikes = spikes or {}
    rows = []
    for i in range(1, steps + 1):
        loss = 2.0 * math.exp(-i / (steps / 3)) + 0.1 + 0.01 * rng.random()
        norm = 1.0 + 0.2 * rng.random()
        factor = 1.0 + noise * i / steps
        rows.append(
            {
                "step": i,
                "loss": loss * factor * (1.0 + spikes.get(i, 0.0)),
                "grad_norm": norm * factor,
                "finite": {"loss": True, "grads": True},
            }
        )
    names = [
        f"{prefix}layers.{k // 4}.{('weight', 'bias', 'norm.weight', 'norm.bias')[k % 4]}"
        for k in range(params)
    ]
    base = {p: 0.5 + k / params for k, p in enumerate(names)}
    changed = {p: v * (1 + 1e-7 * (k + 1)) if k < differing else v for k, (p, v) in enumerate(base.items())}
    workload = {
        "status": "ok",
        "params": names,
        "steps": rows,
        "param_grad_norms": {"first": dict(changed), "last": dict(changed)},
        "final_param_norms": dict(changed),
        "final_params_sha256": "a" * 64 if not (differing or noise or spikes) else "b" * 64,
        "nonfinite": None,
    }
    return {
        "schema": SCHEMA,
        "kind": KIND,
        "label": name,
        "config": {"seed": 0, "steps": steps, "workloads": [name], "mode": "guard", "dtype": "float32"},
        "fingerprint": {"host": host, "env": {}, "distributions": {"torch": "2.15.0"}},
        "frameworks": {
            "torch": {
                "status": "ok",
                "info": {"version": "2.15.0", "switches": {"num_threads": 1}},
                "workloads": {name: workload},
            }
        },
    }
