"""Likely causes of a numeric difference, ranked, from two probe fingerprints. Pure.

Each knob that docs/guides/probe.md lists as moving the numbers has a weight: precision switches (dtype,
autocast, TF32) first, then the device and GPU architecture, the CUDA stack, framework versions,
deterministic flags, threads, BLAS, numpy, CPU model, other flags, Python, other packages.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from envkit.probe.model import ProbeReport

__all__ = ["Cause", "likely_causes", "side_names"]

MAX_PACKAGES = 15
TF32_SWITCHES = (
    "cuda.matmul.allow_tf32",
    "cudnn.allow_tf32",
    "float32_matmul_precision",
    "fp32_precision",
    "cuda.matmul.fp32_precision",
    "cudnn.fp32_precision",
    "cublas_switch_tf32",
    "cudnn_switch_tf32",
)
DETERMINISM = ("deterministic_algorithms", "cudnn.deterministic", "cudnn.benchmark")
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


@dataclass(frozen=True)
class Cause:
    """One environment difference between two reports, weighted by how likely it moves the numbers."""

    weight: int
    kind: str
    message: str
    a: str | None
    b: str | None

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def side_names(a: ProbeReport, b: ProbeReport) -> tuple[str, str]:
    """How to call the two sides: host names, else labels, else a/b."""
    ha, hb = a.host, b.host
    if ha and hb and ha != hb:
        return ha, hb
    la, lb = a.label, b.label
    if la and lb and la != lb:
        return str(la), str(lb)
    return "a", "b"


def _s(value: Any) -> str | None:
    return None if value is None else str(value)


def _tf32_on(value: Any) -> bool:
    return value is True or value in ("high", "medium", "tf32")


def _pairs(a: ProbeReport, b: ProbeReport) -> Iterator[tuple[int, str, str, Any, Any]]:
    """(weight, kind, what, value_a, value_b) for every knob."""
    ca, cb = a.config, b.config
    yield 100, "dtype", "dtype", ca.get("dtype"), cb.get("dtype")
    yield 96, "autocast", "autocast", ca.get("autocast"), cb.get("autocast")
    yield 90, "tf32", "--tf32", ca.get("tf32"), cb.get("tf32")
    yield 88, "device", "device", ca.get("device"), cb.get("device")
    yield 64, "mode", "mode", ca.get("mode"), cb.get("mode")
    yield 62, "threads", "threads", ca.get("threads"), cb.get("threads")
    fa, fb = a.fingerprint, b.fingerprint
    ea, eb = a.fact("env"), b.fact("env")
    for name in ("NVIDIA_TF32_OVERRIDE", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"):
        yield 90, "tf32", name, ea.get(name), eb.get(name)
    yield (
        66,
        "env",
        "CUBLAS_WORKSPACE_CONFIG",
        ea.get("CUBLAS_WORKSPACE_CONFIG"),
        eb.get("CUBLAS_WORKSPACE_CONFIG"),
    )
    for name in THREAD_ENV:
        yield 62, "threads", name, ea.get(name), eb.get(name)
    for name in sorted((set(ea) | set(eb)) - {*THREAD_ENV, "CUBLAS_WORKSPACE_CONFIG"}):
        yield 40, "env", name, ea.get(name), eb.get(name)
    yield 50, "driver", "NVIDIA driver", fa.get("gpu_driver"), fb.get("gpu_driver")
    yield 45, "cpu", "CPU", a.fact("cpu").get("model"), b.fact("cpu").get("model")
    yield 42, "cpu", "usable CPUs", a.fact("cpu").get("affinity"), b.fact("cpu").get("affinity")
    yield 35, "python", "Python", a.fact("python").get("version"), b.fact("python").get("version")
    yield 20, "image", "image", a.fact("container").get("image_id"), b.fact("container").get("image_id")
    da, db = a.driver, b.driver
    for what, attr in (
        ("driver floor", "min_driver"),
        ("driver floor (minor-version compat)", "compat_driver"),
    ):
        yield 49, "driver", what, getattr(da, attr, None), getattr(db, attr, None)
    yield from _framework_pairs(a, b)
    yield from _readiness_pairs(a, b)


def _readiness_pairs(a: ProbeReport, b: ProbeReport) -> Iterator[tuple[int, str, str, Any, Any]]:
    """The GPU readiness facts (``fingerprint.cuda_readiness``): the CUDA libraries a framework
    actually loads and the GPU code each library carries. Absent on one side: nothing to say."""
    ra, rb = a.fact("cuda_readiness"), b.fact("cuda_readiness")
    if not ra or not rb:
        return
    fa, fb = _mapping(ra.get("frameworks")), _mapping(rb.get("frameworks"))
    for fw in sorted(set(fa) & set(fb)):
        la, lb = _mapping(_mapping(fa[fw]).get("loaded")), _mapping(_mapping(fb[fw]).get("loaded"))
        for lib in sorted(set(la) | set(lb)):
            yield 79, "cuda-library", f"{fw} loads {lib}", la.get(lib), lb.get(lib)
    ga, gb = _mapping(ra.get("gpu_code")), _mapping(rb.get("gpu_code"))
    for lib in sorted(set(ga) | set(gb)):
        for key in ("sass", "ptx"):
            va, vb = _mapping(ga.get(lib)).get(key), _mapping(gb.get(lib)).get(key)
            yield 82, "gpu-code", f"{lib} {key.upper()}", _archs(va), _archs(vb)


def _mapping(value: Any) -> dict[str, object]:
    return dict(value) if isinstance(value, Mapping) else {}


def _archs(value: Any) -> str | None:
    if not isinstance(value, list):
        return None
    return ", ".join(str(v) for v in value) or "none"


def _framework_pairs(a: ProbeReport, b: ProbeReport) -> Iterator[tuple[int, str, str, Any, Any]]:
    for fw in sorted(set(a.frameworks) & set(b.frameworks)):
        ra, rb = a.frameworks[fw], b.frameworks[fw]
        ia, ib = ra.info, rb.info
        yield 70, "framework", fw, ia.get("version"), ib.get("version")
        gpus_a = ", ".join(sorted({g.capability for g in ra.gpus})) or None
        gpus_b = ", ".join(sorted({g.capability for g in rb.gpus})) or None
        yield 84, "gpu", "GPU", gpus_a, gpus_b
        yield (
            83,
            "gpu",
            "GPU model",
            ", ".join(g.name for g in ra.gpus) or None,
            ", ".join(g.name for g in rb.gpus) or None,
        )
        yield 80, "cudnn", "cuDNN", ia.get("cudnn"), ib.get("cudnn")
        yield 76, "cuda", "CUDA runtime", ia.get("cuda_runtime"), ib.get("cuda_runtime")
        yield 30, "nccl", "NCCL", ia.get("nccl"), ib.get("nccl")
        yield 58, "blas", f"{fw} BLAS", ia.get("blas"), ib.get("blas")
        sa, sb = ra.switches, rb.switches
        for key in sorted(set(sa) | set(sb)):
            weight, kind = (90, "tf32") if key in TF32_SWITCHES else (65, "determinism")
            if key in ("num_threads", "num_interop_threads"):
                weight, kind = 62, "threads"
            elif key.startswith("FLAGS_"):
                weight, kind = 48, "flags"
            elif key not in TF32_SWITCHES and key not in DETERMINISM:
                weight, kind = 40, "switch"
            yield weight, kind, f"{fw} {key}", sa.get(key), sb.get(key)


def _message(kind: str, what: str, va: str | None, vb: str | None, names: tuple[str, str]) -> str:
    if kind == "tf32" and _tf32_on(_parse(va)) != _tf32_on(_parse(vb)):
        side = names[1] if _tf32_on(_parse(vb)) else names[0]
        return f"TF32 on {side} only ({what}: {va} vs {vb})"
    if va is None or vb is None:
        side = names[0] if vb is None else names[1]
        return f"{what} {va if va is not None else vb} on {side} only"
    return f"{what} {va} vs {vb}"


def _parse(value: str | None) -> Any:
    return {"True": True, "False": False}.get(value, value) if value is not None else None


def likely_causes(a: ProbeReport, b: ProbeReport, names: tuple[str, str]) -> list[Cause]:
    """Every environment difference, ranked by how likely it moves the numbers (heaviest first)."""
    causes = []
    for weight, kind, what, va, vb in _pairs(a, b):
        if va == vb:
            continue
        sa, sb = _s(va), _s(vb)
        causes.append(Cause(weight, kind, _message(kind, what, sa, sb, names), sa, sb))
    causes += _package_causes(a, b, names)
    return sorted(causes, key=lambda c: (-c.weight, c.message))


def _package_causes(a: ProbeReport, b: ProbeReport, names: tuple[str, str]) -> list[Cause]:
    da, db = a.fact("distributions"), b.fact("distributions")
    frameworks = {"torch", "paddlepaddle", "paddlepaddle-gpu"}
    out = []
    for name in sorted((set(da) | set(db)) - frameworks):
        va, vb = _s(da.get(name)), _s(db.get(name))
        if va == vb:
            continue
        weight = 55 if name == "numpy" else 52 if name.startswith(("nvidia-", "mkl", "intel-openmp")) else 10
        out.append(Cause(weight, "package", _message("package", name, va, vb, names), va, vb))
    heavy = [c for c in out if c.weight > 10]
    light = [c for c in out if c.weight == 10]
    if len(light) > MAX_PACKAGES:
        rest = len(light) - MAX_PACKAGES
        light = [
            *light[:MAX_PACKAGES],
            Cause(9, "package", f"and {rest} more package differences", None, None),
        ]
    return heavy + light
