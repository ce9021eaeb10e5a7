"""``envkit probe --compare`` over a run or many reports: render the N-way comparison."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from envkit.comparison.bands import Bands
from envkit.comparison.nway import member_list
from envkit.comparison.pairwise import fmt_rel
from envkit.errors import ExitCode
from envkit.fleet.compare import ComparedMany, compare_n
from envkit.probe.model import Verdict
from envkit.result import CommandResult

__all__ = ["compare_refs", "nway_text"]

MAX_MEMBERS = 6
MAX_OUTLIERS = 50
MAX_CAUSES = 5


def compare_refs(
    refs: Sequence[str], store: Path, *, label: str | None, bands: Bands, html: Path | None
) -> CommandResult:
    done = compare_n(refs, store, label=label, bands=bands, html=html)
    code = ExitCode.OK if done.ok else ExitCode.FINDINGS
    return CommandResult("probe", done.to_json(), lambda: nway_text(done), exit_code=code)


def nway_text(done: ComparedMany) -> str:
    r = done.result
    head = f"{len(r.names)} reports, {len(r.groups)} bitwise group(s)"
    head += (
        ", no majority (tie)" if r.majority is None else f", majority: group 1 ({len(r.groups[0].members)})"
    )
    lines = [head]
    suspects = {o.group for o in r.outliers if o.suspect and o.group != 1}
    for g in r.groups:
        tag = "majority" if g.majority else "suspect" if g.index in suspects else g.verdict
        diff = f"  {fmt_rel(g.max_rel_diff)} from step {g.first_diff_step}" if g.first_diff_step else ""
        lines.append(
            f"  group {g.index:<3} {len(g.members):>5} × {tag:<16}{member_list(g.members, MAX_MEMBERS)}{diff}"
        )
    if r.outliers:
        lines.append("outliers (suspects first):")
    for o in r.outliers[:MAX_OUTLIERS]:
        band = f" (band {o.band})" if o.suspect and o.band is not Verdict.IDENTICAL else ""
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
    return "\n".join(lines)
