"""Compare N probe reports: bitwise groups, the majority, and a verdict and causes per outlier. Pure.

Reports whose numbers are bitwise identical (every step's loss and grad norm, the final parameters'
sha256, per framework × workload) form a group; the largest group is the majority (none on a tie).
Each report outside it is compared with the majority's first report (:func:`compare_reports`: the
bands) and its environment differences are ranked (:func:`likely_causes`).

``suspect`` (listed first): the numbers differ although nothing that moves them does: same GPU
model, driver, CUDA stack, framework builds, every switch, strict mode. The hardware is the likely
cause (a silently faulty device). A report whose own ``--repeat`` reruns differ is suspect too.
Only per-task variables (``CUDA_VISIBLE_DEVICES``) are ignored in that judgement.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from envkit._memo import by_identity
from envkit.comparison.bands import Bands
from envkit.comparison.causes import Cause, likely_causes
from envkit.comparison.numbering import POSITIONS, StepNumbers
from envkit.comparison.pairwise import PairComparison, check_comparable, compare_reports
from envkit.errors import ReportError
from envkit.probe.model import CompareVerdict, FrameworkRun, ProbeReport, WorkloadRun

__all__ = ["Group", "ManyComparison", "Outlier", "compare_many", "member_list", "numbers_key", "workload_key"]

PER_TASK = {"CUDA_VISIBLE_DEVICES"}


def member_list(names: Sequence[str], limit: int) -> str:
    """The first ``limit`` names, and how many more: ``a, b, c … (+N)``."""
    shown = ", ".join(names[:limit])
    return shown + (f" … (+{len(names) - limit})" if len(names) > limit else "")


def workload_key(res: WorkloadRun) -> tuple[Any, ...]:
    """Everything one workload's numbers are; equal keys mean bitwise-identical results."""
    steps = tuple((repr(s.loss), repr(s.grad_norm)) for s in res.steps)
    final = tuple((k, repr(v)) for k, v in sorted(res.final_param_norms.items()))
    return (res.status.value, steps, res.final_params_sha256, final)


def numbers_key(report: ProbeReport) -> tuple[Any, ...]:
    """Everything the report's numbers are; equal keys mean bitwise-identical numbers."""
    return _numbers_key(report.frameworks)


@by_identity  # once for the reports that share their numbers (a run read by SharedReader)
def _numbers_key(frameworks: Mapping[str, FrameworkRun]) -> tuple[Any, ...]:
    out = []
    for fw, entry in sorted(frameworks.items()):
        loads = tuple((wl, workload_key(res)) for wl, res in sorted(entry.workloads.items()))
        out.append((fw, entry.status.value, loads))
    return tuple(out)


@dataclass(frozen=True)
class Group:
    """Reports whose numbers are bitwise identical; the largest is the majority."""

    index: int  # 1-based, largest first
    members: tuple[str, ...]
    majority: bool
    verdict: CompareVerdict  # against the majority (identical for the majority itself)
    max_rel_diff: float | None
    first_diff_step: int | None

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class Outlier:
    """A report outside the majority's group, or a majority member whose own reruns differ.

    ``band`` is its verdict against the majority; ``suspect`` says the hardware is the likely cause
    (``reason`` says why). Its JSON ``verdict`` is ``"suspect"`` or the band.
    """

    name: str
    group: int
    band: CompareVerdict
    max_rel_diff: float | None
    first_diff_step: int | None
    causes: tuple[Cause, ...]
    suspect: bool = False
    reason: str | None = None  # why suspect

    @property
    def ok(self) -> bool:
        return self.band.ok and not self.suspect

    @property
    def tag(self) -> str:
        """What it is called: ``suspect``, or its band."""
        return "suspect" if self.suspect else self.band.value

    @property
    def severity(self) -> int:
        """Suspects first, then the worst band: 0 (suspect) … 5 (identical)."""
        return 0 if self.suspect else len(CompareVerdict) - self.band.rank

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "group": self.group,
            "verdict": self.tag,
            "band": self.band,
            "max_rel_diff": self.max_rel_diff,
            "first_diff_step": self.first_diff_step,
            "causes": [c.to_json() for c in self.causes],
            "reason": self.reason,
        }


@dataclass(frozen=True)
class ManyComparison:
    """N reports compared: bitwise groups, the majority, the outliers, failed tasks, the bands."""

    names: tuple[str, ...]
    groups: tuple[Group, ...]
    majority: int | None
    outliers: tuple[Outlier, ...]
    failed: tuple[tuple[str, str], ...]
    pairs: tuple[tuple[str, str, PairComparison], ...]  # (majority representative, group representative, …)
    bands: Bands
    numbering: StepNumbers = POSITIONS  # every report's first step (a guarded run's own numbering)

    @property
    def ok(self) -> bool:
        """Every report agrees with the majority within ``equivalent``; no suspect, no failed task."""
        return self.majority is not None and not self.failed and all(o.ok for o in self.outliers)

    def steps_of(self, group: Group) -> StepNumbers:
        """How ``group``'s ``first_diff_step`` reads as steps: group 1's first report's and its own."""
        firsts = dict(self.numbering.firsts)
        names = dict.fromkeys((self.groups[0].members[0], group.members[0]))
        return StepNumbers(tuple((n, firsts.get(n)) for n in names))

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "reports": len(self.names),
            "majority": self.majority,
            "ok": self.ok,
            "groups": [g.to_json() for g in self.groups],
            "outliers": [o.to_json() for o in self.outliers],
            "failed": [{"name": n, "error": e} for n, e in self.failed],
            "pairs": [
                {"a": a, "b": b, "verdict": c.verdict, "comparisons": [m.to_json() for m in c.comparisons]}
                for a, b, c in self.pairs
            ],
            "bands": asdict(self.bands),
        }
        if self.numbering.known:  # guarded runs: a report's step K is first_steps[name] - 1 + K
            data["first_steps"] = self.numbering.to_json()
        return data


def _same_setup(causes: Sequence[Cause], a: ProbeReport, b: ProbeReport) -> bool:
    """Nothing that moves the numbers differs, and both ran in strict mode."""
    relevant = [c for c in causes if not (c.kind == "env" and c.message.split(" ")[0] in PER_TASK)]
    strict = a.config.mode == "strict" == b.config.mode
    return strict and not relevant


def _self_suspect(report: ProbeReport) -> str | None:
    repeat = report.repeat
    if repeat is not None and repeat.n > 1 and repeat.identical is False:
        return f"its {repeat.n} strict reruns on the same node differ ({', '.join(repeat.differing)})"
    return None


def _group_reports(named: Sequence[tuple[str, ProbeReport]]) -> list[list[int]]:
    buckets: dict[tuple[Any, ...], list[int]] = {}
    for i, (_, report) in enumerate(named):
        buckets.setdefault(numbers_key(report), []).append(i)
    return sorted(buckets.values(), key=lambda idx: (-len(idx), named[idx[0]][0]))


def _with_self_suspects(
    named: Sequence[tuple[str, ProbeReport]], buckets: Sequence[Sequence[int]], outliers: list[Outlier]
) -> list[Outlier]:
    """``outliers`` and the reports suspect on their own (a majority member too), most severe first."""
    for i in buckets[0]:
        name, report = named[i]
        why = _self_suspect(report)
        if why:
            outliers.append(Outlier(name, 1, CompareVerdict.IDENTICAL, None, None, (), True, why))
    for i in (i for idx in buckets[1:] for i in idx):
        why = _self_suspect(named[i][1])
        if why:
            outliers = [
                o if o.name != named[i][0] else replace(o, suspect=True, reason=why) for o in outliers
            ]
    outliers.sort(key=lambda o: (o.severity, o.name))
    return outliers


def compare_many(
    named: Sequence[tuple[str, ProbeReport]],
    bands: Bands | None = None,
    failed: Sequence[tuple[str, str]] = (),
) -> ManyComparison:
    """Group ``named`` reports bitwise and judge every outlier against the majority."""
    bands = bands or Bands()
    if len(named) < 2:
        have = len(named)
        raise ReportError(
            f"cannot compare: {have} report{'s' if have != 1 else ''}"
            + (f" ({len(failed)} task(s) failed)" if failed else ""),
            hint="give a run with at least two reports, or two or more report files",
        )
    first_name, first = named[0]
    for name, report in named[1:]:
        check_comparable(first, report, (first_name, name))
    buckets = _group_reports(named)
    tie = len(buckets) > 1 and len(buckets[0]) == len(buckets[1])
    majority = None if tie else 1
    ref_name, ref = named[buckets[0][0]]
    groups, outliers, pairs = [], [], []
    for gi, idx in enumerate(buckets, 1):
        if gi == 1:
            groups.append(
                Group(1, tuple(named[i][0] for i in idx), not tie, CompareVerdict.IDENTICAL, None, None)
            )
            continue
        rep_name, rep = named[idx[0]]
        comparison = compare_reports(ref, rep, bands)
        pairs.append((ref_name, rep_name, comparison))
        diffs = [c for c in comparison.comparisons if c.verdict is not CompareVerdict.IDENTICAL]
        max_rel = max((c.max_rel_diff for c in diffs if c.max_rel_diff is not None), default=None)
        first_step = min((c.first_diff_step for c in diffs if c.first_diff_step is not None), default=None)
        groups.append(
            Group(gi, tuple(named[i][0] for i in idx), False, comparison.verdict, max_rel, first_step)
        )
        for i in idx:
            name, report = named[i]
            causes = tuple(likely_causes(ref, report, (ref_name, name)))
            suspect = _same_setup(causes, ref, report) and comparison.verdict is not CompareVerdict.INVALID
            reason = (
                "same fingerprint and strict mode as the majority, different numbers" if suspect else None
            )
            outliers.append(
                Outlier(name, gi, comparison.verdict, max_rel, first_step, causes, suspect, reason)
            )
    outliers = _with_self_suspects(named, buckets, outliers)
    return ManyComparison(
        tuple(n for n, _ in named),
        tuple(groups),
        majority,
        tuple(outliers),
        tuple(failed),
        tuple(pairs),
        bands,
        StepNumbers.of(named),
    )
