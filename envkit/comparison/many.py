"""``envkit probe --compare REFS``: two reports, many, a run or runs, in one use case.

:func:`compare_refs`: two reports (files or ``HOST[/LABEL]``) are compared pairwise
(:func:`~envkit.comparison.files.compare_files`); anything else N-way (:func:`compare_n`). A run
is ``STORE/RUN`` (or ``RUN`` in the store): its reports, plus the tasks that failed or never ran
(from the tasks' records and the run's manifest), which the comparison lists per node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from envkit._atomic import write_text_atomic
from envkit.comparison.bands import Bands
from envkit.comparison.files import PairResult, compare_files
from envkit.errors import ReportError
from envkit.probe.model import ProbeReport
from envkit.probe.shared_reports import SharedReader
from envkit.store.layout import resolve_report
from envkit.store.runs import find_run, load_run

if TYPE_CHECKING:
    from envkit.comparison.nway import ManyComparison

__all__ = ["CompareResult", "ManyResult", "compare_n", "compare_refs"]


@dataclass(frozen=True)
class ManyResult:
    """A run or many reports compared N-way: the comparison, what was read, the HTML page."""

    result: ManyComparison
    sources: tuple[str, ...]
    html: Path | None

    @property
    def ok(self) -> bool:
        return self.result.ok

    def to_json(self) -> dict[str, object]:
        data = {**self.result.to_json(), "sources": list(self.sources)}
        if self.html is not None:
            data["html"] = str(self.html)
        return data


def _name(ref: str, path: Path, taken: set[str]) -> str:
    for candidate in (path.stem, ref, str(path)):
        if candidate not in taken:
            return candidate
    return f"{path}#{len(taken)}"


def compare_n(
    refs: Sequence[str],
    store: Path,
    *,
    label: str | None = None,
    bands: Bands | None = None,
    html: Path | None = None,
) -> ManyResult:
    """Compare a run (one ref) or several reports (files, HOST[/LABEL], or runs: all their reports)."""
    named: list[tuple[str, ProbeReport]] = []
    taken: set[str] = set()  # the names in ``named``, kept beside it (a set per file was quadratic)
    failed: list[tuple[str, str]] = []
    sources = []
    reader = (
        SharedReader()
    )  # a fleet's reports, in runs or files, share all but their host facts: parsed once
    for ref in refs:
        run_dir = find_run(ref, store)
        if run_dir is not None:
            reports, bad = load_run(run_dir, reader.load)
            prefix = f"{run_dir.name}/" if len(refs) > 1 else ""
            named += [(prefix + n, r) for n, r in reports]
            taken.update(prefix + n for n, _ in reports)
            failed += [(prefix + n, why) for n, why in bad]
            sources.append(str(run_dir))
            continue
        path = resolve_report(ref, store, label)
        name = _name(ref, path, taken)
        taken.add(name)
        named.append((name, reader.load(path)))
        sources.append(str(path))
    if not named and not failed:
        raise ReportError("nothing to compare", hint="give STORE/RUN or report files")
    from envkit.comparison.nway import compare_many  # not needed to tell a run from two files

    result = compare_many(named, bands, failed)
    if html is not None:
        from envkit.comparison.nway_html import render_nway_html

        write_text_atomic(html, render_nway_html(named, result))
    return ManyResult(result, tuple(sources), html)


CompareResult = PairResult | ManyResult


def compare_refs(
    refs: Sequence[str],
    store: Path,
    *,
    label: str | None = None,
    bands: Bands | None = None,
    html: Path | None = None,
) -> CompareResult:
    """What ``probe --compare`` was given, compared: two reports pairwise, else N-way (a run, runs, many)."""
    if len(refs) != 2 or any(find_run(r, store) for r in refs):
        return compare_n(refs, store, label=label, bands=bands, html=html)
    return compare_files((refs[0], refs[1]), store, label=label, bands=bands, html=html)
