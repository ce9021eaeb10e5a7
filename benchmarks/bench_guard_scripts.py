"""envkit.guard on three training scripts, as processes: false alarms per 1,000 clean steps, overhead.

The scripts are ``tests/data/guard_scripts/`` (written after pytorch/examples word_language_model,
karpathy/nanoGPT train.py and the PaddlePaddle convnet tutorial; tiny CPU sizes, generated data).
Each repetition runs the script twice as its own process, unguarded then guarded (the order
alternating), with the same seed (repetition i: seed i), one intra-op thread, the guard at its
default settings (clip as the script clips, spikes "warn"). The script reports the CPU time of its
training loop (``time.process_time``: every thread of the process, tensorboard's writer included,
from the first step to the last, not the imports nor ``Guard.close``). Overhead = median guarded /
median unguarded − 1 over the repetitions (11: with 5, two runs in a row of paddle_cnn gave +3.3 %
and +5.3 %, with 15 +1.7 %: the process-to-process spread, measured). Every incident of a clean
guarded run is a false alarm; the rate is per 1,000 clean steps over all repetitions. The guard's
own benchmark models (``bench_guard``: a tiny BERT and a 6-layer transformer, torch and Paddle) are
counted the same way, in-process. Targets (issue 33): ≤ 1 false alarm per 1,000 clean steps; overhead ≤ 3 %.
The ``torch.compile`` row (``ENVKIT_BENCH_COMPILE=1``, nanoGPT ``--compile``) times both arms from
step ``COMPILE_WARMUP`` on (``--warmup``: inductor compiles in the first steps, which would dilute the
ratio); the other rows keep their window from the first step (the guard's own first-step work counts).

Process to process, and even run to run in one process (a fresh model each run: another memory
layout), the CPU time of the same loop varies by up to ±25 % on this machine (the runs' spread is
printed), more than the 3 % to be shown; each run's fastest quarter of steps is printed too. So each
script is also timed **step by step**: guarded runs whose odd steps run unguarded (``train(...,
interleave=True)``, one per repetition, in one process after an untimed warm-up run): the two kinds
of step on one model, with one allocator, in one stretch of time; the medians of the steps' CPU
times are compared (the guard's own first-step work is in the process rows, not here).
"""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks._goals import knob, scaled
from benchmarks.bench_guard import _q1

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "tests" / "data" / "guard_scripts"
REPEATS = int(knob("ENVKIT_BENCH_REPEATS", "11", "1"))
STEPS = int(knob("ENVKIT_BENCH_STEPS", "200", "20"))
BENCH_STEPS = scaled(300, 10)
COMPILE_WARMUP = 3  # untimed steps of the torch.compile row (compilation, and a recompile or two)
FRAMEWORK = {"wlm": "torch", "nanogpt": "torch", "paddle_cnn": "paddle"}


def _run(name: str, seed: int, run: Path | None, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    argv = [sys.executable, str(SCRIPTS / f"{name}.py"), "--steps", str(STEPS), "--seed", str(seed), *extra]
    argv += ["--no-guard"] if run is None else ["--run", str(run)]
    proc = subprocess.run(argv, env=env, cwd=SCRIPTS, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{name}: {proc.stderr.strip().splitlines()[-1:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def measure_script(name: str, tmp: Path, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    warmup = int(extra[extra.index("--warmup") + 1]) if "--warmup" in extra else 0
    plain: list[float] = []
    guarded: list[float] = []
    fast: dict[bool, list[float]] = {False: [], True: []}  # each run's fastest quarter of steps, ms
    alarms: list[str] = []
    for seed in range(REPEATS):
        order = [False, True] if seed % 2 == 0 else [True, False]
        for guard in order:
            out = _run(name, seed, tmp / f"{name}-{seed}-{len(extra)}" if guard else None, extra)
            (guarded if guard else plain).append(out["cpu_s"] / out.get("timed_steps", out["steps"]))
            fast[guard].append(1000 * _q1(out["step_cpu_s"]))
            if guard:
                alarms += [f"seed {seed} step {i['step']}: {i['kind']}" for i in out["incidents"]]
    base, with_guard = statistics.median(plain), statistics.median(guarded)
    paired = sorted(g / p - 1 for g, p in zip(guarded, plain, strict=True))  # each repetition's two runs
    return {
        "plain_ms": 1000 * base,
        "guarded_ms": 1000 * with_guard,
        "overhead": with_guard / base - 1,
        "paired": paired,
        "spread_ms": (1000 * min(plain + guarded), 1000 * max(plain + guarded)),
        "fast_ms": (statistics.median(fast[False]), statistics.median(fast[True])),
        "alarms": alarms,
        "steps": STEPS * REPEATS,
        "timed_steps": (STEPS - warmup) * REPEATS,
    }


def _load_script(name: str) -> Any:
    """``tests/data/guard_scripts/NAME.py`` imported, its framework set up as its ``main()`` does."""
    sys.path.insert(0, str(SCRIPTS))  # the replay entry (``wlm:build``) imports it by name
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    if FRAMEWORK[name] == "paddle":
        import paddle

        paddle.device.set_device("cpu")
        paddle.set_flags({"FLAGS_use_mkldnn": False})
    else:
        import torch

        torch.set_num_threads(1)
    return module


def interleaved(name: str, tmp: Path, *, compiled: bool = False) -> dict[str, Any]:
    """Guarded runs of ``name`` whose odd steps run unguarded (``interleave=True``), one per repetition,
    in this process: the two kinds of step on one model, one allocator, one stretch of time.
    ``compiled``: nanoGPT's model ``torch.compile``d, each run timed from step ``COMPILE_WARMUP`` on."""
    import warnings

    warnings.simplefilter("ignore")
    module = _load_script(name)
    extra: dict[str, Any] = {"compile_model": True, "warmup": COMPILE_WARMUP} if compiled else {}
    module.train(None, STEPS, **extra)  # untimed: the framework's own first-use work (kernels, allocator)
    steps: dict[bool, list[float]] = {False: [], True: []}
    for seed in range(REPEATS):
        run = tmp / f"{name}-interleaved-{seed}{'-compiled' if compiled else ''}"
        out = module.train(run, STEPS, seed=seed, interleave=True, **extra)
        for cpu, guarded in zip(out["step_cpu_s"], out["step_guarded"], strict=True):
            steps[guarded].append(1000 * cpu)
    base, with_guard = statistics.median(steps[False]), statistics.median(steps[True])
    return {"plain_ms": base, "guarded_ms": with_guard, "overhead": with_guard / base - 1,
            "fast_overhead": _q1(steps[True]) / _q1(steps[False]) - 1}  # fmt: skip


def measure_interleaved(name: str, tmp: Path, *, compiled: bool = False) -> dict[str, Any]:
    """:func:`interleaved` run in a process of its own (one framework per process)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    argv = [sys.executable, "-m", "benchmarks.bench_guard_scripts", "--interleaved", name, str(tmp)]
    argv += ["--compile"] if compiled else []
    proc = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{name}, interleaved: {proc.stderr.strip().splitlines()[-1:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def bench_models_alarms(framework: str) -> tuple[int, int, list[str]]:
    """False alarms of the default guard on bench_guard's models (the same batch every step)."""
    import warnings

    from benchmarks.bench_guard import _paddle_models, _torch_models
    from envkit.guard import Guard

    warnings.simplefilter("ignore")
    models = _torch_models() if framework == "torch" else _paddle_models()
    alarms, steps = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, build in models.items():
            model, opt, batch = build()
            if framework == "torch":
                import torch

                torch.set_num_threads(1)
                ce: Callable[..., Any] = torch.nn.functional.cross_entropy
            else:
                import paddle

                ce = paddle.nn.functional.cross_entropy
            guard = Guard(model, opt, run=Path(tmp) / name.replace(" ", "-"), clip=1.0)
            for i in range(BENCH_STEPS):
                with guard.step(i, batch) as g:
                    g.backward(ce(model(batch[0]), batch[1]))
                    g.optimizer_step()
            guard.close()
            steps += BENCH_STEPS
            alarms += [f"{name} step {i.step}: {i.kind}" for i in guard.incidents]
    return len(alarms), steps, alarms


def _listed(alarms: list[str]) -> str:
    return ": " + "; ".join(alarms[:5]) if alarms else ""


def _script_rows(name: str, tmp: Path) -> None:
    r = measure_script(name, tmp)
    rate = 1000 * len(r["alarms"]) / r["steps"]
    verdict = "ok" if r["overhead"] <= 0.03 else "OVER THE TARGET"
    print(f"   {name}: false alarms {len(r['alarms'])} in {r['steps']} clean steps = {rate:.2f} "
          f"per 1,000 (target ≤ 1){_listed(r['alarms'])}")  # fmt: skip
    print(f"     cpu per step: unguarded {r['plain_ms']:.2f} ms, guarded {r['guarded_ms']:.2f} ms: "
          f"overhead {100 * r['overhead']:+.1f} % (target ≤ 3 %) {verdict}")  # fmt: skip
    low, high = r["spread_ms"]
    quick, quick_guarded = r["fast_ms"]
    fast_overhead = quick_guarded / quick - 1
    print(f"     each run's fastest quarter of steps (the shared machine's bursts left out): unguarded "
          f"{quick:.2f} ms, guarded {quick_guarded:.2f} ms: overhead {100 * fast_overhead:+.1f} % "
          f"{'ok' if fast_overhead <= 0.03 else 'OVER THE TARGET'}")  # fmt: skip
    print(f"     per repetition (guarded / unguarded run beside it): median "
          f"{100 * statistics.median(r['paired']):+.1f} %, from {100 * r['paired'][0]:+.1f} % to "
          f"{100 * r['paired'][-1]:+.1f} %; runs {low:.2f}-{high:.2f} ms per step")  # fmt: skip
    one = measure_interleaved(name, tmp)
    verdict = "ok" if one["overhead"] <= 0.03 else "OVER THE TARGET"
    print(f"     step by step (odd steps unguarded: one model, one process): unguarded "
          f"{one['plain_ms']:.2f} ms, guarded {one['guarded_ms']:.2f} ms: overhead "
          f"{100 * one['overhead']:+.1f} % (target ≤ 3 %) {verdict}; fastest quarter "
          f"{100 * one['fast_overhead']:+.1f} %")  # fmt: skip
    if name == "nanogpt" and os.environ.get("ENVKIT_BENCH_COMPILE"):
        warmup = min(COMPILE_WARMUP, STEPS - 1)
        c = measure_script(name, tmp, ("--compile", "--warmup", str(warmup)))
        print(f"     torch.compile'd: unguarded {c['plain_ms']:.2f} ms, guarded {c['guarded_ms']:.2f} ms: "
              f"overhead {100 * c['overhead']:+.1f} %, {len(c['alarms'])} alarms "
              f"(timed from step {warmup}, after compilation)")  # fmt: skip
        one = measure_interleaved(name, tmp, compiled=True)
        verdict = "ok" if one["overhead"] <= 0.03 else "OVER THE TARGET"
        print(f"     torch.compile'd, step by step: unguarded {one['plain_ms']:.2f} ms, guarded "
              f"{one['guarded_ms']:.2f} ms: overhead {100 * one['overhead']:+.1f} % (target ≤ 3 %) "
              f"{verdict}; fastest quarter {100 * one['fast_overhead']:+.1f} %")  # fmt: skip


def _bench_model_rows(framework: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_guard_scripts", framework],
        env=env, cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        print(f"   bench_guard models ({framework}): failed: {proc.stderr.strip().splitlines()[-1:]}")
        return
    count, steps, alarms = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"   bench_guard models ({framework}): false alarms {count} in {steps} clean steps = "
          f"{1000 * count / steps:.2f} per 1,000{_listed(alarms)}")  # fmt: skip


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for name, framework in FRAMEWORK.items():
            if importlib.util.find_spec(framework) is None:
                print(f"   {name}: skipped ({framework} not installed)")
                continue
            _script_rows(name, Path(tmp))
    for framework in ("torch", "paddle"):
        if importlib.util.find_spec(framework) is not None:
            _bench_model_rows(framework)
    print(
        f"   ({REPEATS} repetitions × {STEPS} steps per script, interleaved as processes and step by step; "
        f"medians; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs, a shared machine)"
    )


if __name__ == "__main__":
    if len(sys.argv) in (4, 5) and sys.argv[1] == "--interleaved":
        print(json.dumps(interleaved(sys.argv[2], Path(sys.argv[3]), compiled=sys.argv[4:] == ["--compile"])))
    elif len(sys.argv) == 2:
        print(json.dumps(bench_models_alarms(sys.argv[1])))
    else:
        main()
