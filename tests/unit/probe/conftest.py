"""Synthetic probe reports for offline tests: shaped like the payload's output, numbers chosen by the test."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envkit.probe.model import ProbeReport, parse_report

PARAMS = ["w", "b"]


def workload(losses: list[float], *, scale: float = 1.0, nonfinite_step: int | None = None) -> dict[str, Any]:
    steps = []
    for i, loss in enumerate(losses, 1):
        value: Any = loss * scale
        finite = nonfinite_step is None or i < nonfinite_step
        steps.append(
            {
                "step": i,
                "loss": value if finite else "nan",
                "grad_norm": value * 2 if finite else "nan",
                "finite": {"loss": finite, "grads": finite, "params": finite},
                "first_nonfinite_param": None if finite else "w",
                "op_error": None,
            }
        )
    norms = {"w": 1.5 * scale, "b": 0.25}
    return {
        "status": "ok",
        "params": PARAMS,
        "steps": steps,
        "param_grad_norms": {"first": dict(norms), "last": dict(norms)},
        "final_param_norms": dict(norms),
        "final_params_sha256": f"{scale!r}",
        "nonfinite": None
        if nonfinite_step is None
        else {"step": nonfinite_step, "what": "loss", "parameter": "w", "op_error": None},
    }


def make_report(host: str = "host-a", label: str = "latest", **kw: Any) -> dict[str, Any]:
    losses = kw.pop("losses", [1.0, 0.9, 0.8])
    scale = kw.pop("scale", 1.0)
    nonfinite_step = kw.pop("nonfinite_step", None)
    switches = {"cuda.matmul.allow_tf32": kw.pop("tf32", False), "num_threads": 2}
    config = {
        "seed": 0,
        "steps": len(losses),
        "workloads": ["bert", "rnn"],
        "mode": "strict",
        "dtype": "float32",
        "device": "cpu",
        "tf32": False,
        "autocast": None,
        "threads": None,
    }
    config.update(kw.pop("config", {}))
    fw = {
        "status": "ok",
        "applied": {},
        "info": {"version": kw.pop("torch", "2.13.0"), "gpus": [], "cudnn": None, "switches": switches},
        "workloads": {
            wl: workload(losses, scale=scale, nonfinite_step=nonfinite_step) for wl in ("bert", "rnn")
        },
    }
    report = {
        "schema": 1,
        "kind": "envkit-probe-report",
        "label": label,
        "config": config,
        "fingerprint": {
            "host": host,
            "env": kw.pop("env", {}),
            "distributions": kw.pop("dists", {"numpy": "1.26.4"}),
            "cpu": {"model": "x", "affinity": 2},
            "python": {"version": "3.11.7"},
        },
        "frameworks": {"torch": fw},
    }
    assert not kw, kw
    return report


def parsed(data: dict[str, Any], source: str = "test report") -> ProbeReport:
    """A synthetic report as the runner and the loader return it: parsed once."""
    return parse_report(data, source)


def typed_report(host: str = "host-a", label: str = "latest", **kw: Any) -> ProbeReport:
    return parsed(make_report(host, label, **kw))


@pytest.fixture
def report_factory() -> Callable[..., dict[str, Any]]:
    return make_report


@pytest.fixture
def write_report(tmp_path: Path) -> Callable[[dict[str, Any], str], Path]:
    def write(report: dict[str, Any], name: str) -> Path:
        path = tmp_path / name
        path.write_text(json.dumps(copy.deepcopy(report)))
        return path

    return write
