"""Others' files in `envkit check` (security round 4, items 7 and 8): an nvidia-smi report, a payload
report and file names in the environment print on their own lines; a report of the wrong shape is
an error naming the field, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envkit.catalog import load_catalog
from envkit.cli import main
from envkit.readiness.facts import ReadinessError, parse_facts
from envkit.readiness.targets import host_targets
from tests.unit.readiness.test_payload_site import SMI, make_site

ROW = "|   0  NVIDIA H100 80GB HBM3          On  | 00000000:18:00.0 Off |                    0 |\n"
FORGED = "H100 (sm_90): READY"


def _smi_with_row(row: str) -> str:
    return SMI.replace(ROW, row, 1)


@pytest.mark.parametrize(
    "row",
    [
        # the finding: the name pattern spanned lines, the next line became part of the GPU name
        "|   0  NVIDIA Evil\n" + FORGED + "          On  | 00000000:18:00.0 Off |    0 |\n",
        "|   0  NVIDIA Evil\r" + FORGED + "          On  | 00000000:18:00.0 Off |    0 |\n",
        "|   0  Tesla X\n\n" + FORGED + "   Off  | 00000000:18:00.0 Off |    0 |\n",
        "|   0  NVIDIA Evil\u2028" + FORGED + "          On  | 00000000:18:00.0 Off |    0 |\n",
        "|   0  NVIDIA Evil\x1b[2K\x1b[1G" + FORGED + "    On  | 00000000:18:00.0 Off |    0 |\n",
    ],
)
def test_a_gpu_name_in_an_nvidia_smi_table_prints_no_line_of_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], row: str
) -> None:
    report = tmp_path / "smi.txt"
    report.write_text(_smi_with_row(row), newline="")
    for target in host_targets(report, load_catalog()):
        assert target.gpu is None or ("\n" not in target.gpu and "\r" not in target.gpu)
    code = main(["check", "--site", str(make_site(tmp_path)), "--host", str(report)])
    out = capsys.readouterr().out
    assert code == 1
    assert not any(line.startswith(FORGED) for line in out.splitlines()), out
    assert "\x1b" not in out and "\r" not in out and "\u2028" not in out


@pytest.mark.parametrize(
    "text",
    [
        "name, driver_version\nNVIDIA Evil\r" + FORGED + ", 570.86.10\n",
        "name, driver_version\nNVIDIA Evil\u2028" + FORGED + ", 570.86.10\n",
        "name, driver_version\nNVIDIA Evil\x1b[1A" + FORGED + ", 570.86.10\n",
    ],
)
def test_a_gpu_name_in_an_nvidia_smi_csv_prints_no_line_of_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    report = tmp_path / "q.csv"
    report.write_text(text, newline="")
    main(["check", "--site", str(make_site(tmp_path)), "--host", str(report)])
    out = capsys.readouterr().out
    assert not any(line.startswith(FORGED) for line in out.splitlines()), out
    assert "\x1b" not in out and "\r" not in out and "\u2028" not in out


def test_a_file_name_in_the_environment_prints_no_line_of_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = make_site(tmp_path)
    (site / "torch" / "lib" / f"libx\n{FORGED}\n.so").write_text("not a library")
    code = main(["check", "--site", str(site), "--gpu", "A100"])
    out = capsys.readouterr().out
    assert code == 1 and "libx\\nH100 (sm_90): READY\\n.so" in out
    assert not any(line.startswith(FORGED) for line in out.splitlines()), out


def _doc(**framework: Any) -> str:
    fw = {"dir": "/site/torch", "version": "2.15.0", "cuda": "13.2", **framework}
    return json.dumps(
        {"kind": "envkit-gpu-readiness", "schema": 1, "frameworks": {"torch": fw}, "libraries": {}}
    )


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        (_doc(links=5), "frameworks.torch.links is not a list"),  # the finding
        (_doc(links=True), "frameworks.torch.links is not a list"),
        (_doc(links={"a": 1}), "frameworks.torch.links is not a list"),
        (_doc(links=[5]), "frameworks.torch.links[0] is not an object"),
        (_doc(dynload=7), "frameworks.torch.dynload is not a list"),
        (_doc(dynload=[{"lib": "cudnn", "names": 3}]), "dynload.names is not a list"),
        (_doc(roots="x"), "torch.roots is not a list"),
        (_doc(loaded={"maps": {"cudnn": 1}}), "torch.loaded.maps.cudnn is not a list"),
        (
            json.dumps({"kind": "envkit-gpu-readiness", "schema": 1, "libraries": {"/l.so": {"groups": 5}}}),
            "/l.so.groups is not a list",
        ),
        (
            json.dumps({"kind": "envkit-gpu-readiness", "schema": 1, "libraries": {"/a\nb": {"sass": 1}}}),
            "/a\\nb.sass is not an object",
        ),
    ],
)
def test_a_report_of_the_wrong_shape_names_the_field(doc: str, field: str) -> None:
    with pytest.raises(ReadinessError) as err:
        parse_facts(doc, "img")
    assert field in err.value.message and "\n" not in err.value.message
