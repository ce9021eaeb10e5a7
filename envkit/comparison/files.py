"""``envkit probe --compare A B``: two reports named on the command line, compared, optionally as HTML."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from envkit._atomic import write_text_atomic
from envkit.comparison.bands import Bands
from envkit.comparison.pairwise import PairComparison, compare_reports
from envkit.probe.report import load_report
from envkit.store.layout import resolve_report

__all__ = ["PairResult", "compare_files"]


@dataclass(frozen=True)
class PairResult:
    """Two reports compared: the comparison, the files read and the HTML page written (if any)."""

    comparison: PairComparison
    a: Path
    b: Path
    html: Path | None

    @property
    def ok(self) -> bool:
        return self.comparison.verdict.ok

    def to_json(self) -> dict[str, object]:
        data = {**self.comparison.to_json(), "a": str(self.a), "b": str(self.b)}
        if self.html is not None:
            data["html"] = str(self.html)
        return data


def compare_files(
    refs: tuple[str, str],
    store: Path,
    *,
    label: str | None = None,
    bands: Bands | None = None,
    html: Path | None = None,
) -> PairResult:
    """Compare two reports (files, ``HOST`` or ``HOST/LABEL`` in ``store``); optionally write an HTML page."""
    path_a, path_b = (resolve_report(ref, store, label) for ref in refs)
    a, b = load_report(path_a), load_report(path_b)
    comparison = compare_reports(a, b, bands)
    if html is not None:
        from envkit.comparison.html import render_html

        write_text_atomic(html, render_html(a, b, comparison))
    return PairResult(comparison, path_a, path_b, html)
