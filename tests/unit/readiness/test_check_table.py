"""Several targets print as one table (target x driver -> verdict, first reason) with each finding once
below it; one target prints as before; --json is the same list of verdicts either way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envkit.cli import main
from envkit.cli.check_text import verdict_table
from envkit.readiness.rules import ReadinessFinding
from tests.unit.readiness.crafted import Library, sm
from tests.unit.readiness.test_every_library import _install
from tests.unit.readiness.test_payload_site import make_site

GPUS = ["--gpu", "V100", "--gpu", "T4", "--gpu", "A100", "--gpu", "H100", "--gpu", "RTX5090"]
DRIVERS = ["--driver", "535.104.05", "--driver", "595.45.04"]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    found = make_site(tmp_path_factory.mktemp("table"))
    _install(found, "ext", "1.0", {"ext/_k.so": Library(fatbins=[sm(80, 90)]).encode()})
    return found


def test_five_gpus_by_two_drivers_is_one_table_with_each_finding_once(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--site", str(site), *GPUS, *DRIVERS]) == 1
    out = capsys.readouterr().out.splitlines()
    header = out.index(next(line for line in out if line.startswith("target ")))
    rows = out[header + 1 : header + 11]
    assert [r.split()[0] for r in rows] == [
        "V100",
        "V100",
        "T4",
        "T4",
        "A100",
        "A100",
        "H100",
        "H100",
        "RTX5090",
        "RTX5090",
    ]
    assert all(" WILL-FAIL " in r or " READY" in r for r in rows)
    details = out[out.index("details:") + 1 :]
    messages = [d.split("  [", 1)[0] for d in details]
    assert len(messages) == len(set(messages))  # written once, however many targets it concerns
    sm70 = next(d for d in details if "ext 1.0: no kernel image for sm_70" in d)
    assert sm70.endswith("[V100 (sm_70)]")  # every driver of that GPU: named once, as the GPU
    old = next(d for d in details if d.startswith("  x driver 535.104.05") and "GeForce" in d)
    assert "V100 (sm_70) x 535.104.05" in old and "595.45.04" not in old.split("[", 1)[1]


def test_json_is_still_one_verdict_per_target(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", "--site", str(site), *GPUS, *DRIVERS, "--json"])
    verdicts = json.loads(capsys.readouterr().out)["result"]["verdicts"]
    assert len(verdicts) == 10
    assert {tuple(sorted(v)) for v in verdicts} == {("findings", "status", "target")}
    assert (
        verdicts[0]["target"]["label"] == "V100 (sm_70)" and verdicts[0]["target"]["driver"] == "535.104.05"
    )


def test_one_target_prints_as_before(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", "--site", str(site), "--gpu", "H100"])
    out = capsys.readouterr().out
    assert "H100 (sm_90): WILL-FAIL" in out and "details:" not in out


def test_a_table_cell_from_a_file_stays_on_its_line() -> None:
    finding = ReadinessFinding("error", "x", "bad\nH100 (sm_90): READY")
    lines = verdict_table(
        [
            ("evil\nH100 (sm_90): READY", "535.104.05", "will-fail", [finding]),
            ("A100 (sm_80)", None, "ready", []),
        ]
    )
    assert all("\n" not in line for line in lines)
    assert lines[1].startswith("evil\\nH100")
