"""The documentation stays true (``make check-readme``): quoted ``--help`` texts, the spec reference, links.

The README is the short path in (at most 300 lines); ``docs/guides/`` holds the pages per command,
where the ``--help`` texts are quoted (the map of ``docs/``: ``docs/README.md``).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from envkit.cli import main

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
BLOCK = re.compile(r"```console\n\$ (envkit [^\n]*--help)\n(.*?)```", re.S)
LINK = re.compile(
    r"\]\(((?:\.\./)*(?:[A-Za-z0-9_-]+/)*[A-Za-z0-9_.-]+\.md)(?:#[\w-]*)?\)"
)  # relative, any #anchor
PAGES = (
    "build",  # lock, render, build: one guide
    "pack",
    "probe",
    "fleet",
    "diff",  # snapshot, diff, audit: one guide
    "init",
    "catalog",
    "spec",
    "design",
    "cli",  # docs/reference/cli.md, generated from every --help
    "json",
    "check",
    "debug",
    "guard",
    "reproducible",
    "security",
    "determinism-bands",
    "performance",
    "README",  # docs/README.md, the map of docs/
)


def documents() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def quoted_help() -> list[tuple[str, str]]:
    return [found for path in documents() for found in BLOCK.findall(path.read_text("utf-8"))]


def test_the_docs_quote_help() -> None:
    assert len(quoted_help()) >= 6, "the command pages under docs/ quote their --help texts"


@pytest.mark.parametrize(
    ("command", "expected"), quoted_help(), ids=lambda v: v if v.startswith("envkit") else ""
)
def test_help_matches_cli(command: str, expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(shlex.split(command)[1:]) == 0
    actual = capsys.readouterr().out
    assert actual.strip() == expected.strip(), f"the quoted `{command}` is stale: paste the new output"


def test_spec_reference_is_generated_from_the_models() -> None:
    from envkit.spec.reference import spec_reference

    text = (DOCS / "reference" / "spec.md").read_text("utf-8")
    start, end = "<!-- spec-reference:start -->\n", "<!-- spec-reference:end -->"
    assert start in text and end in text
    quoted = text.split(start, 1)[1].split(end, 1)[0]
    assert quoted == spec_reference(), (
        "docs/reference/spec.md's reference is stale: paste envkit.spec.reference output"
    )


def test_the_readme_is_short_and_links_every_page() -> None:
    text = README.read_text("utf-8")
    assert len(text.splitlines()) <= 300
    linked = {Path(target).stem for target in LINK.findall(text)}
    assert set(PAGES) <= linked, sorted(set(PAGES) - linked)


@pytest.mark.parametrize("path", documents(), ids=lambda p: p.name)
def test_every_link_to_a_page_resolves(path: Path) -> None:
    for target in LINK.findall(path.read_text("utf-8")):
        assert (path.parent / target).is_file(), f"{path.name} links to {target}, which does not exist"


@pytest.mark.parametrize("path", [README, DOCS / "reference" / "spec.md"], ids=lambda p: p.name)
def test_the_spec_example_is_the_shipped_flagship(path: Path) -> None:
    """The top example shows the flagship as it is built (cuda_runtime: pypi, venv), not an old form."""
    import yaml

    text = path.read_text("utf-8")
    start = "```yaml\n# environments/cuda11.8-paddle2.6.yaml"
    assert start in text, f"{path.name} has no example of the flagship spec"
    block = text.split(start, 1)[1].split("\n", 1)[1].split("```", 1)[0]
    shipped = (ROOT / "environments" / "cuda11.8-paddle2.6.yaml").read_text("utf-8")
    assert yaml.safe_load(block) == yaml.safe_load(shipped)


def test_the_readme_says_what_make_dev_installs() -> None:
    """`make dev`'s install line, quoted; without a CPU index, torch is PyPI's CUDA build with NVIDIA
    wheels (the README said "CPU torch" over a 7 GB CUDA install)."""
    makefile = (ROOT / "Makefile").read_text("utf-8")
    (install,) = re.findall(r"^\t\$\(BIN\)/python -m pip install -q (-e '\.\[[^\]]*\]')$", makefile, re.M)
    text = README.read_text("utf-8")
    section = text.split("## Two commands", 1)[1].split("### Installing envkit elsewhere", 1)[0]
    assert f"pip install {install}" in section
    if "torch" in install and "--index-url" not in makefile:
        assert "CPU torch and CPU paddle" not in section
        assert "CUDA" in section and "NVIDIA" in section and " GB" in section


def test_the_json_reference_is_the_envelope_and_the_exit_codes() -> None:
    """docs/reference/json.md names every key of the envelope and every exit code, and no other."""
    from envkit.errors import ExitCode, UsageError
    from envkit.result import CommandResult, envelope, error_envelope

    text = (DOCS / "reference" / "json.md").read_text("utf-8")
    keys = set(re.findall(r"^\| `(\w+)` \|", text, re.M))
    assert keys == set(envelope(CommandResult("x", None, "")))
    assert keys == set(error_envelope("x", UsageError("m", hint="h")))
    codes = {int(c) for c in re.findall(r"^\| (\d+) \|", text, re.M)}
    assert codes == {int(c) for c in ExitCode}
