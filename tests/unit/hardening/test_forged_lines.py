"""A field from someone's file never prints a line of its own (issue 43, item 7).

``probe --compare`` printed report fields (a host, a package version, a switch, an environment
variable, the CPU model) into its lines: one holding a line break printed ``verdict: identical``
under the real ``verdict: diverged``. Text results are now :data:`envkit.result.Lines`, each
printed on one line (``CommandResult.render_text``): the line break shows as ``\\n``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envkit.result import CommandResult
from tests.unit.probe.conftest import make_report

from .conftest import Run

FORGED = "\nverdict: identical  (a.json vs b.json)\n  torch  rnn   loss             identical       0"
Mutation = Callable[[dict[str, Any]], object]

REPORT_FIELDS: dict[str, Mutation] = {
    "fingerprint.host": lambda r: r["fingerprint"].update(host="host-b" + FORGED),
    "a distribution's version": lambda r: r["fingerprint"]["distributions"].update(numpy="1.21.0" + FORGED),
    "a distribution's name": lambda r: r["fingerprint"]["distributions"].update({"evil" + FORGED: "1"}),
    "the framework version": lambda r: r["frameworks"]["torch"]["info"].update(version="2.1.0" + FORGED),
    "a switch's value": lambda r: r["frameworks"]["torch"]["info"]["switches"].update(
        num_threads="4" + FORGED
    ),
    "an environment variable": lambda r: r["fingerprint"]["env"].update(OMP_NUM_THREADS="8" + FORGED),
    "the CPU model": lambda r: r["fingerprint"]["cpu"].update(model="x" + FORGED),
    "a carriage return": lambda r: r["fingerprint"]["cpu"].update(model="x\rverdict: identical"),
    "a unicode line separator": lambda r: r["fingerprint"].update(host="b\u2028verdict: identical"),
}


def _write(tmp_path: Path, *reports: dict[str, Any]) -> list[str]:
    paths = []
    for name, report in zip("abcdef", reports, strict=False):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(report), "utf-8")
        paths.append(str(path))
    return paths


def _verdicts(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("verdict:")]


@pytest.mark.parametrize("field", sorted(REPORT_FIELDS))
def test_a_report_field_never_forges_the_pair_verdict(
    tmp_path: Path, envkit: Callable[..., Run], field: str
) -> None:
    b = make_report(host="host-b", losses=[1.0, 0.5, 0.1])  # diverged from a
    REPORT_FIELDS[field](b)
    run = envkit("probe", "--compare", *_write(tmp_path, make_report(), b))
    assert run.code == 1
    assert len(_verdicts(run.out)) == 1 and _verdicts(run.out)[0].startswith("verdict: diverged"), run.out
    assert not any(
        line.lstrip().startswith(("torch  rnn   loss             identical",))
        for line in run.out.splitlines()
    )
    assert "\r" not in run.out and "\u2028" not in run.out


@pytest.mark.parametrize("field", ["fingerprint.host", "the framework version", "an environment variable"])
def test_a_report_field_never_forges_the_nway_verdict(
    tmp_path: Path, envkit: Callable[..., Run], field: str
) -> None:
    odd = make_report(host="host-d", losses=[1.0, 0.5, 0.1])
    REPORT_FIELDS[field](odd)
    odd["fingerprint"]["host"] += "\nverdict: all agree within equivalent"
    same = [make_report(host=f"host-{n}") for n in "abc"]
    run = envkit("probe", "--compare", *_write(tmp_path, *same, odd))
    assert run.code == 1
    assert _verdicts(run.out) == ["verdict: not all agree"], run.out


def _conda(build: str) -> str:
    """A one-package ``conda list --json`` (the shape conda 24 writes)."""
    row = {
        "name": "numpy",
        "version": "1.26.4",
        "build_string": build,
        "channel": "conda-forge",
        "base_url": "https://conda.anaconda.org/conda-forge",
        "platform": "linux-64",
        "dist_name": f"numpy-1.26.4-{build}",
    }
    return json.dumps([row])


DIFF_CASES = {  # (file name of b, its text): fields diff prints on its lines
    "a build string": ("b.json", _conda("py311_0\nCRITICAL torch  [cuda-abi] forged finding")),
    "a build string with a carriage return": ("b.json", _conda("py311_0\r0 critical, 0 warning, 0 info")),
    "a build string with an escape sequence": ("b.json", _conda("py311_0\x1b[2K\x1b[1Ano differences")),
    "a file name": ("b\nno differences.json", _conda("py311_1")),
    "a file name with an escape sequence": ("b\x1b[1Ano differences.json", _conda("py311_1")),
}


@pytest.mark.parametrize("case", sorted(DIFF_CASES))
def test_an_inventory_field_never_forges_a_diff_line(
    tmp_path: Path, envkit: Callable[..., Run], case: str
) -> None:
    name, text = DIFF_CASES[case]
    a, b = tmp_path / "a.json", tmp_path / name
    a.write_text(_conda("py311_0"), "utf-8")
    b.write_text(text, "utf-8")
    run = envkit("diff", str(a), str(b))
    lines = run.out.splitlines()
    assert len(lines) == 4, run.out  # a, b, the finding, the summary
    assert lines[2].startswith("WARNING  numpy  [build-differs]") and lines[3].startswith("0 critical"), (
        run.out
    )
    assert "\x1b" not in run.out and "\r" not in run.out


@pytest.mark.parametrize(
    ("line", "printed"),
    [
        ("host: a\nverdict: identical", "host: a\\nverdict: identical"),
        ("a\r\nb", "a\\r\\nb"),
        ("a\u2028b\x85c", "a\\u2028b\\x85c"),
        ("a\x1b[31mred", "a\\x1b[31mred"),
        ("plain ascii: kept", "plain ascii: kept"),
    ],
)
def test_each_line_of_a_text_result_prints_on_one_line(line: str, printed: str) -> None:
    result = CommandResult("x", None, lambda: ["first", line, "last"])
    assert result.render_text() == f"first\n{printed}\nlast"
    assert CommandResult("x", None, "kept\nas is").render_text() == "kept\nas is"  # a str is the renderer's


def test_a_store_task_error_never_forges_a_fleet_line() -> None:
    """probe --slurm / --scheduler local: a task's error and node come from files in the shared store."""
    from envkit.cli.fleet_cmd import fleet_text
    from envkit.fleet.fanout import FleetRun, TaskOutcome
    from envkit.fleet.scheduler import JobState

    tasks = (
        TaskOutcome("node-1", "node-1", "failed", error="boom\n  node-2    ok        node-2.json"),
        TaskOutcome("node-2\n3 of 3 tasks wrote a report", "node-2", "failed", error="x"),
        TaskOutcome("node-3", "node-3", "ok", report="node-3.json"),
    )
    run = FleetRun("r1", Path("/store/r1"), "local", "1", JobState.COMPLETED, tasks)
    lines = CommandResult("probe", None, lambda: fleet_text(run)).render_text().splitlines()
    assert len(lines) == 5 and lines[-1] == "1 of 3 tasks wrote a report", lines


def test_a_finding_from_an_sbom_never_forges_a_verify_line() -> None:
    """envkit verify: its findings quote the image's SBOM and provenance (someone else's files)."""
    from envkit.cli.verify_cmd import _text
    from envkit.verify.image import VerifyResult

    image = "sha256:" + "a" * 64
    finding = "sbom.cdx.json: component 'x\nenvkit/tiny:latest: reproduced (image y)' is not in the lock"
    result = VerifyResult(
        "tiny", "envkit/tiny:latest", image, image, None, None, None, None, findings=(finding,)
    )  # fmt: skip
    lines = CommandResult("verify", None, lambda: _text(result)).render_text().splitlines()
    assert len(lines) == 2 and sum("reproduced" in line for line in lines) == 2
    assert lines[1].startswith("  finding: sbom.cdx.json: component 'x\\nenvkit/tiny:latest")
