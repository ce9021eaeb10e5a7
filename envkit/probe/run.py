"""What ``envkit probe`` does, as values: run the probe and file its report.

The CLI parses options, calls :func:`probe` and renders the result; comparing reports is
:mod:`envkit.comparison`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from envkit._atomic import write_text_atomic
from envkit.errors import ProbeError, UsageError
from envkit.probe.driver import driver_check, driver_line, image_cuda
from envkit.probe.model import ProbeReport, RunStatus
from envkit.probe.report import dump_report
from envkit.probe.runner import ProbeOptions, run_in_image, run_on_host
from envkit.store.layout import DEFAULT_LABEL, safe_name, save_to_store

if TYPE_CHECKING:
    from envkit.engine.protocol import ContainerEngine

__all__ = ["ProbeRun", "SummaryRow", "probe", "resolve_image", "summarize"]


def _json_number(value: float | None) -> float | str | None:
    """As the payload writes numbers: NaN/Inf as ``"nan"`` / ``"inf"`` / ``"-inf"`` (JSON has none)."""
    if value is None or math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


@dataclass(frozen=True)
class SummaryRow:
    """One framework × workload of a finished probe: its status (``nan/inf`` when NaN/Inf showed)."""

    framework: str
    workload: str
    status: str
    loss_first: float | None
    loss_last: float | None
    sha256: str | None
    note: str

    def to_json(self) -> dict[str, object]:
        return {
            "framework": self.framework,
            "workload": self.workload,
            "status": self.status,
            "loss_first": _json_number(self.loss_first),
            "loss_last": _json_number(self.loss_last),
            "sha256": self.sha256,
            "note": self.note,
        }


@dataclass(frozen=True)
class ProbeRun:
    """A finished probe: its report, where it was written and one summary row per workload."""

    label: str
    report: ProbeReport
    written: tuple[str, ...]
    summary: tuple[SummaryRow, ...]

    @property
    def nonfinite(self) -> bool:
        """NaN/Inf in any workload, by the report's marker (a finding)."""
        entries = self.report.frameworks.values()
        return any(r.nonfinite is not None for e in entries for r in e.workloads.values())

    @property
    def warnings(self) -> tuple[str, ...]:
        """One line per framework that did not run (skipped, failed); a host driver too old for the image."""
        found = [f"{fw}: {e.status}: {e.reason}" for fw, e in self.report.frameworks.items() if not e.ok]
        check = self.report.driver
        if check and check.status in ("too-old", "compat-only"):
            found.append(driver_line(check))
        return tuple(found)

    @property
    def budget(self) -> dict[str, object] | None:
        """With --budget: the seconds, the steps asked, the steps that ran and what was timed to plan them."""
        seconds = self.report.config.get("budget_s")
        if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
            return None
        entries = self.report.document.get("frameworks")
        plans = (
            [
                e["budget"]
                for e in entries.values()
                if isinstance(e, Mapping) and isinstance(e.get("budget"), Mapping)
            ]
            if isinstance(entries, Mapping)
            else []
        )
        plan = plans[0] if plans else {}
        return {
            "seconds": float(seconds),
            "steps": self.report.config.steps,
            "steps_asked": plan.get("steps_asked"),
            "fit": plan.get("fit"),
            "step_s": plan.get("step_s"),
        }

    def budget_line(self) -> str | None:
        budget = self.budget
        if budget is None:
            return None
        timed = budget["step_s"] if isinstance(budget["step_s"], Mapping) else {}
        per_step = ", ".join(f"{w} {float(t):.3g} s" for w, t in timed.items())
        return (f"budget {budget['seconds']:g} s: {budget['steps']} of {budget['steps_asked']} steps ran "
                f"({budget['fit']} fitted; one timed step: {per_step or 'none'})")  # fmt: skip

    def to_json(self) -> dict[str, object]:
        return {
            "label": self.label,
            "written": list(self.written),
            "summary": [row.to_json() for row in self.summary],
            "budget": self.budget,
            "report": self.report.to_json(),
        }


def resolve_image(engine: ContainerEngine, ref: str) -> str:
    """An image reference, or an environment name built as ``envkit/NAME``."""
    if engine.inspect(ref) is not None or ":" in ref or "/" in ref:
        return ref
    for candidate in (f"envkit/{ref}:latest", f"envkit/{ref}"):
        if engine.inspect(candidate) is not None:
            return candidate
    return ref


def _require_a_framework(report: ProbeReport, *, where: str) -> None:
    """A probe in which no framework ran measured nothing: a tool failure (exit 3), not an empty success."""
    entries = report.frameworks
    if any(e.ok for e in entries.values()):
        return
    why = "; ".join(f"{fw}: {e.status}: {e.reason}" for fw, e in sorted(entries.items()))
    raise ProbeError(
        f"no framework ran {where} ({why or 'none asked'}); nothing was measured and no report was written",
        hint="install torch and/or paddlepaddle there (pip install torch / paddlepaddle), "
        "or probe an image that has them: envkit probe --image NAME",
    )


def _interpreter(python: Path) -> str:
    """``--python PATH`` as the path to run: an executable file, else a usage error naming it."""
    if not python.is_file() or not os.access(python, os.X_OK):
        raise UsageError(
            f"--python {python}: not an executable file",
            hint="give an interpreter, e.g. --python /opt/conda/envs/NAME/bin/python",
        )
    return str(python)


def probe(
    opts: ProbeOptions,
    *,
    store: Path | None,
    label: str | None = None,
    output: Path | None = None,
    image: str | None = None,
    engine: ContainerEngine | None = None,
    require_framework: bool = True,
    python: Path | None = None,
) -> ProbeRun:
    """Run the probe on the host, or in ``image`` through ``engine``; write it to ``output`` and ``store``.

    ``store`` None keeps the report out of the store. The label defaults to ``latest`` on the host and
    ``image-<image>`` in an image. When no framework ran, :class:`ProbeError` (exit 3) unless
    ``require_framework`` is False (a build's probe of a spec without frameworks). ``python`` runs
    the host probe with that interpreter (another environment on this host) instead of envkit's own.
    """
    if image is not None:
        if engine is None:
            raise ValueError("probe(image=...) needs an engine")
        image = resolve_image(engine, image)
        label = label or f"image-{safe_name(image)}"
        import socket

        report = run_in_image(engine, image, opts, label=label, host=socket.gethostname())
    else:
        label = label or DEFAULT_LABEL
        report = run_on_host(opts, label=label, python=_interpreter(python) if python else None)
    if require_framework:
        where = f"in {image}" if image else f"with {python}" if python else "on this host"
        _require_a_framework(report, where=where)
    if image_cuda(report) is not None:  # a CPU probe needs no catalog (pydantic: 0.4 s to import)
        from envkit.catalog import load_catalog

        report = report.with_driver(driver_check(report, load_catalog()))
    written = []
    if output is not None:
        write_text_atomic(output, dump_report(report))
        written.append(str(output))
    if store is not None:
        written.append(str(save_to_store(dump_report(report), store, report.host, label)))
    return ProbeRun(label, report, tuple(written), tuple(summarize(report)))


def summarize(report: ProbeReport) -> list[SummaryRow]:
    """One row per framework × workload: status (``nan/inf`` when NaN/Inf showed), first and last loss."""
    rows = []
    for fw, entry in report.frameworks.items():
        for wl, res in entry.workloads.items():
            bad = res.nonfinite
            note = res.reason or ""
            if bad:
                note = f"NaN/Inf at step {bad.step} ({bad.what}" + (
                    f", first parameter {bad.parameter})" if bad.parameter else f": {bad.op_error})"
                )
            status = "nan/inf" if bad and res.status is RunStatus.OK else res.status.value
            first, last = (res.steps[0], res.steps[-1]) if res.steps else (None, None)
            rows.append(
                SummaryRow(
                    fw,
                    wl,
                    status,
                    first.loss if first else None,
                    last.loss if last else None,
                    res.final_params_sha256,
                    note,
                )
            )
    return rows
