"""Reading a fleet run's reports: each parsed once, the parts they share parsed once for all.

The reports of one run differ in their host facts (``fingerprint``: host name, time, the task's
environment) and, on a faulty node, in their numbers. :class:`SharedReader` keeps the last few
fully parsed reports as references: a report whose text equals a reference's everywhere outside
the ``fingerprint`` value (the same bytes before and after it) is that reference with its own
fingerprint, which is decoded and checked alone; its config and numbers are the reference's
typed values (frozen, shared), and so are the fingerprint's sections equal to the reference's
(the distributions, the CPU: a run of 100,000 reports holds each once). Anything else is read in full by
:func:`~envkit.probe.report.read_report`, so every error is the one that function gives.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from envkit.probe.model import ProbeReport, read_fingerprint
from envkit.probe.report import MAX_DEPTH, check_depth, read_report
from envkit.store.reads import MAX_BYTES, read_report_text

__all__ = ["SharedReader"]

KEPT = 8  # references: the majority's report and a few outliers'
_DECODER = json.JSONDecoder()
_SPACE = " \t\n\r"


@dataclass(frozen=True)
class _Reference:
    text: str
    report: ProbeReport
    start: int  # the fingerprint value's span in ``text``
    end: int

    def same_outside(self, text: str) -> int | None:
        """The end of the fingerprint value in ``text`` when ``text`` equals this one outside it."""
        tail = len(self.text) - self.end
        end = len(text) - tail
        if end <= self.start or text[: self.start] != self.text[: self.start]:
            return None
        return end if text[end:] == self.text[self.end :] else None


def _spans(text: str) -> dict[str, tuple[int, int]] | None:
    """The top-level keys' value spans of a JSON object text, or None (not an object, a key twice)."""
    i = len(text) - len(text.lstrip(_SPACE))
    if text[i : i + 1] != "{":
        return None
    spans: dict[str, tuple[int, int]] = {}
    i += 1
    try:
        while True:
            while text[i] in _SPACE:
                i += 1
            if text[i] == "}" and not spans:
                break
            key, i = _DECODER.raw_decode(text, i)
            while text[i] in _SPACE:
                i += 1
            if not isinstance(key, str) or key in spans or text[i] != ":":
                return None
            i += 1
            while text[i] in _SPACE:
                i += 1
            _, end = _DECODER.raw_decode(text, i)
            spans[key] = (i, end)
            i = end
            while text[i] in _SPACE:
                i += 1
            if text[i] == "}":
                break
            if text[i] != ",":
                return None
            i += 1
    except (ValueError, IndexError, RecursionError):
        return None
    return spans if not text[i + 1 :].strip(_SPACE) else None


class SharedReader:
    """:func:`~envkit.probe.report.load_report` for many reports of one run (see the module)."""

    def __init__(self) -> None:
        self._refs: list[_Reference] = []
        self.shared = 0  # reports read from a reference (for the benchmarks and tests)

    def load(self, path: Path) -> ProbeReport:
        return self.read(read_report_text(path), str(path))

    def read(self, text: str, source: str) -> ProbeReport:
        if len(text) <= MAX_BYTES:
            for ref in self._refs:
                end = ref.same_outside(text)
                if end is not None:
                    derived = self._derive(ref, text, end, source)
                    if derived is not None:
                        self.shared += 1
                        return derived
        report = read_report(text, source)
        self._keep(text, report)
        return report

    def _derive(self, ref: _Reference, text: str, end: int, source: str) -> ProbeReport | None:
        try:
            value, stop = _DECODER.raw_decode(text, ref.start)
        except (ValueError, RecursionError):
            return None  # read in full: its own error
        if stop != end:
            return None
        if text.count("{", ref.start, end) + text.count("[", ref.start, end) + 2 > MAX_DEPTH:
            check_depth({"fingerprint": value}, source)  # at the depth it has in the document
        fingerprint = read_fingerprint(value, source)
        old = ref.report
        if isinstance(
            value, dict
        ):  # a section equal to the reference's is its object: memory per report stays small
            for key, section in old.fingerprint.items():
                mine = value.get(key)
                if isinstance(section, dict | list) and mine is not section and mine == section:
                    value[key] = section
        document: Mapping[str, object] = {**old.document, "fingerprint": value}
        return replace(old, fingerprint=fingerprint, document=document)  # label, fleet, driver: the same text

    def _keep(self, text: str, report: ProbeReport) -> None:
        spans = _spans(text)
        if spans is None or "fingerprint" not in spans:
            return
        start, end = spans["fingerprint"]
        self._refs = [_Reference(text, report, start, end), *self._refs[: KEPT - 1]]
