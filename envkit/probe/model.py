"""The probe report as typed values, parsed once and strictly: standard library only.

``make gpu-check`` imports this module on a bare GPU machine (Python + CUDA torch, no pydantic),
so the models are frozen dataclasses and :func:`parse_report` validates by hand. Every problem is a
:class:`~envkit.errors.ReportError` (exit 2) naming the field: wrong types (``"schema": "1"`` is a
string, not the integer 1), missing keys, step lists whose length is not ``config.steps``, numbers
that are neither finite nor an explicit non-finite marker, integers too large for a float.

Non-finite numbers are data, not errors: the payload writes them as ``"nan"`` / ``"inf"`` /
``"-inf"`` (JSON has no NaN); a JSON ``NaN`` / ``Infinity`` literal is read the same way. They make
the comparison ``invalid`` (:attr:`WorkloadRun.first_nonfinite`), whatever the report's own
``nonfinite`` marker says.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from envkit._safe import one_line
from envkit.errors import ReportError
from envkit.probe.additions import DriverCheck, FleetInfo, RepeatSummary
from envkit.probe.schema import KIND, SCHEMA

__all__ = [
    "KIND",
    "SCHEMA",
    "CompareVerdict",
    "FrameworkRun",
    "Gpu",
    "NonFinite",
    "ProbeConfig",
    "ProbeReport",
    "RunStatus",
    "Step",
    "WorkloadRun",
    "parse_report",
    "read_fingerprint",
]

MAX_STEPS = 1_000_000
MAX_INT = 2**63
_NONFINITE = {"nan": math.nan, "inf": math.inf, "+inf": math.inf, "-inf": -math.inf, "infinity": math.inf}
_NONFINITE["-infinity"] = -math.inf


class CompareVerdict(str, Enum):
    """Compare verdicts, best to worst (the order is the severity)."""

    IDENTICAL = "identical"
    EQUIVALENT = "equivalent"
    PRECISION_DRIFT = "precision-drift"
    DIVERGED = "diverged"
    INVALID = "invalid"

    def __str__(self) -> str:
        return self.value

    @property
    def rank(self) -> int:
        return list(CompareVerdict).index(self)

    @property
    def ok(self) -> bool:
        return self in (CompareVerdict.IDENTICAL, CompareVerdict.EQUIVALENT)


class RunStatus(str, Enum):
    """A framework's or a workload's run: ``ok``, ``error`` (it raised) or ``skipped`` (not installed)."""

    OK = "ok"
    ERROR = "error"
    SKIPPED = "skipped"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Step:
    """One training step's numbers: loss, global grad norm, the payload's finite flags."""

    step: int
    loss: float  # nan / ±inf when the payload wrote a non-finite marker
    grad_norm: float
    finite: Mapping[str, bool] = field(default_factory=dict)  # the payload's own flags
    op_error: str | None = None

    @property
    def nonfinite(self) -> bool:
        values = (self.loss, self.grad_norm)
        return not all(math.isfinite(v) for v in values) or not all(self.finite.values())


@dataclass(frozen=True)
class NonFinite:
    """The payload's marker: the first step with NaN/Inf, what and where."""

    step: int
    what: str
    parameter: str | None = None
    op_error: str | None = None


@dataclass(frozen=True)
class WorkloadRun:
    """One workload of one framework: its steps, parameter norms, final digest, NaN/Inf marker."""

    status: RunStatus
    reason: str | None = None
    params: tuple[str, ...] = ()
    steps: tuple[Step, ...] = ()
    grad_norms_first: Mapping[str, float] = field(default_factory=dict)
    grad_norms_last: Mapping[str, float] = field(default_factory=dict)
    final_param_norms: Mapping[str, float] = field(default_factory=dict)
    final_params_sha256: str | None = None
    nonfinite: NonFinite | None = None

    @property
    def ok(self) -> bool:
        return self.status is RunStatus.OK

    def grad_norms(self, which: str) -> Mapping[str, float]:
        return self.grad_norms_first if which == "first" else self.grad_norms_last

    @property
    def first_nonfinite(self) -> tuple[int, str] | None:
        """(step, what) of the first NaN/Inf in the raw numbers or the step flags; None when all finite.

        The report's own ``nonfinite`` marker is not consulted: a report that omits it still shows
        its NaN here (see :attr:`first_bad_step` for the marker too).
        """
        found: list[tuple[int, str]] = []
        for s in self.steps:
            for name, value in (("loss", s.loss), ("grad_norm", s.grad_norm)):
                if not math.isfinite(value):
                    found.append((s.step, f"{name} is {value}"))
            if not all(s.finite.values()):
                bad = ", ".join(k for k, v in sorted(s.finite.items()) if not v)
                found.append((s.step, f"its finite flags are false for {bad}"))
        last = len(self.steps)
        for which, step in (("first", 1), ("last", last)):
            for name, value in sorted(self.grad_norms(which).items()):
                if not math.isfinite(value):
                    found.append((step, f"the grad norm of {name} is {value}"))
        for name, value in sorted(self.final_param_norms.items()):
            if not math.isfinite(value):
                found.append((last, f"the final norm of {name} is {value}"))
        return min(found, key=lambda f: f[0]) if found else None

    @property
    def first_bad_step(self) -> int | None:
        """The first step with NaN/Inf by the numbers or by the report's marker."""
        steps = [f[0] for f in (self.first_nonfinite,) if f] + (
            [self.nonfinite.step] if self.nonfinite else []
        )
        return min(steps, default=None)


@dataclass(frozen=True)
class Gpu:
    """A GPU the framework saw: its name and compute capability."""

    name: str
    capability: str  # "9.0"
    uuid: str | None = None  # the device's own id (torch's ``get_device_properties(i).uuid``), when known


@dataclass(frozen=True)
class FrameworkRun:
    """One framework's run: its status, facts, GPUs, switches and workloads."""

    status: RunStatus
    reason: str | None = None
    info: Mapping[str, object] = field(default_factory=dict)  # versions, BLAS, NCCL: open-ended facts
    workloads: Mapping[str, WorkloadRun] = field(default_factory=dict)
    cuda_runtime: str | None = None  # the CUDA the framework was built with ("11.8"), None on CPU builds
    gpus: tuple[Gpu, ...] = ()
    switches: Mapping[str, object] = field(default_factory=dict)  # TF32, determinism, threads, FLAGS_*

    @property
    def ok(self) -> bool:
        return self.status is RunStatus.OK


@dataclass(frozen=True)
class ProbeConfig:
    """The probe's configuration as the report records it (seed, steps, workloads, mode, dtype)."""

    seed: int
    steps: int
    workloads: tuple[str, ...]
    mode: str
    dtype: str
    values: Mapping[str, object] = field(default_factory=dict)  # every config key, for the causes
    # the run's own number of its first step (a guarded run: often 0, or a resumed run's step);
    # None: the steps are numbered 1..N (every probe report, and guard reports before it was written)
    first_step: int | None = None

    def get(self, key: str) -> object:
        return self.values.get(key)


@dataclass(frozen=True)
class ProbeReport:
    """A validated report, parsed once. ``document`` is the JSON object it was parsed from; what the
    host adds (label, host facts, driver check, fleet task) are typed copies (``with_*``), written
    back by :meth:`to_json`."""

    config: ProbeConfig
    fingerprint: Mapping[str, object]  # host facts: open-ended by design (env, distributions, ...)
    frameworks: Mapping[str, FrameworkRun]
    label: str | None
    document: Mapping[str, object] = field(repr=False, compare=False)
    fleet: FleetInfo | None = None  # what a fleet task adds (envkit.fleet.task)
    driver: DriverCheck | None = None  # the host's driver against the image's CUDA (envkit.probe.driver)

    @property
    def host(self) -> str | None:
        host = self.fingerprint.get("host")
        return str(host) if host else None

    def fact(self, key: str) -> Mapping[str, object]:
        """A fingerprint section (``env``, ``distributions``, ``cpu``, ``python``, ``container``), or {}.

        Their shapes were checked when the report was parsed; their content stays open.
        """
        value = self.fingerprint.get(key)
        return value if isinstance(value, Mapping) else {}

    @property
    def repeat(self) -> RepeatSummary | None:
        return self.fleet.repeat if self.fleet is not None else None

    def with_host_facts(self, label: str, facts: Mapping[str, object]) -> ProbeReport:
        """A copy labelled ``label`` whose fingerprint also holds ``facts`` (they win)."""
        return replace(self, label=label, fingerprint={**self.fingerprint, **facts})

    def with_driver(self, check: DriverCheck | None) -> ProbeReport:
        return replace(self, driver=check)

    def with_fleet(self, fleet: FleetInfo) -> ProbeReport:
        """A copy filed by a fleet task: the fingerprint's host is the task's node."""
        facts = {"host": fleet.node} if fleet.node is not None else {}
        return replace(self, fleet=fleet, fingerprint={**self.fingerprint, **facts})

    def to_json(self) -> dict[str, object]:
        """The JSON document: the one parsed, with the host's additions."""
        data: dict[str, object] = {**self.document, "fingerprint": dict(self.fingerprint)}
        if self.label is not None:
            data["label"] = self.label
        if self.driver is not None:
            data["driver"] = self.driver.to_json()
        if self.fleet is not None:
            data["fleet"] = self.fleet.to_json()
        return data


# -- parsing ------------------------------------------------------------------------------------


class _Reader:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, what: str) -> ReportError:
        return ReportError(
            f"{self.source}: not a valid probe report: {where}: {what}",
            hint="the file is truncated, edited or not written by `envkit probe`; rerun the probe",
        )

    def obj(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"expected an object, got {_kind(value)}")
        return value

    def text(self, value: Any, where: str, *, optional: bool = False, limit: int = 10_000) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str):
            raise self.fail(where, f"expected a string, got {_kind(value)}")
        if len(value) > limit:
            raise self.fail(where, f"a string of {len(value)} characters (at most {limit})")
        return value

    def integer(self, value: Any, where: str, low: int, high: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(where, f"expected an integer, got {_kind(value)}")
        if not low <= value <= high:
            raise self.fail(where, f"{_short(value)} is out of range ({low} … {high})")
        return value

    def number(self, value: Any, where: str) -> float:
        """A finite number, or an explicit non-finite marker ("nan", "inf", "-inf", or a JSON literal)."""
        if isinstance(value, bool):
            raise self.fail(where, "expected a number, got a boolean")
        if isinstance(value, int):
            if abs(value) > 2**1023:
                raise self.fail(where, f"the integer {_short(value)} is too large for a float")
            return float(value)
        if isinstance(value, float):
            return value
        if isinstance(value, str) and value.strip().lower() in _NONFINITE:
            return _NONFINITE[value.strip().lower()]
        raise self.fail(where, f"expected a number or 'nan'/'inf'/'-inf', got {_kind(value)}")

    def numbers(self, value: Any, where: str) -> dict[str, float]:
        data = self.obj(value, where)
        return {str(k): self.number(v, f"{where}.{k}") for k, v in data.items()}


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"the string {_short(value)!r}"
    if isinstance(value, int | float):
        return f"the number {_short(value)}"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else type(value).__name__


def _short(value: Any) -> str:
    text = str(value) if not isinstance(value, int) or abs(value) < 10**30 else f"<{len(str(value))} digits>"
    return text if len(text) <= 40 else text[:37] + "..."


def parse_report(data: Any, source: str) -> ProbeReport:
    """Validate ``data`` (a loaded JSON document) and return it typed; ReportError naming the field."""
    r = _Reader(source)
    top = r.obj(data, "the top level")
    if top.get("kind") != KIND:
        raise r.fail("kind", f"expected {KIND!r}, got {_kind(top.get('kind'))}")
    schema = top.get("schema")
    if isinstance(schema, bool) or not isinstance(schema, int):
        raise ReportError(
            f"{source}: probe report schema has the wrong type: {_kind(schema)}, "
            f"expected the integer {SCHEMA}",
            hint="the file was edited or written by another tool; rerun `envkit probe`",
        )
    if schema != SCHEMA:
        raise ReportError(
            f"{source}: probe report schema {schema}, this envkit reads schema {SCHEMA}",
            hint="rerun the probe with this envkit version, or compare with the envkit that wrote it",
        )
    config = _config(r, top.get("config"))
    fingerprint = _fingerprint(r, top.get("fingerprint"))
    frameworks = {
        r.text(fw, f"frameworks key {fw!r}", limit=100) or fw: _framework(
            r, entry, f"frameworks.{fw}", config
        )
        for fw, entry in r.obj(top.get("frameworks"), "frameworks").items()
    }
    label = r.text(top.get("label"), "label", optional=True, limit=1000)
    fleet, driver = _fleet(r, top.get("fleet")), _driver(r, top.get("driver"))
    return ProbeReport(config, fingerprint, frameworks, label, top, fleet, driver)


def _fleet(r: _Reader, value: Any) -> FleetInfo | None:
    if value is None:
        return None
    data = r.obj(value, "fleet")
    run, task, node, job = (
        r.text(data.get(k), f"fleet.{k}", optional=True, limit=1000) for k in ("run", "task", "node", "job")
    )
    repeat = None
    if data.get("repeat") is not None:
        rep = r.obj(data["repeat"], "fleet.repeat")
        n = r.integer(rep["n"], "fleet.repeat.n", 1, MAX_STEPS) if "n" in rep else 1
        differing = rep.get("differing") or []
        if not isinstance(differing, list):
            raise r.fail("fleet.repeat.differing", f"expected a list, got {_kind(differing)}")
        identical = rep.get("identical")
        if identical is not None and not isinstance(identical, bool):
            raise r.fail("fleet.repeat.identical", f"expected true or false, got {_kind(identical)}")
        names = tuple(
            r.text(d, f"fleet.repeat.differing[{i}]", limit=1000) or "" for i, d in enumerate(differing)
        )
        repeat = RepeatSummary(n, identical, names)
    return FleetInfo(run, task, node, job, repeat)


def _driver(r: _Reader, value: Any) -> DriverCheck | None:
    if value is None:
        return None
    data = r.obj(value, "driver")
    cuda, status = (r.text(data.get(k), f"driver.{k}", limit=100) or "" for k in ("cuda", "status"))
    low, compat, host = (
        r.text(data.get(k), f"driver.{k}", optional=True, limit=100)
        for k in ("min_driver", "compat_driver", "host_driver")
    )
    return DriverCheck(cuda, low, compat, host, status)


def _config(r: _Reader, value: Any) -> ProbeConfig:
    data = r.obj(value, "config")
    for key in ("seed", "steps", "workloads", "mode", "dtype"):
        if key not in data:
            raise r.fail(f"config.{key}", "missing")
    workloads = data["workloads"]
    if not isinstance(workloads, list) or not workloads:
        raise r.fail("config.workloads", f"expected a non-empty list of names, got {_kind(workloads)}")
    names = tuple(r.text(w, f"config.workloads[{i}]", limit=100) or "" for i, w in enumerate(workloads))
    return ProbeConfig(
        seed=r.integer(data["seed"], "config.seed", -MAX_INT, MAX_INT),
        steps=r.integer(data["steps"], "config.steps", 1, MAX_STEPS),
        workloads=names,
        mode=r.text(data["mode"], "config.mode", limit=100) or "",
        dtype=r.text(data["dtype"], "config.dtype", limit=100) or "",
        values=data,
        first_step=(
            None
            if data.get("first_step") is None
            else r.integer(data["first_step"], "config.first_step", -MAX_INT, MAX_INT)
        ),
    )


def _fingerprint(r: _Reader, value: Any) -> dict[str, object]:
    """The host facts the causes read: their shapes are checked, their content stays open."""
    data = r.obj(value, "fingerprint")
    for key in ("host", "gpu_driver"):
        if key in data and data[key] is not None and not isinstance(data[key], str | int | float):
            raise r.fail(f"fingerprint.{key}", f"expected a string, got {_kind(data[key])}")
    for key in ("env", "distributions", "cpu", "python"):
        if key in data:
            r.obj(data[key], f"fingerprint.{key}")
    if data.get("cuda_readiness") is not None:  # since issue 31; older reports have none
        _readiness(r, data["cuda_readiness"])
    if data.get("container") is not None:
        r.obj(data["container"], "fingerprint.container")
    return data


def read_fingerprint(value: Any, source: str) -> dict[str, object]:
    """A report's ``fingerprint`` section read alone (shared by many reports), checked as in a report."""
    return _fingerprint(_Reader(source), value)


def _readiness(r: _Reader, value: Any) -> None:
    """``fingerprint.cuda_readiness``: per framework its loaded versions, per library its GPU code."""
    where = "fingerprint.cuda_readiness"
    data = r.obj(value, where)
    for name, fw in r.obj(data.get("frameworks", {}), f"{where}.frameworks").items():
        r.obj(r.obj(fw, f"{where}.frameworks[{one_line(name[:80])}]").get("loaded", {}), f"{where}...loaded")
    for lib, code in r.obj(data.get("gpu_code", {}), f"{where}.gpu_code").items():
        entry = r.obj(code, f"{where}.gpu_code[{one_line(lib[:80])}]")
        if not all(isinstance(entry.get(k, []), list) for k in ("sass", "ptx")):
            raise r.fail(f"{where}.gpu_code[{one_line(lib[:80])}]", "sass and ptx must be lists")


def _info(r: _Reader, value: Any, where: str) -> tuple[dict[str, object], tuple[Gpu, ...], dict[str, object]]:
    """The framework's facts, its GPUs and its switches."""
    data = r.obj(value, where)
    gpus = data.get("gpus") or []
    if not isinstance(gpus, list):
        raise r.fail(f"{where}.gpus", f"expected a list, got {_kind(gpus)}")
    found = []
    for i, gpu in enumerate(gpus):
        g = r.obj(gpu, f"{where}.gpus[{i}]")
        name, capability = (
            r.text(g.get(k), f"{where}.gpus[{i}].{k}", limit=1000) or "" for k in ("name", "capability")
        )
        uuid = r.text(g.get("uuid"), f"{where}.gpus[{i}].uuid", limit=200) if g.get("uuid") else None
        found.append(Gpu(name, capability, uuid or None))
    switches = r.obj(data["switches"], f"{where}.switches") if "switches" in data else {}
    return data, tuple(found), switches


def _status(r: _Reader, value: Any, where: str) -> RunStatus:
    try:
        return RunStatus(value)
    except ValueError:
        allowed = ", ".join(s.value for s in RunStatus)
        raise r.fail(f"{where}.status", f"expected one of {allowed}, got {_kind(value)}") from None


def _framework(r: _Reader, value: Any, where: str, config: ProbeConfig) -> FrameworkRun:
    data = r.obj(value, where)
    status = _status(r, data.get("status"), where)
    reason = r.text(data.get("reason"), f"{where}.reason", optional=True)
    info, gpus, switches = _info(r, data.get("info") or {}, f"{where}.info")
    # the payload writes it inside ``info``; a top-level key (older reports) still counts
    field = f"{where}.cuda_runtime" if "cuda_runtime" in data else f"{where}.info.cuda_runtime"
    runtime = data["cuda_runtime"] if "cuda_runtime" in data else info.get("cuda_runtime")
    if runtime is not None and not isinstance(runtime, str | int | float):
        raise r.fail(field, f"expected a string, got {_kind(runtime)}")
    raw_workloads = data.get("workloads")
    if status is RunStatus.OK and raw_workloads is None:
        raise r.fail(f"{where}.workloads", "missing")
    workloads = {
        str(wl): _workload(r, res, f"{where}.workloads.{wl}", config)
        for wl, res in r.obj(raw_workloads or {}, f"{where}.workloads").items()
    }
    return FrameworkRun(status, reason, info, workloads, str(runtime) if runtime else None, gpus, switches)


def _workload(r: _Reader, value: Any, where: str, config: ProbeConfig) -> WorkloadRun:
    data = r.obj(value, where)
    status = _status(r, data.get("status"), where)
    reason = r.text(data.get("reason"), f"{where}.reason", optional=True)
    if status is not RunStatus.OK:
        return WorkloadRun(status, reason)
    raw_steps = data.get("steps")
    if not isinstance(raw_steps, list):
        raise r.fail(f"{where}.steps", f"expected a list, got {_kind(raw_steps)}")
    if len(raw_steps) != config.steps:
        raise r.fail(f"{where}.steps", f"{len(raw_steps)} steps, config.steps is {config.steps}")
    steps = tuple(_step(r, s, f"{where}.steps[{i}]", i + 1) for i, s in enumerate(raw_steps))
    params_raw = data.get("params") or []
    if not isinstance(params_raw, list):
        raise r.fail(f"{where}.params", f"expected a list of names, got {_kind(params_raw)}")
    params = tuple(r.text(p, f"{where}.params[{i}]", limit=1000) or "" for i, p in enumerate(params_raw))
    grads = r.obj(data.get("param_grad_norms") or {}, f"{where}.param_grad_norms")
    first = r.numbers(grads.get("first") or {}, f"{where}.param_grad_norms.first")
    last = r.numbers(grads.get("last") or {}, f"{where}.param_grad_norms.last")
    final = r.numbers(data.get("final_param_norms") or {}, f"{where}.final_param_norms")
    if params:
        for name, norms in (("param_grad_norms.first", first), ("param_grad_norms.last", last)):
            unknown = sorted(set(norms) - set(params))
            if unknown:
                raise r.fail(f"{where}.{name}", f"names {', '.join(unknown[:3])} that are not in params")
        if final and sorted(final) != sorted(params):
            raise r.fail(f"{where}.final_param_norms", "its names are not the workload's params")
    sha = r.text(data.get("final_params_sha256"), f"{where}.final_params_sha256", optional=True, limit=200)
    marker = data.get("nonfinite")
    nonfinite = None
    if marker is not None:
        m = r.obj(marker, f"{where}.nonfinite")
        nonfinite = NonFinite(
            r.integer(m.get("step"), f"{where}.nonfinite.step", 1, config.steps),
            r.text(m.get("what"), f"{where}.nonfinite.what", limit=100) or "",
            r.text(m.get("parameter"), f"{where}.nonfinite.parameter", optional=True, limit=1000),
            r.text(m.get("op_error"), f"{where}.nonfinite.op_error", optional=True),
        )
    return WorkloadRun(status, reason, params, steps, first, last, final, sha, nonfinite)


def _step(r: _Reader, value: Any, where: str, number: int) -> Step:
    data = r.obj(value, where)
    step = r.integer(data.get("step"), f"{where}.step", 1, MAX_STEPS)
    if step != number:
        raise r.fail(f"{where}.step", f"step {step} where step {number} belongs")
    for key in ("loss", "grad_norm"):
        if key not in data:
            raise r.fail(f"{where}.{key}", "missing")
    flags = r.obj(data.get("finite") or {}, f"{where}.finite")
    for key, flag in flags.items():
        if not isinstance(flag, bool):
            raise r.fail(f"{where}.finite.{key}", f"expected true or false, got {_kind(flag)}")
    return Step(
        step,
        r.number(data["loss"], f"{where}.loss"),
        r.number(data["grad_norm"], f"{where}.grad_norm"),
        flags,
        r.text(data.get("op_error"), f"{where}.op_error", optional=True),
    )
