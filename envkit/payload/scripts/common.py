"""The training loop shared by the framework probes: NaN/Inf detection, records, final hashes.

Standard library only. A framework module supplies an adapter with the tensor operations; this
module decides what is measured, so torch and paddle are measured the same way.
"""

from __future__ import annotations

import hashlib
import math
import os
import struct
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import perturb
import portable

POISON_LR = 1e30


@dataclass(frozen=True)
class Config:
    """The payload's configuration, from its command line."""

    seed: int
    steps: int
    mode: str
    dtype: str
    device: str
    tf32: bool
    autocast: str
    poison: str
    poison_step: int
    nan_check: bool
    threads: int
    flip_step: int = 0  # a planted fault (perturb.py, tests only): this step's loss loses its lowest bit
    budget_until: float = 0.0  # --budget: the time.monotonic() by which the run should end (0: no budget)


# The step counts a budget run picks from: nodes of about the same speed land on the same count, so
# their reports compare (a report with other steps is refused by compare). A budget never runs
# more than --steps; at least 1 step runs even when none fits (the report says so).
LADDER = (1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 300, 500, 1000, 2000, 3000, 5000, 10000)
BUDGET_MARGIN = 0.2  # of the time left, kept for what follows the steps (fingerprint, report, exit)


def _timed_step(adapter: Any, workload: str, cfg: Config, clock: Callable[[], float]) -> float:
    """Seconds for one step of ``workload`` from fresh parameters, thrown away afterwards (the
    measured run starts again from the seed: nothing here reaches the report)."""
    params = adapter.make_params(workload, cfg)
    opt = adapter.make_optimizer(workload, params, lr_for(workload, cfg))
    start = clock()
    loss = adapter.forward_loss(workload, params, cfg, 1, False)
    adapter.item(loss)
    adapter.backward(loss)
    adapter.step(opt, params)
    adapter.param_norm(params[0])  # waits for the device
    return clock() - start


def budget_plan(
    adapter: Any, workloads: list[str], cfg: Config, clock: Callable[[], float] = time.monotonic
) -> dict[str, object]:
    """How many steps fit before ``cfg.budget_until``: one timed step per workload (a first step: the
    slowest, so the plan errs short), the largest ladder count that fits, never above ``cfg.steps``."""
    step_s = {w: _timed_step(adapter, w, cfg, clock) for w in workloads}
    left = cfg.budget_until - clock()
    per_step = math.fsum(step_s.values())
    fits = int(max(left, 0.0) * (1 - BUDGET_MARGIN) / per_step) if per_step > 0 else cfg.steps
    steps = cfg.steps if fits >= cfg.steps else max([n for n in LADDER if n <= fits], default=1)
    return {
        "steps": steps,
        "steps_asked": cfg.steps,
        "fit": fits,
        "left_s": round(left, 3),
        "step_s": {w: round(t, 6) for w, t in step_s.items()},
    }


class AdapterBase:
    """What both framework adapters share: the workload dispatch under autocast."""

    def autocast(self, cfg: Config) -> Any:
        raise NotImplementedError

    def _rnn(self, params: list[Any], cfg: Config, step: int, poison: bool) -> Any:
        raise NotImplementedError

    def _bert(self, params: list[Any], cfg: Config, step: int, poison: bool) -> Any:
        raise NotImplementedError

    def forward_loss(self, workload: str, params: list[Any], cfg: Config, step: int, poison: bool) -> Any:
        with self.autocast(cfg):
            if workload == "rnn":
                return self._rnn(params, cfg, step, poison)
            return self._bert(params, cfg, step, poison)

    def finite(self, t: Any) -> bool:
        raise NotImplementedError

    def backward(self, loss: Any) -> None:
        loss.backward()

    def grad_finite(self, p: Any) -> bool:
        return self.finite(p.grad)

    def first_nonfinite(self, names: list[str], tensors: list[Any]) -> str | None:
        """The first tensor holding NaN/Inf, by name (a framework may check them all at once first)."""
        return next((n for n, t in zip(names, tensors) if not self.finite(t)), None)


def lr_for(workload: str, cfg: Config) -> float:
    if cfg.poison == "lr":
        return POISON_LR
    return float(portable.RNN["lr"] if workload == "rnn" else portable.BERT["lr"])


def summarize_error(exc: BaseException) -> str:
    """The last meaningful lines of an exception (framework op checks put the op name there)."""
    lines = [ln.strip() for ln in traceback.format_exception_only(type(exc), exc) for ln in ln.splitlines()]
    lines = [ln for ln in lines if ln and not set(ln) <= set("-=_ ")]
    text = " | ".join(lines[-6:])
    return text[:600]


def first_bad(names: list[str], values: list[float]) -> str | None:
    for name, value in zip(names, values):
        if not portable.is_finite(value):
            return name
    return None


def params_sha256(adapter: Any, names: list[str], params: list[Any], dtype: str) -> str:
    code = "d" if dtype == "float64" else "f"
    h = hashlib.sha256()
    for name, p in zip(names, params):
        values = adapter.to_list(p)
        h.update(name.encode() + b"\0")
        h.update(struct.pack(f"<{len(values)}{code}", *values))
    return h.hexdigest()


def _op_error_record(rec: dict[str, object], exc: BaseException) -> dict[str, object]:
    """``rec`` for a step the framework's op-level check stopped: no loss, no update."""
    rec.update(loss="nan", grad_norm="nan", finite={"loss": False, "grads": False, "params": True})
    rec["op_error"] = summarize_error(exc)
    rec["first_nonfinite_param"] = None
    return rec


def _first_nonfinite_grad(adapter: Any, names: list[str], params: Any) -> str | None:
    """The first parameter whose gradient holds a NaN/Inf, checked one by one."""
    return next((n for n, p in zip(names, params) if not adapter.grad_finite(p)), None)


def run_workload(adapter: Any, workload: str, cfg: Config) -> dict[str, object]:
    """Train ``cfg.steps`` steps; record per-step loss, grad norm and NaN/Inf flags. Never raises on NaN."""
    names = [spec[0] for spec in portable.param_specs(workload)]
    params = adapter.make_params(workload, cfg)
    opt = adapter.make_optimizer(workload, params, lr_for(workload, cfg))
    steps: list[dict[str, object]] = []
    grad_norms: dict[str, dict[str, object]] = {}
    nonfinite: dict[str, object] | None = None
    for step in range(1, cfg.steps + 1):
        poison = cfg.poison == "input" and step == cfg.poison_step
        rec: dict[str, object] = {"step": step, "op_error": None}
        try:
            loss = adapter.forward_loss(workload, params, cfg, step, poison)
            loss_value = adapter.item(loss)
            if step == cfg.flip_step:
                loss_value = perturb.flip_low_bit(loss_value, cfg.dtype)
            adapter.backward(loss)
        except Exception as exc:
            if not cfg.nan_check:
                raise
            # The framework's op-level check stopped this step: report it, skip the update, go on.
            adapter.zero_grad(opt, params)
            steps.append(_op_error_record(rec, exc))
            if nonfinite is None:
                nonfinite = {"step": step, "what": "op", "parameter": None, "op_error": rec["op_error"]}
            continue
        norms = [adapter.grad_norm(p) for p in params]
        total = math.sqrt(math.fsum(n * n for n in norms))
        # a NaN/Inf element makes its tensor's norm (and the total) non-finite: a finite total proves
        # every gradient finite without a check per parameter; otherwise find the first one exactly
        finite_total = portable.is_finite(total)
        bad_grad = None if finite_total else _first_nonfinite_grad(adapter, names, params)
        if step in (1, cfg.steps):
            grad_norms["first" if step == 1 else "last"] = {
                n: portable.json_float(v) for n, v in zip(names, norms)
            }
        adapter.step(opt, params)
        bad_param = adapter.first_nonfinite(names, params)
        finite = {
            "loss": portable.is_finite(loss_value),
            "grads": bad_grad is None,
            "params": bad_param is None,
        }
        rec.update(loss=portable.json_float(loss_value), grad_norm=portable.json_float(total), finite=finite)
        rec["first_nonfinite_param"] = bad_grad or bad_param
        steps.append(rec)
        if nonfinite is None and not all(finite.values()):
            what = "loss" if not finite["loss"] else "grad" if bad_grad else "param"
            nonfinite = {"step": step, "what": what, "parameter": bad_grad or bad_param, "op_error": None}
    if cfg.steps == 1:
        grad_norms["last"] = grad_norms.get("first", {})
    return {
        "params": names,
        "steps": steps,
        "param_grad_norms": grad_norms,
        "final_param_norms": {n: portable.json_float(adapter.param_norm(p)) for n, p in zip(names, params)},
        "final_params_sha256": params_sha256(adapter, names, params, cfg.dtype),
        "nonfinite": nonfinite,
    }


def run_workloads(
    adapter: Any, workloads: list[str], cfg: Config, applied: dict[str, object], info: Callable[[], Any]
) -> dict[str, object]:
    """A framework's part of the report: each workload's result (an error is reported, not raised).
    With a budget, the steps that fit are planned first and every workload runs that many."""
    results: dict[str, object] = {}
    plan: dict[str, object] | None = None
    if cfg.budget_until > 0:
        plan = budget_plan(adapter, workloads, cfg)
        cfg = replace(cfg, steps=int(plan["steps"]))
    for workload in workloads:
        try:
            results[workload] = {"status": "ok", **run_workload(adapter, workload, cfg)}
        except Exception as exc:
            results[workload] = {"status": "error", "reason": summarize_error(exc)}
    out = {"applied": applied, "info": info(), "workloads": results}
    return out if plan is None else {**out, "budget": plan}


STRICT_FLAGS = {"FLAGS_cudnn_deterministic": "1", "FLAGS_embedding_deterministic": "1"}


def paddle_pre_import(cfg: Config) -> dict[str, object]:
    applied: dict[str, object] = {}
    if cfg.mode == "strict":
        for key, value in STRICT_FLAGS.items():
            if key not in os.environ:
                os.environ[key] = value
                applied[key] = value
    if cfg.nan_check:
        os.environ["FLAGS_check_nan_inf"] = "1"
        applied["FLAGS_check_nan_inf"] = "1"
    return applied
