"""Run the probe payload: on the host (one subprocess per framework) or inside an image.

The payload (``envkit/probe/payload``) is never imported here: it runs as a script, with the
host's Python or mounted read-only into a container through :class:`ContainerEngine`. Each
framework runs in its own process, so two frameworks never share OpenMP runtimes or threads.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envkit import __version__, _proc
from envkit._io import load_json_bounded
from envkit.errors import ProbeError, ReportError
from envkit.probe.report import MAX_DEPTH, Report, validate_report

if TYPE_CHECKING:
    from envkit.build.engine import ContainerEngine

__all__ = ["PAYLOAD_DIR", "ProbeOptions", "merge_parts", "payload_argv", "run_in_image", "run_on_host"]

PAYLOAD_DIR = Path(__file__).resolve().parent / "payload"
CONTAINER_PAYLOAD = "/opt/envkit-probe"
FRAMEWORKS = ("torch", "paddle")
WORKLOADS = ("rnn", "bert")


@dataclass(frozen=True)
class ProbeOptions:
    frameworks: tuple[str, ...] = FRAMEWORKS
    workloads: tuple[str, ...] = WORKLOADS
    steps: int = 10
    seed: int = 0
    mode: str = "strict"
    dtype: str = "float32"
    device: str = "auto"  # auto: CUDA when the framework sees a GPU, else CPU
    tf32: bool = False
    autocast: str = "none"
    poison: str = "none"
    poison_step: int = 2
    nan_check: bool = False
    threads: int = 0
    env: Mapping[str, str] = field(default_factory=dict)


def payload_argv(opts: ProbeOptions, frameworks: Sequence[str]) -> list[str]:
    argv = [
        "--frameworks",
        ",".join(frameworks),
        "--workloads",
        ",".join(opts.workloads),
        "--steps",
        str(opts.steps),
        "--seed",
        str(opts.seed),
        "--mode",
        opts.mode,
        "--dtype",
        opts.dtype,
        "--device",
        opts.device,
        "--autocast",
        opts.autocast,
        "--poison",
        opts.poison,
        "--poison-step",
        str(opts.poison_step),
        "--threads",
        str(opts.threads),
    ]
    if opts.tf32:
        argv.append("--tf32")
    if opts.nan_check:
        argv.append("--nan-check")
    return argv


def thread_env(opts: ProbeOptions) -> dict[str, str]:
    if not opts.threads:
        return {}
    n = str(opts.threads)
    return {"OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": n}


def _tail(text: str) -> str:
    return "\n".join(text.strip().splitlines()[-10:])


def parse_output(stdout: str, stderr: str, where: str) -> Report:
    try:  # what an image's python printed: bounded depth (a report nests 6 deep)
        data = load_json_bounded(stdout, MAX_DEPTH)
    except ValueError as e:
        raise ProbeError(
            f"the probe payload in {where} printed no report:\n{_tail(stderr)}",
            hint="rerun with --debug; is Python >= 3.8 on that side?",
        ) from e
    try:
        return validate_report(data, f"payload output ({where})")
    except ReportError as e:
        raise ProbeError(e.message, hint="the payload and envkit versions disagree; reinstall envkit") from e


Execute = Callable[[list[str]], tuple[int, str, str]]


def _run_each(opts: ProbeOptions, execute: Execute, where: str, hint: str) -> Report:
    """One payload process per framework (``execute`` gets its arguments), their reports merged."""
    parts = []
    for fw in opts.frameworks:
        code, stdout, stderr = execute(payload_argv(opts, [fw]))
        if code != 0:
            raise ProbeError(
                f"the probe payload failed {where} ({fw}, exit {code}):\n{_tail(stderr)}",
                hint=hint,
            )
        parts.append(parse_output(stdout, stderr, f"{fw} {where}"))
    return merge_parts(parts)


def merge_parts(parts: Sequence[Report]) -> Report:
    """Join per-framework payload reports: config and fingerprint from the first, frameworks from each."""
    merged: Report = json.loads(json.dumps(parts[0]))
    for part in parts[1:]:
        merged["frameworks"].update(part["frameworks"])
    merged["frameworks"] = dict(sorted(merged["frameworks"].items()))
    return merged


def finish(report: Report, label: str, extra: Mapping[str, Any] | None = None) -> Report:
    report["label"] = label
    report["fingerprint"]["envkit_version"] = __version__
    if extra:
        report["fingerprint"].update(extra)
    return report


def run_on_host(
    opts: ProbeOptions, *, label: str, python: str | None = None, run: _proc.Runner = _proc.run
) -> Report:
    """Run each framework's payload in a subprocess of ``python`` (default: this interpreter)."""
    exe = python or sys.executable
    env = {**os.environ, **thread_env(opts), **opts.env, "PYTHONDONTWRITEBYTECODE": "1"}

    def execute(args: list[str]) -> tuple[int, str, str]:
        result = run([exe, str(PAYLOAD_DIR / "run.py"), *args], env=env, check=False, timeout=1800)
        return result.returncode, result.stdout, result.stderr

    return finish(_run_each(opts, execute, "on the host", hint="rerun with --debug"), label)


def host_has_gpu() -> bool:
    return shutil.which("nvidia-smi") is not None or Path("/proc/driver/nvidia/version").exists()


def run_in_image(
    engine: ContainerEngine,
    image: str,
    opts: ProbeOptions,
    *,
    label: str,
    host: str,
    gpus: bool | None = None,
) -> Report:
    """Run the payload inside ``image`` with the payload directory mounted read-only."""
    info = engine.inspect(image)
    if info is None:
        raise ProbeError(f"image {image} does not exist", hint=f"build it first: `envkit build {image}`")
    use_gpus = host_has_gpu() if gpus is None else gpus
    env = {
        **thread_env(opts),
        **opts.env,
        "PYTHONDONTWRITEBYTECODE": "1",
        "ENVKIT_IMAGE_ID": info.id,
        "ENVKIT_IMAGE_TAGS": ",".join(info.tags),
    }
    script = 'exec "$(command -v python3 || command -v python)" "$0" "$@"'
    from envkit.build.engine import Mount

    mounts = [Mount(str(PAYLOAD_DIR), CONTAINER_PAYLOAD, read_only=True)]

    def execute(args: list[str]) -> tuple[int, str, str]:
        argv = ["sh", "-c", script, f"{CONTAINER_PAYLOAD}/run.py", *args]
        result = engine.run(image, argv, mounts=mounts, env=env, gpus=use_gpus)
        return result.exit_code, result.stdout, result.stderr

    hint = "does the image have python3? run `envkit probe --image ... --debug`"
    report = _run_each(opts, execute, f"in {image}", hint=hint)
    container_host = report["fingerprint"].get("host")
    return finish(
        report,
        label,
        {
            "host": host,
            "container": {
                "image": image,
                "image_id": info.id,
                "image_tags": list(info.tags),
                "hostname": container_host,
                "cuda": info.labels.get("io.envkit.cuda"),  # the spec's CUDA, for the driver check
            },
        },
    )
