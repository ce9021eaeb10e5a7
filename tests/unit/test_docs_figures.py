"""Every measured figure lives in one page, ``docs/performance.md`` (with the machine and the date), and
in no other page of ``docs/`` or the README: a guide or a concept links there instead of quoting a timing.

A *figure* is a number with a unit of time, size or share (``s``, ``ms``, ``µs``, ``min``, ``MB``,
``GiB``, ``%`` …) in a sentence that says it was measured (``measured``, ``took``, ``median``, ``peak``,
``wall``, ``load 13``, ``2 shared cores``, ``python -m benchmarks``, a date, ``was 862 MiB`` …). A
limit (``at most 64 MiB``, ``waits 60 s``), a default, a version or a spec example is not one: it has
no such words, and code (fenced blocks, inline code) is not read.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
HOME = DOCS / "performance.md"
GENERATED = {DOCS / "reference" / "cli.md"}  # every --help, as click prints it (limits and defaults only)

NUMBER = r"\d[\d,]*(?:\.\d+)?"
FIGURE = re.compile(
    rf"(?<![\w.]){NUMBER}(?:\s?[-–…]\s?{NUMBER})?\s?(?:µs|us|ms|s|min|h|[KMGT]i?B|kB|%)(?![\w/])"
)
MEASURED = re.compile(
    r"\b(?:measured|measuring|peak|resident|RSS|ru_maxrss|wall|make bench"
    r"|this machine|this session|shared cores|\d-core|\d-CPU|load(?: average)?(?: of)? ~?\d"
    r"|costs?|adds|faster|slower|overhead|median of \d)\b"
    r"|\b(?:took|takes) (?:about |~)?\d|\d\s?(?:s|ms|µs) (?:of )?CPU|/usr/bin/time"
    r"|\bwas \d|\bbefore: |\bmain: |\b20\d\d-\d\d-\d\d\b",
    re.I,
)
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
SENTENCE = re.compile(r"(?<=[.;:!?])\s+(?=[A-Z(*])|\n(?=\s*(?:[-*]|\d+\.) )|\n\s*\n")


def pages() -> list[Path]:
    found = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
    return [p for p in found if p != HOME and p not in GENERATED]


def sentences(text: str) -> list[str]:
    """The prose's sentences and list items; a table's rows, each read with the table's header row."""
    parts: list[str] = []
    prose: list[str] = []
    header = ""
    for line in CODE.sub(" Code ", text).splitlines():
        if not line.lstrip().startswith("|"):
            prose.append(line)
            header = ""
            continue
        parts.append(f"{header} {line}")
        header = header or line
    parts += SENTENCE.split("\n".join(prose))
    return [" ".join(part.split()) for part in parts]


def figures(text: str) -> list[str]:
    """The sentences of ``text`` (code removed) that state a measured figure."""
    return [part for part in sentences(text) if FIGURE.search(part) and MEASURED.search(part)]


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_figure_outside_the_performance_page(page: Path) -> None:
    found = figures(page.read_text("utf-8"))
    assert not found, (
        f"{page.relative_to(ROOT)} states measured figures: move them to docs/performance.md, link there\n"
        + "\n".join(f"  {s[:160]}" for s in found)
    )


def test_the_performance_page_has_figures_and_says_where() -> None:
    """The one home of the figures has them, and says on what machine and when they were measured."""
    text = HOME.read_text("utf-8")
    assert len(figures(text)) >= 10
    assert re.search(r"\b20\d\d-\d\d-\d\d\b", text) and re.search(r"\bcores?\b", text)


@pytest.mark.parametrize(
    "sentence",
    [
        "Measured on 2 shared cores at a load of 19–21: 58 s of CPU in all.",
        "bitsandbytes' 43 MB add 1.2 s to the lock (measured here).",
        "100 MB of steps drew with a peak of 20 MiB resident.",
        "An image whose command prints 256 MiB costs envkit 94 MB of memory.",
        "The mapping is read once (about 0.1 s CPU).",
        "the flagship's layer was 6.52 GB",
        "a 55 KB page, 4.9 s for the whole command (this session, 2026-12-07)",
        "| `envkit check` of the image | 18.7-31 s | the median of 3 |",
    ],
)
def test_a_measured_figure_is_found(sentence: str) -> None:
    assert figures(sentence), sentence


@pytest.mark.parametrize(
    "sentence",
    [
        "A call to the Docker engine waits 60 s for its answer, or `$ENVKIT_ENGINE_TIMEOUT` seconds.",
        "specs are at most 256 KiB of YAML, inventories at most 64 MiB; advisory records 4 MiB.",
        "torch 2.15.0+cu132, CUDA 13.2, Python 3.11, paddle 2.6.2, cuDNN 8.6",
        "The default edges separate 2e-6 and 5e-3; 2e-6 is about 3× above the noise.",
        "```console\n$ envkit build demo-cpu\nbuilt envkit/demo-cpu (1239 MB, took 130.6 s)\n```",
        "`--budget 60s` counts from the start; the run took `python -m benchmarks`",
        "GPU: NVIDIA A100 80GB PCIe ×4",
    ],
)
def test_a_limit_a_version_or_an_example_is_not_a_figure(sentence: str) -> None:
    assert not figures(sentence), figures(sentence)
