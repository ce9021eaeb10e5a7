"""The probe payload: ``python run.py --frameworks torch,paddle --workloads rnn,bert`` prints a JSON report.

Standard library + the frameworks only. Mounted read-only into containers and run as a script,
never installed. Frameworks that are not installed are skipped and said so. Exit 0 unless the
payload itself is broken (NaN/Inf and failing workloads are reported, not raised).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

STARTED = time.monotonic()  # a --budget counts from here: the framework's import is in it

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.dont_write_bytecode = True  # the payload directory may be read-only

import common  # noqa: E402
import fingerprint  # noqa: E402
import perturb  # noqa: E402

# The same values as envkit.probe.report.SCHEMA / KIND and envkit.probe.runner (a test checks).
SCHEMA = 1
KIND = "envkit-probe-report"
FRAMEWORKS = ("torch", "paddle")
WORKLOADS = ("rnn", "bert")


def _csv(allowed: tuple[str, ...]) -> Any:
    def parse(text: str) -> list[str]:
        items = [t.strip() for t in text.split(",") if t.strip()]
        bad = [t for t in items if t not in allowed]
        if bad or not items:
            raise argparse.ArgumentTypeError(f"choose from {', '.join(allowed)}")
        return list(dict.fromkeys(items))

    return parse


def _json_object(text: str) -> dict[str, object]:
    try:
        value = json.loads(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not JSON: {e}") from e
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("expected a JSON object")
    return value


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="run.py", description=__doc__)
    p.add_argument("--frameworks", type=_csv(FRAMEWORKS), default=list(FRAMEWORKS))
    p.add_argument("--workloads", type=_csv(WORKLOADS), default=list(WORKLOADS))
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--mode", choices=("strict", "default"), default="strict")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="auto: CUDA when the framework sees a GPU, else CPU (recorded in the report)",
    )
    p.add_argument("--tf32", action="store_true", help="allow TF32 matmul/conv (GPU)")
    p.add_argument("--autocast", choices=("none", "bf16"), default="none")
    p.add_argument(
        "--poison",
        choices=("none", "input", "lr"),
        default="none",
        help="plant a NaN in one input at --poison-step, or use a huge learning rate",
    )
    p.add_argument("--poison-step", type=int, default=2)
    p.add_argument("--nan-check", action="store_true", help="framework op-level NaN/Inf checks")
    p.add_argument("--threads", type=int, default=0, help="intra-op threads (0: the framework's default)")
    p.add_argument(
        "--readiness",
        type=_json_object,
        default=None,
        help="JSON (the catalog's dynload tables): add the GPU readiness facts to the fingerprint",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=0.0,
        help="seconds the whole probe may take (recorded): the steps that fit are planned, at most --steps",
    )
    p.add_argument(
        "--budget-left",
        type=float,
        default=None,
        help="seconds of --budget left when this process starts (default: all of it)",
    )
    args = p.parse_args(argv)
    if args.steps < 1:
        p.error("--steps must be at least 1")
    if args.budget < 0 or (args.budget_left is not None and args.budget_left < 0):
        p.error("--budget and --budget-left must not be negative")
    if args.budget and len(args.frameworks) != 1:
        p.error("--budget runs one framework (its steps are planned per framework)")
    return args


def budget_steps(frameworks: dict[str, object]) -> int | None:
    """The steps a budget run planned (one framework), or None without a budget plan."""
    plans = [e["budget"] for e in frameworks.values() if isinstance(e.get("budget"), dict)]
    return int(plans[0]["steps"]) if plans else None


def run_frameworks(args: argparse.Namespace, cfg: common.Config) -> dict[str, object]:
    frameworks: dict[str, object] = {}
    for name in args.frameworks:
        if importlib.util.find_spec(name) is None:
            frameworks[name] = {"status": "skipped", "reason": f"{name} is not installed"}
            continue
        pre: dict[str, object] = common.paddle_pre_import(cfg) if name == "paddle" else {}
        try:
            module = __import__(f"{name}_probe")
            used = dataclasses.replace(cfg, device=module.auto_device()) if cfg.device == "auto" else cfg
            result = module.run(args.workloads, used)
            result["device"] = used.device
        except Exception as exc:
            frameworks[name] = {"status": "error", "reason": common.summarize_error(exc)}
            continue
        result["applied"] = {**pre, **result["applied"]}
        frameworks[name] = {"status": "ok", **result}
    return frameworks


def _device_used(cfg: common.Config, frameworks: dict[str, object]) -> str:
    """The device the frameworks ran on (``auto`` resolved); the first framework's when they differ."""
    used = [e["device"] for e in frameworks.values() if e.get("device")]
    return used[0] if used else ("cpu" if cfg.device == "auto" else cfg.device)


def _config(args: argparse.Namespace) -> common.Config:
    """The workloads' configuration from the command line (the budget counted from the payload's start)."""
    return common.Config(
        seed=args.seed,
        steps=args.steps,
        mode=args.mode,
        dtype=args.dtype,
        device=args.device,
        tf32=args.tf32,
        autocast="" if args.autocast == "none" else args.autocast,
        poison="" if args.poison == "none" else args.poison,
        poison_step=args.poison_step,
        nan_check=args.nan_check,
        threads=args.threads,
        budget_until=STARTED + (args.budget if args.budget_left is None else args.budget_left)
        if args.budget
        else 0.0,
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    cfg = _config(args)
    try:
        plant = perturb.planted(dict(os.environ), cfg.steps)
    except ValueError as e:
        print(f"envkit probe payload: {e}", file=sys.stderr)
        return 2
    if plant is not None:  # tests only: say so on stderr and in the report
        print(
            f"envkit probe payload: {perturb.ENV} is set (a planted fault): {plant.to_json()}",
            file=sys.stderr,
        )
        cfg = dataclasses.replace(cfg, threads=plant.threads or cfg.threads, flip_step=plant.step or 0)
    # Frameworks print from C (Paddle's NaN checker, oneDNN verbose) to fd 1: point fd 1 at stderr while
    # they run, so that stdout carries the report only.
    sys.stdout.flush()
    saved_stdout = os.dup(1)
    os.dup2(2, 1)
    try:
        frameworks = run_frameworks(args, cfg)
    finally:
        sys.stdout.flush()
        os.dup2(saved_stdout, 1)
        os.close(saved_stdout)
    report = {
        "schema": SCHEMA,
        "kind": KIND,
        "config": {
            "seed": cfg.seed,
            "steps": budget_steps(frameworks) or cfg.steps,
            "mode": cfg.mode,
            "dtype": cfg.dtype,
            "device": _device_used(cfg, frameworks),
            "device_requested": cfg.device,
            "tf32": cfg.tf32,
            "autocast": cfg.autocast or None,
            "poison": cfg.poison or None,
            "poison_step": cfg.poison_step if cfg.poison else None,
            "nan_check": cfg.nan_check,
            "threads": cfg.threads or None,
            "workloads": args.workloads,
            **({"budget_s": args.budget} if args.budget else {}),
            **({"planted": plant.to_json()} if plant is not None else {}),
        },
        "fingerprint": fingerprint.collect(args.readiness),
        "frameworks": frameworks,
    }
    json.dump(report, sys.stdout, indent=1, sort_keys=True, allow_nan=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
