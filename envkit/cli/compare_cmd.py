"""``envkit probe --compare``: two reports (pairwise) or a run and many reports (N-way), as text."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from envkit.comparison import many
from envkit.comparison.bands import Bands
from envkit.comparison.files import PairResult
from envkit.comparison.many import ManyResult
from envkit.comparison.nway import member_list
from envkit.comparison.pairwise import PairComparison, fmt_rel
from envkit.errors import ExitCode
from envkit.probe.model import CompareVerdict
from envkit.result import CommandResult, Lines

__all__ = ["compare_command", "nway_text", "pair_text"]

MAX_MEMBERS = 6
MAX_OUTLIERS = 50
MAX_CAUSES = 5


def compare_command(
    refs: Sequence[str], store: Path, *, label: str | None, bands: Bands, html: Path | None
) -> CommandResult:
    """``probe --compare``: one use case for two files, many, a run or runs; its text by what it was."""
    done = many.compare_refs(refs, store, label=label, bands=bands, html=html)
    code = ExitCode.OK if done.ok else ExitCode.FINDINGS
    if isinstance(done, PairResult):
        pair = done
        return CommandResult("probe", pair.to_json(), lambda: pair_text(pair.comparison), exit_code=code)
    nway = done
    return CommandResult("probe", nway.to_json(), lambda: nway_text(nway), exit_code=code)


def pair_text(result: PairComparison) -> Lines:
    lines = [f"verdict: {result.verdict}  ({result.names[0]} vs {result.names[1]})"]
    steps = result.numbering
    for c in result.comparisons:
        step = f"from step {steps.label(c.first_diff_step)}" if c.first_diff_step is not None else ""
        lines.append(
            f"  {c.framework:<7}{c.workload:<6}{c.metric:<17}{c.verdict:<16}"
            f"{fmt_rel(c.max_rel_diff):<9}{step}"
            + (f"  {c.detail}" if c.detail and c.verdict != "identical" else "")
        )
    lines += [f"  note: {n}" for n in (*result.notes, steps.note()) if n]
    if result.causes:
        head = (
            "likely causes:"
            if result.verdict != "identical"
            else "environment differences (no numeric effect):"
        )
        lines.append(head)
        lines += [f"  {i}. {c.message}" for i, c in enumerate(result.causes[:12], 1)]
        if len(result.causes) > 12:
            lines.append(f"  … {len(result.causes) - 12} more (--json)")
    return lines


def nway_text(done: ManyResult) -> Lines:
    r = done.result
    head = f"{len(r.names)} reports, {len(r.groups)} bitwise group(s)"
    head += (
        ", no majority (tie)" if r.majority is None else f", majority: group 1 ({len(r.groups[0].members)})"
    )
    lines = [head]
    suspects = {o.group for o in r.outliers if o.suspect and o.group != 1}
    for g in r.groups:
        tag = "majority" if g.majority else "suspect" if g.index in suspects else g.verdict
        step = r.steps_of(g).label(g.first_diff_step)
        diff = f"  {fmt_rel(g.max_rel_diff)} from step {step}" if g.first_diff_step is not None else ""
        lines.append(
            f"  group {g.index:<3} {len(g.members):>5} × {tag:<16}{member_list(g.members, MAX_MEMBERS)}{diff}"
        )
    if r.numbering.note():
        lines.append(f"note: {r.numbering.note()}")
    if r.outliers:
        lines.append("outliers (suspects first):")
    for o in r.outliers[:MAX_OUTLIERS]:
        band = f" (band {o.band})" if o.suspect and o.band is not CompareVerdict.IDENTICAL else ""
        lines.append(f"  {o.name}: {o.tag}{band}" + (f": {o.reason}" if o.reason else ""))
        lines += [f"    {i}. {c.message}" for i, c in enumerate(o.causes[:MAX_CAUSES], 1)]
        if len(o.causes) > MAX_CAUSES:
            lines.append(f"    … {len(o.causes) - MAX_CAUSES} more (--json)")
    if len(r.outliers) > MAX_OUTLIERS:
        lines.append(f"  … {len(r.outliers) - MAX_OUTLIERS} more outliers (--json)")
    if r.failed:
        lines.append("failed tasks:")
        lines += [f"  {name}: {why}" for name, why in r.failed]
    verdict = "all agree within equivalent" if r.ok else "not all agree"
    lines.append(f"verdict: {verdict}" + (f"; html: {done.html}" if done.html else ""))
    return lines
