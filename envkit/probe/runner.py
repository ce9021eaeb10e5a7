"""Run the probe payload: on the host (one subprocess per framework) or inside an image.

The payload (``envkit/payload/scripts``) is never imported here: it runs as a script, with the
host's Python or mounted read-only into a container, launched by :func:`envkit.payload.run`. Each
framework runs in its own process, so two frameworks never share OpenMP runtimes or threads.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from envkit import __version__, _proc, payload
from envkit._io import load_json_bounded
from envkit.errors import ProbeError, ReportError
from envkit.probe.model import ProbeReport
from envkit.probe.report import MAX_DEPTH, report_from_json

if TYPE_CHECKING:
    from envkit.engine.protocol import ContainerEngine

__all__ = ["ProbeOptions", "merge_parts", "payload_argv", "run_in_image", "run_on_host"]

FRAMEWORKS = ("torch", "paddle")
WORKLOADS = ("rnn", "bert")
PROBE_TIMEOUT_S = (
    1800  # a probe trains N steps: longer than a report's few minutes, on the host and in an image
)


@dataclass(frozen=True)
class ProbeOptions:
    """How the probe runs: frameworks, workloads, steps, seed, mode, dtype, device, switches."""

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
    # --budget: seconds the probe may take, the framework's import included; the steps that fit are
    # planned (at most ``steps``; one framework). 0: no budget
    budget_s: float = 0.0
    # GPU readiness facts in the fingerprint (``cuda_readiness``): None = for a CUDA image, or on a
    # host with an NVIDIA driver; the scan reads the CUDA libraries' fatbins (seconds to ~30 s).
    readiness: bool | None = None


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
    if opts.budget_s:
        argv += ["--budget", f"{opts.budget_s:g}"]
    return argv


def readiness_spec() -> str:
    """What the payload's ``--readiness`` needs from the catalog (dynload tables, driver libraries)."""
    from envkit.catalog.gpu import load_gpu_facts

    return json.dumps(load_gpu_facts().payload_spec(), sort_keys=True)


def thread_env(opts: ProbeOptions) -> dict[str, str]:
    if not opts.threads:
        return {}
    n = str(opts.threads)
    return {"OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": n}


def _tail(text: str) -> str:
    return "\n".join(text.strip().splitlines()[-10:])


def parse_output(stdout: str, stderr: str, where: str) -> ProbeReport:
    """The payload's report, parsed once (the only parse on the run path)."""
    try:  # what an image's python printed: bounded depth (a report nests 6 deep)
        data = load_json_bounded(stdout, MAX_DEPTH)
    except ValueError as e:
        raise ProbeError(
            f"the probe payload in {where} printed no report:\n{_tail(stderr)}",
            hint="rerun as `envkit --debug probe ...`; is Python >= 3.8 on that side?",
        ) from e
    try:
        return report_from_json(data, f"payload output ({where})")
    except ReportError as e:
        raise ProbeError(e.message, hint="the payload and envkit versions disagree; reinstall envkit") from e


Execute = Callable[[list[str]], tuple[int, str, str]]


def _run_each(
    opts: ProbeOptions, execute: Execute, where: str, hint: str, *, readiness: bool = False
) -> ProbeReport:
    """One payload process per framework (``execute`` gets its arguments), their reports merged.
    With ``readiness`` the first one (whose fingerprint the merge keeps) also scans the CUDA stack."""
    parts = []
    started = time.monotonic()
    for i, fw in enumerate(opts.frameworks):
        extra = ["--readiness", readiness_spec()] if readiness and i == 0 else []
        if opts.budget_s:  # what this process, or a container's start, already took counts
            extra += ["--budget-left", f"{max(opts.budget_s - (time.monotonic() - started), 0.001):.3f}"]
        code, stdout, stderr = execute(payload_argv(opts, [fw]) + extra)
        if code != 0:
            raise ProbeError(
                f"the probe payload failed {where} ({fw}, exit {code}):\n{_tail(stderr)}",
                hint=hint,
            )
        parts.append(parse_output(stdout, stderr, f"{fw} {where}"))
    return merge_parts(parts)


def merge_parts(parts: Sequence[ProbeReport]) -> ProbeReport:
    """Join per-framework payload reports: config and fingerprint from the first, frameworks from each."""
    frameworks = dict(sorted({fw: run for part in parts for fw, run in part.frameworks.items()}.items()))
    documents: dict[str, object] = {}
    for part in parts:
        entries = part.document["frameworks"]  # an object: parse_report checked it
        documents.update(entries if isinstance(entries, Mapping) else {})
    document = {**parts[0].document, "frameworks": dict(sorted(documents.items()))}
    return replace(parts[0], frameworks=frameworks, document=document)


def finish(report: ProbeReport, label: str, extra: Mapping[str, object] | None = None) -> ProbeReport:
    """The host's copy: labelled, with envkit's version (and ``extra``) in the fingerprint."""
    return report.with_host_facts(label, {"envkit_version": __version__, **(extra or {})})


def run_on_host(
    opts: ProbeOptions, *, label: str, python: str | None = None, run: _proc.Runner = _proc.run
) -> ProbeReport:
    """Run each framework's payload in a subprocess of ``python`` (default: this interpreter)."""
    env = {**os.environ, **thread_env(opts), **opts.env, "PYTHONDONTWRITEBYTECODE": "1"}
    where = payload.Host(python or sys.executable, env=env, timeout_s=PROBE_TIMEOUT_S, runner=run)

    def execute(args: list[str]) -> tuple[int, str, str]:
        ran = payload.run(where, "run.py", args)
        return ran.code, ran.stdout, ran.stderr

    readiness = host_has_gpu() if opts.readiness is None else opts.readiness
    report = _run_each(
        opts, execute, "on the host", hint="rerun as `envkit --debug probe ...`", readiness=readiness
    )
    return finish(report, label)


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
) -> ProbeReport:
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
    from envkit.engine.in_image import InImage

    where = InImage(engine, image, env=env, gpus=use_gpus, timeout_s=PROBE_TIMEOUT_S)

    def execute(args: list[str]) -> tuple[int, str, str]:
        ran = payload.run(where, "run.py", args)
        return ran.code, ran.stdout, ran.stderr

    hint = "does the image have python3? run `envkit --debug probe --image ...`"
    cuda = info.labels.get("io.envkit.cuda")
    readiness = bool(cuda and cuda != "cpu") if opts.readiness is None else opts.readiness
    report = _run_each(opts, execute, f"in {image}", hint=hint, readiness=readiness)
    container_host = report.fingerprint.get("host")
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
