"""Issue 24, classes 7 and 8: advisory text cannot inject markup; recorded data cannot name a path.

The markdown report is rendered to HTML with a real CommonMark renderer (markdown-it-py, with GFM
tables) to prove that hostile advisory text, package names and ``SOURCE.json`` provenance stay
literal text: no raw HTML, no link, no image, no emphasis, no heading of their own.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from envkit.audit.findings import AuditFinding, AuditReport, NotChecked
from envkit.audit.report import render, to_markdown, to_sarif
from envkit.errors import EnvkitError, InventoryError

HOSTILE = [
    '<img src=x onerror="alert(1)">',
    "[click me](javascript:alert(1))",
    "![pixel](https://evil.example/track.png)",
    "<https://evil.example/autolink>",
    "**bold** _em_ `code` ~~gone~~",
    "ok\n# Audit passed\n\nall clear",
    "a | b | c",
    "<script>alert(1)</script>",
    "&lt;img src=x&gt; &amp; entities",
    "- a list item\n1. and a numbered one",
]


def _report(text: str, references: tuple[str, ...] = ()) -> AuditReport:
    finding = AuditFinding("vulnerability", f"PYSEC-{text[:5]}", "high", text, text, package=text,
                           version=text, ignored=None, references=references)  # fmt: skip
    return AuditReport(
        target=text,
        target_kind="inventory",
        provenance={"source": text, "fetched": "2026-12-01"},
        findings=(finding,),
        checked=1,
        not_checked=(NotChecked(text, text, text),),
    )


def _html(markdown: str) -> str:
    html: str = MarkdownIt("commonmark").enable("table").render(markdown)
    return html


@pytest.mark.parametrize("text", HOSTILE)
def test_markdown_keeps_hostile_text_literal(text: str) -> None:
    markdown = to_markdown(_report(text), "low")
    html = _html(markdown)
    for tag in (
        "<img",
        "<a ",
        "<script",
        "<strong",
        "<em",
        "<code",
        "<del",
        "<h2>Audit",
        "<ol",
        "<li>a list",
    ):
        assert tag not in html, (tag, html)
    assert html.count("<h1>") == 1 and html.count("<table>") == 1
    # the table has exactly its five columns in every row
    rows = [line for line in markdown.splitlines() if line.startswith("| ")]
    assert all(line.replace("\\|", "").count("|") == 6 for line in rows), rows
    assert html.count("<h2>") == 2  # "Not checked" and "Database": none made by the values


@pytest.mark.parametrize(
    ("references", "expected"),
    [
        (("javascript:alert(1)",), None),
        (
            ("javascript:alert(1)", "https://osv.dev/vulnerability/PYSEC-1"),
            "https://osv.dev/vulnerability/PYSEC-1",
        ),
        (
            (
                "http://plain.example/x",
                "data:text/html,<script>",
            ),
            None,
        ),
        (("file:///etc/passwd",), None),
        (("https://",), None),
        (("https://evil.example/a b",), None),
        (("https://evil.example/\nx",), None),
        (("https://osv.dev/x",), "https://osv.dev/x"),
    ],
)
def test_sarif_help_uri_is_only_an_https_url(references: tuple[str, ...], expected: str | None) -> None:
    rule = to_sarif(_report("pillow", references))["runs"][0]["tool"]["driver"]["rules"][0]
    assert rule.get("helpUri") == expected


def test_the_table_shows_every_advisory_value_on_one_line() -> None:
    table = render(_report("bad\n0 finding(s), all clear"), "table", "low")
    assert not any(line.startswith("0 finding(s)") for line in table.splitlines())


# -- class 8: catalog refresh --pages ---------------------------------------------------------


def _pages(tmp_path: Path, entry: dict[str, Any]) -> Path:
    directory = tmp_path / "pages"
    directory.mkdir()
    manifest = {"pages": {"https://download.pytorch.org/whl/torch/": entry}}
    (directory / "manifest.json").write_text(json.dumps(manifest))
    return directory


@pytest.mark.parametrize(
    "file",
    ["/etc/shadow", "../outside.html", "sub/page.html", "..", "manifest.json", "", "a\nb", "x" * 300],
)
def test_a_recorded_page_is_a_plain_name_in_its_directory(tmp_path: Path, file: str) -> None:
    from envkit.catalog.refresh.pages import RecordedPages

    (tmp_path / "outside.html").write_text("<html>secret</html>")
    pages = RecordedPages(_pages(tmp_path, {"fetched": "2026-12-01", "file": file, "sha256": "0" * 64}))
    with pytest.raises(EnvkitError, match="not a file name in that directory"):
        pages.get("https://download.pytorch.org/whl/torch/")


@pytest.mark.parametrize("kind", ["fifo", "symlink", "directory"])
def test_a_recorded_page_must_be_a_regular_file(tmp_path: Path, kind: str) -> None:
    from envkit.catalog.refresh.pages import RecordedPages

    directory = _pages(tmp_path, {"fetched": "2026-12-01", "file": "page.html", "sha256": "0" * 64})
    if kind == "fifo":
        os.mkfifo(directory / "page.html")  # the old code would block here forever
    elif kind == "symlink":
        (directory / "page.html").symlink_to("/etc/passwd")
    else:
        (directory / "page.html").mkdir()
    with pytest.raises(EnvkitError, match="cannot read the recorded page"):
        RecordedPages(directory).get("https://download.pytorch.org/whl/torch/")


@pytest.mark.parametrize(
    "manifest",
    ['{"pages": []}', '{"pages": {"u": "x"}}', "[" * 100_000, '{"pages": {"u": {"file": 1}}}', "[]"],
)
def test_a_hostile_page_manifest_is_a_clear_error(tmp_path: Path, manifest: str) -> None:
    from envkit.catalog.refresh.pages import RecordedPages

    directory = tmp_path / "pages"
    directory.mkdir()
    (directory / "manifest.json").write_text(manifest)
    with pytest.raises(EnvkitError, match="not a recorded page snapshot"):
        RecordedPages(directory)


# -- class 8: `envkit images` labels, `snapshot --image` output --------------------------------


@pytest.mark.parametrize(
    "label", ["../../etc/passwd", "/abs/x", "demo\n", "demo/../../x", "x" * 5 + "\x1b[2J"]
)
def test_an_image_name_label_is_never_followed_to_a_file(tmp_path: Path, label: str) -> None:
    from envkit.build.image_list import list_images
    from envkit.catalog import load_catalog
    from envkit.engine.testing import FakeEngine

    outside = tmp_path / "etc"
    outside.mkdir()
    (outside / "passwd.yaml").write_text("name: passwd\n")
    root = tmp_path / "proj"
    (root / "environments").mkdir(parents=True)
    engine = FakeEngine()
    engine.add_image("envkit/evil:latest", "sha256:" + "9" * 64, labels={"io.envkit.name": label})
    (row,) = list_images(engine, root, load_catalog())
    assert row.stale and "is not an environment name" in row.reason
    assert "\n" not in row.name and "\x1b" not in row.name


class _Result:
    def __init__(self, stdout: str) -> None:
        self.exit_code, self.stdout, self.stderr = 0, stdout, ""


class _Engine:
    def __init__(self, stdout: str) -> None:
        self.stdout = stdout

    def run(self, image: str, argv: list[str], **kw: Any) -> _Result:
        return _Result(self.stdout)


@pytest.mark.parametrize(
    "stdout",
    [
        "[1, 2, 3]",
        '"just a string"',
        '{"python": 3, "platform": "linux"}',
        '{"python": "3.11", "platform": "linux", "pip": {"a": "1"}}',
        '{"python": "3.11", "platform": "linux", "pip": [["a"]]}',
        '{"python": "3.11", "platform": "linux", "conda": "x"}',
        '{"python": "3.11", "platform": "linux", "facts": []}',
        "[" * 100_000,
    ],
)
def test_snapshot_image_shape_checks_what_the_images_python_printed(stdout: str) -> None:
    from envkit.inventory.image_source import ImageSource

    with pytest.raises(InventoryError, match=r"unexpected output|unreadable output"):
        ImageSource(_Engine(stdout), "evil/image:1")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "source",
    ["[1, 2]", "[" * 100_000, '{"url": "x\\n# Audit passed", "nested": {"a": [1]}}', "\xff", "x" * (2 << 20)],
)
def test_a_hostile_source_json_neither_crashes_nor_forges_a_heading(tmp_path: Path, source: str) -> None:
    from envkit.audit.osv_dir import OsvDirService

    (tmp_path / "vulns").mkdir()
    (tmp_path / "SOURCE.json").write_bytes(source.encode("utf-8", "surrogateescape"))
    provenance = OsvDirService(tmp_path).provenance()
    assert all(isinstance(v, str) for v in provenance.values())
    report = AuditReport("env.yml", "inventory", provenance, (), 0)
    html = _html(to_markdown(report, "low"))
    assert "<h1>Audit" not in html and html.count("<h1>") == 1


def test_a_deep_report_printed_by_an_images_python_is_a_clear_error() -> None:
    from envkit.errors import ProbeError
    from envkit.probe.runner import parse_output

    with pytest.raises(ProbeError, match="printed no report"):
        parse_output("[" * 100_000 + "]" * 100_000, "", "in evil/image:1")


def test_a_deep_recorded_pypi_page_is_a_page_format_error() -> None:
    from envkit.catalog.refresh.readers import read_pypi_project

    with pytest.raises(EnvkitError, match="not a PyPI JSON project page"):
        read_pypi_project("https://pypi.org/pypi/torch/json", b"[" * 100_000)
    with pytest.raises(EnvkitError, match="not a PyPI JSON project page"):
        read_pypi_project("https://pypi.org/pypi/torch/json", b'{"releases": ["1.0"]}')
