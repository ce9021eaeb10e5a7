"""Every relative link in the README and under ``docs/`` resolves: the file (or folder) exists, and a
``#anchor`` names a heading of the page it points at (GitHub's slugs). Also: ``docs/`` has its three
kinds of page and a map of them, and no page or section is named after a development round or issue.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"```.*?```", re.S)
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)
HISTORY = re.compile(r"\b(?:round|wave|sprint|stop|issue)\s*#?\d+\b", re.I)


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    for heading in HEADING.findall(FENCE.sub("", page.read_text("utf-8"))):
        base = slug(heading)
        name, n = base, 0
        while name in found:
            n += 1
            name = f"{base}-{n}"
        found.add(name)
    return found


def links(page: Path) -> list[str]:
    return [t for t in LINK.findall(CODE.sub("", page.read_text("utf-8"))) if not re.match(r"[a-z]+:", t)]


def broken(page: Path) -> list[str]:
    wrong = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        goal = (page.parent / path).resolve() if path else page
        if not goal.exists():
            wrong.append(f"{target}: no such file")
        elif anchor and goal.suffix == ".md" and anchor not in anchors(goal):
            wrong.append(f"{target}: no heading #{anchor} in {goal.name}")
    return wrong


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    wrong = broken(page)
    assert not wrong, f"{page.relative_to(ROOT)} links to nothing:\n" + "\n".join(wrong)


def test_the_scan_finds_links_and_anchors() -> None:
    """The README's links are found (a regex that matched nothing would pass anything)."""
    found = links(ROOT / "README.md")
    assert len(found) >= 20 and "docs/reference/cli.md" in found
    assert "the-fleet-store-envkit-probe---slurm---scheduler-local---k8s" in anchors(
        DOCS / "concepts" / "security.md"
    )


def test_a_broken_link_and_a_broken_anchor_are_named(tmp_path: Path) -> None:
    (tmp_path / "b.md").write_text("# B page\n\n## Its `part` (two)\n")
    page = tmp_path / "a.md"
    page.write_text(
        "[ok](b.md) [ok](b.md#its-part-two) [self](#a) [web](https://x.invalid/y.md)\n"
        "[gone](c.md) [bad](b.md#nowhere) `[code](d.md)`\n\n# A\n"
    )
    assert [w.split(":")[0] for w in broken(page)] == ["c.md", "b.md#nowhere"]


def test_the_docs_have_three_kinds_and_a_map() -> None:
    """guides/, concepts/ and reference/ (uv's split), figures in one page, and docs/README.md links
    every page of the three."""
    kinds = {p.name for p in DOCS.iterdir() if p.is_dir()}
    assert kinds == {"guides", "concepts", "reference"}, kinds
    loose = sorted(p.name for p in DOCS.iterdir() if p.is_file())
    assert loose == ["README.md", "performance.md"], loose
    mapped = {(DOCS / t.partition("#")[0]).resolve() for t in links(DOCS / "README.md")}
    every = {p.resolve() for kind in kinds for p in (DOCS / kind).iterdir()}
    assert every <= mapped, sorted(str(p.relative_to(DOCS)) for p in every - mapped)


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_section_is_named_after_a_round(page: Path) -> None:
    """A heading or a paragraph's bold lead says what a thing does, not when it was built."""
    text = CODE.sub("", page.read_text("utf-8"))
    named = [*HEADING.findall(text), *re.findall(r"\*\*([^*\n]+)\*\*", text)]
    wrong = [n for n in named if HISTORY.search(n)]
    assert not wrong, f"{page.relative_to(ROOT)}: named after the project's history: {wrong}"


@pytest.mark.parametrize(
    "name", ["Round 2 (issue 33): what a user can act on", "Round 4 (issue 45)", "wave 3"]
)
def test_history_names_are_found(name: str) -> None:
    assert HISTORY.search(name)


DOCS_PATH = re.compile(r"(?<![\w/.-])docs/[\w./-]*\w")
SOURCES = ("envkit", "tests", "benchmarks", ".ci")


def named_docs_paths() -> list[tuple[str, str]]:
    """``(file:line, path)`` for every ``docs/...`` path the code, tests, help texts and build files name
    (another project's docs, e.g. PaddlePaddle/docs' ``docs/practices/...``, are not ours)."""
    files = [ROOT / "Makefile", ROOT / "pyproject.toml"]
    files += [p for top in SOURCES for p in sorted((ROOT / top).rglob("*")) if p.suffix in {".py", ".sh", ""}]
    found = []
    for file in files:
        if not file.is_file() or "__pycache__" in file.parts:
            continue
        for number, line in enumerate(file.read_text("utf-8", errors="replace").splitlines(), 1):
            if "PaddlePaddle" in line or "://" in line:
                continue
            found += [(f"{file.relative_to(ROOT)}:{number}", m) for m in DOCS_PATH.findall(line)]
    return found


def test_every_docs_path_the_code_names_exists() -> None:
    """A hint (``see docs/guides/guard.md``), a --help text or a docstring that names a page names one
    that is there: a page that moves takes its mentions with it."""
    named = named_docs_paths()
    assert any(path == "docs/guides/guard.md" and at.startswith("envkit/") for at, path in named)
    wrong = [f"{at}: {path}" for at, path in named if not (ROOT / path).exists()]
    assert not wrong, "paths under docs/ that do not exist:\n" + "\n".join(wrong)
