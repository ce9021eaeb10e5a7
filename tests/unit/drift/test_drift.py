from __future__ import annotations

import json
from pathlib import Path

import pytest

from envkit.cli import main
from envkit.drift import diff_inventories
from envkit.errors import EnvkitError, ExitCode
from envkit.inventory import Inventory, parse_inventory, read_inventory
from envkit.inventory.snapshot import LocalSource, take_snapshot, write_snapshot
from envkit.inventory.testing import FakeSource

DATA = Path(__file__).resolve().parents[2] / "data" / "inventories"


def inv(text: str, label: str, fmt: str | None = None) -> Inventory:
    return parse_inventory(text, path=f"{label}.txt", label=label, format=fmt)


def rules_fired(report_findings: object) -> set[str]:
    return {f.rule for f in report_findings if f.rule}  # type: ignore[attr-defined]


def test_paris_exports_show_the_changes(shared_dir: Path) -> None:
    a = read_inventory(shared_dir / "inventories" / "envexport-paris-444fb8e.yml")
    b = read_inventory(shared_dir / "inventories" / "envexport-paris-aec6a0f.yml")
    found = {(f.package, f.kind): f for f in diff_inventories([a, b]).findings}
    assert found[("scipy", "version")].values == {a.label: "1.9.3", b.label: "1.10.1"}
    assert found[("pandas", "version")].severity == "warning"  # 1.5.1 -> 2.0.2: a major change
    assert found[("pytorch3d", "version")].values[b.label] == "0.7.4"
    assert found[("tinycudann", "removed")].values == {a.label: "1.6", b.label: None}
    assert ("aiofiles", "added") in found
    assert not any(p == "torch" for p, _ in found)  # torch did not change between the two


def test_conda_pytorch_equals_pip_torch() -> None:
    conda = inv("pytorch 2.4.1 py3.11_cuda12.1_cudnn9.1.0_0 pytorch\nnumpy 1.26.4 py311h_0\n", "a")
    pip = inv("torch==2.4.1+cu121\nnumpy==1.26.4\n", "b")  # flavour stated: a bare 2.4.1 is unknown
    assert diff_inventories([conda, pip]).findings == ()


def test_version_difference_is_reported() -> None:
    a, b = inv("torch==2.4.1\n", "a"), inv("torch==2.5.0\n", "b")
    (finding,) = diff_inventories([a, b]).findings
    assert (finding.kind, finding.severity, finding.values) == (
        "version",
        "warning",
        {"a": "2.4.1", "b": "2.5.0"},
    )


def test_build_channel_installer_kinds() -> None:
    a = inv("zlib 1.2.13 h5eee18b_0 conda-forge\nrequests 2.31.0 py311_0 conda-forge\n", "a")
    b = inv("zlib 1.2.13 h5eee18b_1 conda-forge\nrequests 2.31.0 py311_0 pkgs/main\n", "b")
    kinds = {(f.package, f.kind, f.rule) for f in diff_inventories([a, b]).findings}
    assert ("conda:zlib", "build", "build-differs") in kinds
    assert ("requests", "channel", "channel-differs") in kinds
    c = inv("requests 2.31.0 pypi_0 pypi\n", "c")
    assert {f.kind for f in diff_inventories([a, c]).findings} >= {"installer"}
    freeze = inv("requests==2.31.0\n", "d")  # pip freeze cannot tell installers: no finding
    assert not [f for f in diff_inventories([a, freeze]).findings if f.kind == "installer"]


def test_rules_fire_on_planted_file() -> None:
    report = diff_inventories([read_inventory(DATA / "planted-numpy2-torch22.txt")])
    fired = rules_fired(report.findings)
    assert {"torch-numpy2", "torch-companion-flavour", "torch-companion-release"} <= fired
    assert report.worst == "critical"


def test_planted_across_rules() -> None:
    a = inv(
        "python 3.10.12 h_0\nblas 1.0 mkl\ncudnn 8.9.2 h_0\ncudatoolkit 11.8.0 h_0\n"
        "pytorch 2.1.0 py3.10_cuda11.8_cudnn8.7.0_0 pytorch\nnumpy 1.21.6 py310_0\n",
        "a",
        "conda-list",
    )
    b = inv(
        "python 3.11.9 h_0\nblas 1.0 openblas\ncudnn 9.1.0 h_0\ncudatoolkit 12.1.0 h_0\n"
        "pytorch 2.1.0 py3.11_cuda12.1_cudnn9.1.0_0 pytorch\nnumpy 1.23.5 py311_0\n",
        "b",
        "conda-list",
    )
    fired = rules_fired(diff_inventories([a, b]).findings)
    assert {
        "numpy-differs-under-framework",
        "torch-cuda-flavour-differs",
        "cuda-toolkit-differs",
        "cudnn-major-differs",
        "blas-differs",
        "python-minor-differs",
    } <= fired
    same = rules_fired(diff_inventories([a, a]).findings)
    assert not same & fired - {"pip-shadows-conda"}


def test_within_rules_shadow_and_cuda_components() -> None:
    one = inv(
        "pytorch 2.4.1 py3.11_cuda12.1_cudnn9.1.0_0 pytorch\ntorch 2.4.1 pypi_0 pypi\n"
        "cuda-cudart 12.1.105 0 nvidia\ncuda-nvrtc 12.4.127 0 nvidia\n",
        "one",
    )
    findings = diff_inventories([one]).findings
    shadow = next(f for f in findings if f.rule == "pip-shadows-conda")
    assert (shadow.package, shadow.severity) == ("torch", "critical")
    assert "cuda-components-inconsistent" in rules_fired(findings)


def test_paddle_numpy2() -> None:
    fired = rules_fired(diff_inventories([inv("paddlepaddle-gpu==2.6.1\nnumpy==2.0.0\n", "p")]).findings)
    assert "paddle-gpu26-numpy2" in fired


def test_paddle3_amp_numpy24() -> None:
    def fired(lines: str) -> set[str]:
        return rules_fired(diff_inventories([inv(lines, "p")]).findings)

    assert "paddle-gpu3-amp-numpy24" in fired("paddlepaddle-gpu==3.3.1\nnumpy==2.4.0\n")
    assert "paddle-gpu3-amp-numpy24" not in fired("paddlepaddle-gpu==3.3.1\nnumpy==2.3.5\n")
    assert "paddle-gpu3-amp-numpy24" not in fired(
        "paddlepaddle==3.3.1\nnumpy==2.4.6\n"
    )  # the CPU build: no scaler


def test_fleet_names_majority_and_outlier() -> None:
    hosts = [inv(f"numpy==1.26.4\ntorch==2.4.1\nrich==13.{i % 2}\n", f"host-{i}") for i in range(5)]
    hosts.append(inv("numpy==1.21.6\ntorch==2.4.1\nrich==13.0\n", "host-odd"))
    report = diff_inventories(hosts)
    numpy = next(f for f in report.findings if f.package == "numpy" and f.kind == "version")
    assert "majority 1.26.4 (5/6)" in numpy.message and "outliers: host-odd 1.21.6" in numpy.message
    rule = next(f for f in report.findings if f.rule == "numpy-differs-under-framework")
    assert "host-odd" in rule.message
    missing = [*hosts, inv("numpy==1.26.4\nrich==13.0\n", "host-notorch")]
    removed = next(f for f in diff_inventories(missing).findings if f.package == "torch")
    assert removed.kind == "removed" and "host-notorch absent" in removed.message


def test_snapshot_conda_failure_is_a_tool_failure(tmp_path: Path) -> None:
    source = LocalSource({"CONDA_PREFIX": str(tmp_path), "CONDA_EXE": "false"})
    with pytest.raises(EnvkitError) as info:
        source.conda_records()
    assert info.value.exit_code == ExitCode.FAILURE
    assert info.value.hint


def test_snapshot_roundtrip(tmp_path: Path) -> None:
    conda = [
        {"name": "pytorch", "version": "2.4.1", "build_string": "py3.11_cuda12.1_0", "channel": "pytorch"}
    ]
    source = FakeSource(conda=conda, dists=[("torch", "2.4.1"), ("rich", "13.7.1")])
    path = tmp_path / "fake-host.json"
    assert write_snapshot(take_snapshot(source), path) is True
    assert write_snapshot(take_snapshot(source), path) is False  # byte-stable
    snap = read_inventory(path)
    assert snap.format == "snapshot"
    assert sorted((p.project, p.installer) for p in snap.packages) == [("rich", "pip"), ("torch", "conda")]


def test_cli_diff_json_shape_and_exit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.txt").write_text("torch==2.4.1\n")
    (tmp_path / "b.txt").write_text("torch==2.4.1\n")
    assert main(["diff", str(tmp_path / "a.txt"), str(tmp_path / "b.txt"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["result"]
    assert result == {
        "inputs": [
            {
                "label": "a",
                "path": str(tmp_path / "a.txt"),
                "format": "pip-freeze",
                "packages": 1,
                "selected": None,
                "warnings": [],
            },
            {
                "label": "b",
                "path": str(tmp_path / "b.txt"),
                "format": "pip-freeze",
                "packages": 1,
                "selected": None,
                "warnings": [],
            },
        ],
        "findings": [],
    }
    (tmp_path / "b.txt").write_text("torch==2.5.0\n")
    assert main(["diff", str(tmp_path / "a.txt"), str(tmp_path / "b.txt"), "--json"]) == 1
    (finding,) = json.loads(capsys.readouterr().out)["result"]["findings"]
    assert set(finding) == {"package", "kind", "severity", "rule", "values", "message"}


def test_cli_hosts_from_store_check_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for host, version in (("host-a", "2.4.1"), ("host-b", "2.4.1")):
        write_snapshot(
            take_snapshot(FakeSource(hostname=host, dists=[("torch", version)])), tmp_path / f"{host}.json"
        )
    assert main(["diff", "host-a", "host-b", "--store", str(tmp_path)]) == 0
    assert "no differences" in capsys.readouterr().out
    assert main(["diff", "host-a", "host-zzz", "--store", str(tmp_path)]) == 2
    assert main(["diff", "--check", str(DATA / "planted-numpy2-torch22.txt")]) == 1
    assert main(["diff", "--check", str(DATA / "garbled-pip-freeze.txt")]) == 2
    assert "garbled-pip-freeze.txt:2" in capsys.readouterr().err.replace("\n", "")
    assert main(["diff", str(DATA / "planted-numpy2-torch22.txt")]) == 2
