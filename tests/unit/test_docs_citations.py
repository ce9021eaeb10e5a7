"""Every test the docs cite exists and is collected by pytest: a claim of evidence never points at nothing.

The pages (``README.md``, ``docs/*.md``) cite tests three ways: a path (``tests/unit/x/test_y.py``,
possibly broken across a line after a ``/``), a path with a test (``tests/x.py::test_name``), and a
bare name (``test_y.py`` or ``test_y``: a module, else a test function somewhere under ``tests/``).
A path must exist; a ``test_*.py`` file, a cited module and a cited function must be collected by
pytest (``--collect-only``, every marker included, run once for every file any page cites).
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

# a path under tests/ (not `envkit-tests/...`, not `~/.cache/...`), optionally `::test_name`
PATH = re.compile(r"(?<![\w.~/-])tests/[\w./-]*[\w/](?:::(\w+))?")
NAME = re.compile(r"(?<![\w./-])test_\w+(?:\.py)?")
WRAPPED = re.compile(r"(?<=/)[ \t]*\n[ \t]*(?=[\w.-])")  # a path broken after a `/`


@dataclass(frozen=True)
class Citation:
    page: str
    line: int
    text: str


def citations(page: Path) -> list[Citation]:
    original = page.read_text("utf-8")
    text, last = "", 0
    wraps: list[tuple[int, int]] = []  # (offset in the joined text, line breaks removed before it)
    for wrap in WRAPPED.finditer(original):
        text += original[last : wrap.start()]
        last = wrap.end()
        wraps.append((len(text), len(wraps) + 1))

    def line_of(offset: int) -> int:
        removed = max((n for at, n in wraps if at <= offset), default=0)
        return text[:offset].count("\n") + removed + 1

    text += original[last:]
    found = [(m.start(), m.group(0).rstrip(".")) for m in PATH.finditer(text)]
    covered = {part for _, path in found for part in re.split(r"[/:]+", path)}
    names = [(m.start(), m.group(0)) for m in NAME.finditer(text) if m.group(0) not in covered]
    return [Citation(page.name, line_of(at), t) for at, t in sorted([*found, *names])]


def _module(name: str) -> list[Path]:
    return sorted(TESTS.rglob(name if name.endswith(".py") else f"{name}.py"))


@functools.cache
def _defining(name: str) -> tuple[Path, ...]:
    pattern = re.compile(rf"^\s*(?:async\s+)?def {re.escape(name)}\(", re.M)
    return tuple(p for p in sorted(TESTS.rglob("test_*.py")) if pattern.search(p.read_text("utf-8")))


def files_for(citation: Citation) -> list[Path]:
    """The test files pytest must collect for ``citation`` (none: a data path or a missing file)."""
    text = citation.text
    if text.startswith("tests/"):
        path = ROOT / text.split("::")[0]
        return [path] if path.is_file() and path.name.startswith("test_") and path.suffix == ".py" else []
    return _module(text) or list(_defining(text))


@functools.cache
def collected() -> frozenset[str]:
    """Node ids of every test in every file a page cites: one ``pytest --collect-only`` for all."""
    files = sorted(
        {str(f.relative_to(ROOT)) for page in PAGES for c in citations(page) for f in files_for(c)}
    )
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "--collect-only",
        "-q",
        "-m",
        "",
        "-p",
        "no:cacheprovider",
        *files,
    ]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        pytest.fail(f"pytest could not collect the cited files:\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
    return frozenset(line.strip() for line in done.stdout.splitlines() if "::" in line)


def problem(citation: Citation) -> str | None:
    """Why ``citation`` points at nothing (None: it holds)."""
    text, ids = citation.text, collected()
    if text.startswith("tests/"):
        path, _, function = text.partition("::")
        if not (ROOT / path).exists():
            return "no such path"
        if function:
            return (
                None
                if any(i.startswith(f"{path}::") and _function(i) == function for i in ids)
                else (f"no collected test {function} in {path}")
            )
        if files_for(citation) and not any(i.startswith(f"{path}::") for i in ids):
            return "pytest collects no test from it"
        return None
    modules = _module(text)
    if modules:
        rel = [str(m.relative_to(ROOT)) for m in modules]
        return None if any(i.split("::")[0] in rel for i in ids) else "pytest collects no test from it"
    if text.endswith(".py"):
        return "no such test file under tests/"
    return None if any(_function(i) == text for i in ids) else "no such collected test (module or function)"


def _function(node: str) -> str:
    return node.split("::")[-1].split("[")[0]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_cited_test_exists_and_is_collected(page: Path) -> None:
    wrong = [f"{c.page}:{c.line}: {c.text}: {why}" for c in citations(page) if (why := problem(c))]
    assert not wrong, "the page cites tests that are not there:\n" + "\n".join(wrong)


def test_the_pages_cite_tests_at_all() -> None:
    """The scan finds what the threat model cites (a regex that matched nothing would pass anything)."""
    cited = {c.text for c in citations(ROOT / "docs" / "concepts" / "security.md")}
    assert "tests/unit/hardening/test_store_hostile.py" in cited and "test_yaml_bounds.py" in cited
    assert len(cited) >= 20


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("tests/unit/guard/test_nothing_here.py", "no such path"),
        ("tests/unit/hardening/test_fuzz.py::test_not_a_test", "no collected test test_not_a_test"),
        ("test_nothing_here.py", "no such test file"),
        ("test_not_a_function_anywhere", "no such collected test"),
        ("tests/data/debug/", None),
        ("tests/unit/hardening/test_fuzz.py", None),
        ("test_fuzz", None),
    ],
)
def test_a_citation_of_nothing_is_named(text: str, why: str | None) -> None:
    found = problem(Citation("x.md", 1, text))
    assert (found is None) if why is None else (found is not None and found.startswith(why)), found


def test_a_path_broken_across_lines_is_one_citation(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("built for real (tests/integration/realconda/\ntest_realconda_miniconda_build.py) and\n")
    assert [c.text for c in citations(page)] == [
        "tests/integration/realconda/test_realconda_miniconda_build.py"
    ]
    page.write_text("see ~/.cache/envkit-tests/conda-bundle/ and `tests/unit/test_docs.py`.\n")
    assert [c.text for c in citations(page)] == ["tests/unit/test_docs.py"]
