"""Compare two probe reports: verdict bands per framework × workload × metric, and likely causes.

Verdicts, best to worst: ``identical`` (bitwise) → ``equivalent`` → ``precision-drift`` →
``diverged`` → ``invalid`` (NaN/Inf or a failed run on one side). The default band edges separate
the rows in docs/concepts/determinism-bands.md (max relative difference over 20 steps, H200, torch 2.11):

* fp32 reordering noise (CPU vs GPU fp32, 1 vs 2 threads): 1e-7 … 7e-7 → ``equivalent`` ≤ 2e-6,
  about 3× above the largest noise row and 7× below the smallest TF32 row;
* TF32 on vs off 1.4e-5 … 2e-4, bf16 autocast 6e-5 … 7e-4 → ``precision-drift`` ≤ 5e-3, about 7×
  above the largest bf16 row, so a real bug (wrong init, a changed op) lands in ``diverged``.

Both edges are configurable (:class:`~envkit.comparison.bands.Bands`). Pure: reports in, values out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from envkit.comparison.bands import Bands, judge, onset_max
from envkit.comparison.causes import Cause, likely_causes, side_names
from envkit.comparison.numbering import POSITIONS, StepNumbers
from envkit.errors import ReportError
from envkit.probe.model import CompareVerdict, ProbeReport, WorkloadRun

__all__ = ["VERDICTS", "CompareVerdict", "MetricComparison", "PairComparison", "compare_reports", "worst"]

VERDICTS = tuple(CompareVerdict)  # best to worst
METRICS = ("loss", "grad_norm", "param_grad_norms", "final_params")
TRAJECTORY = ("loss", "grad_norm")  # judged on their own onset (envkit.comparison.bands)
PARAM_FLOOR = 1e-3


@dataclass(frozen=True)
class MetricComparison:
    """One framework × workload × metric of two reports: its verdict, the largest difference."""

    framework: str
    workload: str
    mode: str
    metric: str
    verdict: CompareVerdict
    max_rel_diff: float | None
    first_diff_step: int | None
    detail: str | None = None

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class PairComparison:
    """Two reports compared: the worst verdict, one per metric, the likely causes, notes."""

    verdict: CompareVerdict
    comparisons: tuple[MetricComparison, ...]
    causes: tuple[Cause, ...]
    names: tuple[str, str]
    notes: tuple[str, ...]
    bands: Bands
    numbering: StepNumbers = POSITIONS  # how the positions read as the runs' own steps

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "verdict": self.verdict,
            "comparisons": [c.to_json() for c in self.comparisons],
            "causes": [c.to_json() for c in self.causes],
            "names": list(self.names),
            "notes": list(self.notes),
            "bands": asdict(self.bands),
        }
        if self.numbering.known:  # a guarded run's: step K of a side is first_steps[side] - 1 + K
            data["first_steps"] = self.numbering.to_json()
        return data


def worst(verdicts: Sequence[CompareVerdict]) -> CompareVerdict:
    return max(verdicts, key=lambda v: v.rank, default=CompareVerdict.IDENTICAL)


def rel_diff(a: float, b: float, floor: float = 0.0) -> float:
    scale = max(abs(a), abs(b), floor)
    return 0.0 if a == b else abs(a - b) / scale


def check_comparable(a: ProbeReport, b: ProbeReport, names: tuple[str, str]) -> None:
    """Raise ReportError saying why two reports cannot be compared."""
    for key in ("seed", "steps"):
        va, vb = getattr(a.config, key), getattr(b.config, key)
        if va != vb:
            raise ReportError(
                f"cannot compare: different {key} ({names[0]}: {va}, {names[1]}: {vb})",
                hint=f"rerun one probe with --{key} {va}",
            )
    wa, wb = sorted(a.config.workloads), sorted(b.config.workloads)
    if wa != wb:
        raise ReportError(
            f"cannot compare: different workloads ({names[0]}: {','.join(wa)}, {names[1]}: {','.join(wb)})",
            hint="rerun both probes with the same --workloads",
        )


def _nonfinite_detail(side: str, res: WorkloadRun, first: int | None = None) -> str | None:
    """NaN/Inf in the raw numbers, the step flags or the report's marker: the marker alone is not trusted.

    Its steps are ``side``'s own numbers (``first``: its ``config.first_step``)."""
    step = res.first_bad_step
    if step is None:
        return None
    own = StepNumbers(((side, first),)).label
    where = f"NaN/Inf on {side} at step {own(step)}"
    bad = res.nonfinite
    if bad is not None:
        if bad.parameter:
            where += f" (first offending parameter: {bad.parameter}, {bad.what})"
        if bad.op_error:
            where += f" (op check: {bad.op_error})"
    found = res.first_nonfinite
    if found is not None and (bad is None or found[0] != bad.step):
        marker = "the report marks none" if bad is None else f"the report marks step {own(bad.step)}"
        where += f"; step {own(found[0])}: {found[1]} ({marker})"
    return where


Pair = tuple[int, str, float, float, float]


def _series(
    ra: WorkloadRun, rb: WorkloadRun, metric: str, numbering: StepNumbers = POSITIONS
) -> tuple[list[Pair], bool]:
    """(step, label, a, b, floor) for one metric, and whether the metric is bitwise equal overall."""
    pairs: list[Pair] = []
    if metric in ("loss", "grad_norm"):
        for sa, sb in zip(ra.steps, rb.steps, strict=True):
            label = f"step {numbering.label(sa.step)}"
            pairs.append((sa.step, label, getattr(sa, metric), getattr(sb, metric), 0.0))
        return pairs, all(p[2] == p[3] for p in pairs)
    if metric == "param_grad_norms":
        last = len(ra.steps)
        for which, step in (("first", 1), ("last", last)):
            ga, gb = ra.grad_norms(which), rb.grad_norms(which)
            # A parameter whose gradient is ~0 carries only rounding noise: measure it against a floor of
            # PARAM_FLOOR × the step's global grad norm instead of against itself.
            floor = PARAM_FLOOR * max(ra.steps[step - 1].grad_norm, rb.steps[step - 1].grad_norm)
            pairs += [(step, name, ga[name], gb[name], floor) for name in ga if name in gb]
        return pairs, all(p[2] == p[3] for p in pairs)
    na, nb = ra.final_param_norms, rb.final_param_norms
    last = len(ra.steps)
    pairs = [(last, name, na[name], nb[name], 0.0) for name in na if name in nb]
    # bitwise only when the digests agree AND so do the numbers: equal digests with different norms
    # are an inconsistent report, never "identical"
    same_digest = ra.final_params_sha256 == rb.final_params_sha256 and ra.final_params_sha256 is not None
    return pairs, same_digest and all(p[2] == p[3] for p in pairs)


def _diffs(
    ra: WorkloadRun, rb: WorkloadRun, metric: str, numbering: StepNumbers = POSITIONS
) -> tuple[list[tuple[float, int, str]], bool]:
    pairs, bitwise = _series(ra, rb, metric, numbering)
    return [(rel_diff(x, y, floor), step, label) for step, label, x, y, floor in pairs], bitwise


def _compare_metric(
    ra: WorkloadRun,
    rb: WorkloadRun,
    metric: str,
    bands: Bands,
    key: tuple[str, str, str],
    workload_onset: float,
    numbering: StepNumbers = POSITIONS,
) -> MetricComparison:
    diffs, bitwise = _diffs(ra, rb, metric, numbering)
    max_rel = max((d for d, _, _ in diffs), default=0.0)
    first = next((step for d, step, _ in diffs if d != 0.0), None)
    detail = None
    # equal parameter digests with different norms: a report contradicts itself; its raw difference
    # is judged on the fixed edges, never averaged into the workload's onset band
    inconsistent = (
        metric == "final_params" and max_rel > 0 and ra.final_params_sha256 == rb.final_params_sha256
    )
    if max_rel > 0:
        _, _, label = max(diffs)
        detail = f"largest at {label}"
        if inconsistent:
            detail += "; the same final_params_sha256 with different norms: a report is inconsistent"
    elif not bitwise:
        first, detail = len(ra.steps), "parameters differ bitwise; their norms agree"
    verdict = judge(
        [(s, d) for d, s, _ in diffs],
        bitwise=bitwise,
        workload_onset=workload_onset,
        edges=bands,
        trajectory=metric in TRAJECTORY,
    )
    if inconsistent:
        verdict = max(verdict, bands.verdict(max_rel, False), key=lambda v: v.rank)
    return MetricComparison(*key, metric, verdict, max_rel, first, detail)


def _compare_workload(
    fw: str,
    wl: str,
    mode: str,
    ra: WorkloadRun | None,
    rb: WorkloadRun | None,
    names: tuple[str, str],
    bands: Bands,
    numbering: StepNumbers = POSITIONS,
) -> list[MetricComparison]:
    key = (fw, wl, mode)
    firsts = [f for _, f in numbering.firsts] or [None, None]
    problems = []
    steps = []
    for side, res, first in zip(names, (ra, rb), firsts, strict=True):
        if res is None:
            problems.append(f"{wl} did not run on {side}")
        elif not res.ok:
            problems.append(f"{wl} failed on {side}: {str(res.reason)[:200]}")
        else:
            detail = _nonfinite_detail(side, res, first)
            if detail:
                problems.append(detail)
                steps.append(res.first_bad_step or 0)
    if problems or ra is None or rb is None:
        step = min(steps, default=None)
        return [
            MetricComparison(*key, m, CompareVerdict.INVALID, None, step, "; ".join(problems))
            for m in METRICS
        ]
    onsets = [onset_max([(step, d) for d, step, _ in _diffs(ra, rb, m)[0]], bands.window) for m in TRAJECTORY]
    workload_onset = max((o for o in onsets if o is not None), default=0.0)
    return [_compare_metric(ra, rb, m, bands, key, workload_onset, numbering) for m in METRICS]


def compare_reports(a: ProbeReport, b: ProbeReport, bands: Bands | None = None) -> PairComparison:
    """Compare ``a`` with ``b``; raise ReportError when they cannot be compared."""
    bands = bands or Bands()
    names = side_names(a, b)
    check_comparable(a, b, names)
    numbering = StepNumbers(((names[0], a.config.first_step), (names[1], b.config.first_step)))
    ma, mb = a.config.mode, b.config.mode
    mode = ma if ma == mb else f"{ma}/{mb}"
    comparisons: list[MetricComparison] = []
    notes: list[str] = []
    for fw in sorted(set(a.frameworks) | set(b.frameworks)):
        fa, fb = a.frameworks.get(fw), b.frameworks.get(fw)
        bad = [(side, f) for side, f in zip(names, (fa, fb), strict=True) if f is None or not f.ok]
        if bad:
            why = [
                f"{fw} on {side}: " + (f"{f.status}: {f.reason}" if f else "not probed") for side, f in bad
            ]
            notes += why
            if any(f is not None and f.status == "error" for _, f in bad):
                comparisons += [
                    MetricComparison(fw, wl, mode, "run", CompareVerdict.INVALID, None, None, "; ".join(why))
                    for wl in sorted(a.config.workloads)
                ]
            continue
        assert fa is not None and fb is not None
        for wl in sorted(a.config.workloads):
            comparisons += _compare_workload(
                fw, wl, mode, fa.workloads.get(wl), fb.workloads.get(wl), names, bands, numbering
            )
    if not comparisons:
        raise ReportError(
            "cannot compare: no framework ran on both sides" + (f" ({'; '.join(notes)})" if notes else ""),
            hint="install the same frameworks on both sides, or pick --frameworks that both have",
        )
    verdict = worst([c.verdict for c in comparisons])
    causes = tuple(likely_causes(a, b, names))
    return PairComparison(verdict, tuple(comparisons), causes, names, tuple(notes), bands, numbering)


def fmt_rel(value: float | None) -> str:
    if value is None:
        return "-"
    if value == 0 or math.isnan(value):
        return "0" if value == 0 else "nan"
    return f"{value:.1e}"
