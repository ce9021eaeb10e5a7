"""The readiness payload end to end on a crafted site-packages (its own process, as in an image), and
``envkit check --site`` over it: links resolved with each library's run path, loops, hostile files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from envkit.catalog import load_catalog
from envkit.cli import main
from envkit.readiness.check import facts_on_host
from envkit.readiness.targets import host_targets
from tests.unit.readiness.crafted import Library, sm

TORCH_VERSION = "__version__ = '2.15.0+cu132'\ncuda: Optional[str] = '13.2'\n"


def make_site(root: Path, *, sparselt: bool = True, loop: bool = False) -> Path:
    site = root / "site-packages"
    lib = site / "torch" / "lib"
    lib.mkdir(parents=True)
    (site / "torch" / "version.py").write_text(TORCH_VERSION)
    (site / "torch-2.15.0.dist-info").mkdir()
    nv = site / "nvidia" / "cu13" / "lib"
    nv.mkdir(parents=True)
    needed = ["libc10_cuda.so", "libcudart.so.13", "libcusparseLt.so.0", "libcuda.so.1"]
    (lib / "libtorch_cuda.so").write_bytes(
        Library(
            "libtorch_cuda.so",
            needed,
            "$ORIGIN:$ORIGIN/../../nvidia/cu13/lib",
            [sm(75, 80, 86, 90, 100, 120)] * 3,
        ).encode()
    )
    c_ext = site / "torch" / "_C.cpython-311-x86_64-linux-gnu.so"
    c_ext.write_bytes(Library(None, ["libtorch_cuda.so"], "$ORIGIN/lib").encode())
    (lib / "libc10_cuda.so").write_bytes(Library("libc10_cuda.so", ["libcudart.so.13"]).encode())
    (nv / "libcudart.so.13").write_bytes(Library("libcudart.so.13", []).encode())
    if sparselt:  # torch's libtorch_cuda.so links libcusparseLt.so.0 (nvidia-cusparselt-cu13)
        (nv / "libcusparseLt.so.0").write_bytes(Library("libcusparseLt.so.0", []).encode())
    if loop:
        os.symlink(lib / "libloop_b.so", lib / "libloop_a.so")
        os.symlink(lib / "libloop_a.so", lib / "libloop_b.so")
    (lib / "libnot_elf.so").write_text("INPUT(-lfoo)\n")  # a linker script, as some distributions ship
    return site


def test_links_resolve_through_each_librarys_run_path(tmp_path: Path) -> None:
    facts = facts_on_host([str(make_site(tmp_path))], load_catalog(), env={"LD_LIBRARY_PATH": ""})
    torch = facts.frameworks["torch"]
    assert (torch.version, torch.cuda) == ("2.15.0+cu132", "13.2")
    links = {(Path(lk.requester).name, lk.name): lk for lk in torch.links}
    cudart = links[("libtorch_cuda.so", "libcudart.so.13")].to
    assert cudart is not None and cudart.endswith("nvidia/cu13/lib/libcudart.so.13")
    # libc10_cuda.so has no run path: its libcudart.so.13 is the one already loaded (as ld.so does)
    assert links[("libc10_cuda.so", "libcudart.so.13")].to == cudart
    assert links[("libtorch_cuda.so", "libcuda.so.1")].host
    lib = facts.libraries[str(tmp_path / "site-packages/torch/lib/libtorch_cuda.so")]
    assert lib.fatbins == 3 and lib.sass["sm_120"] == 3
    # a crafted library is no loadable object: the child process says so, as dlopen would at import
    assert "cudart" in torch.loaded.errors


def test_loops_and_non_elf_files_are_findings_not_tracebacks(tmp_path: Path) -> None:
    site = make_site(tmp_path, loop=True)
    facts = facts_on_host([str(site)], load_catalog(), env={"LD_LIBRARY_PATH": ""})
    problems = {Path(p).name: lib.problem for p, lib in facts.libraries.items() if lib.problem}
    assert "unreadable" in (problems["libloop_a.so"] or "")
    assert problems["libnot_elf.so"] == "not an ELF file"


def test_check_cli_on_a_site_names_the_missing_library(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = make_site(tmp_path, sparselt=False)
    code = main(["check", "--site", str(site), "--gpu", "RTX5090", "--driver", "470.82", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["command"] == "check" and not out["ok"]
    (verdict,) = out["result"]["verdicts"]
    assert verdict["target"] == {
        "label": "RTX5090 (sm_120)",
        "gpu": "RTX5090",
        "compute_capability": "12.0",
        "driver": "470.82",
    }
    messages = [f["message"] for f in verdict["findings"] if f["severity"] == "error"]
    assert "libcusparseLt.so.0 missing: torch fails to load (libtorch_cuda.so links it)" in messages
    assert any(
        m.startswith("driver 470.82 on a CUDA 13.x runtime: below the 580.65.06 floor") for m in messages
    )
    assert out["result"]["summary"]["gpu_code"]["libtorch_cuda.so"]["sass"][-1] == "sm_90"


def test_check_cli_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check"]) == 2
    assert main(["check", "img", "--site", str(tmp_path)]) == 2
    assert main(["check", "--site", str(tmp_path), "--gpu", "H900"]) == 2
    assert "no such GPU in the catalog" in capsys.readouterr().err
    assert main(["check", "--site", str(tmp_path), "--driver", "latest"]) == 2
    assert "is not a driver version" in capsys.readouterr().err


SMI = """\
Tue Dec  1 10:00:00 2026
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
|=========================================+========================+======================|
|   0  NVIDIA H100 80GB HBM3          On  | 00000000:18:00.0 Off |                    0 |
|   1  NVIDIA H100 80GB HBM3          On  | 00000000:2A:00.0 Off |                    0 |
+-----------------------------------------+------------------------+----------------------+
"""


def test_host_reports_nvidia_smi_table_and_csv(tmp_path: Path) -> None:
    table = tmp_path / "smi.txt"
    table.write_text(SMI)
    (t,) = host_targets(table, load_catalog())
    assert (t.gpu, t.cc, t.driver, t.data_center) == ("NVIDIA H100 80GB HBM3", (9, 0), "535.104.05", True)
    csv = tmp_path / "q.csv"
    csv.write_text(
        "name, driver_version\nNVIDIA GeForce RTX 5090, 570.86.10\nNVIDIA A100-SXM4-80GB, 570.86.10\n"
    )
    targets = host_targets(csv, load_catalog())
    assert [(x.cc, x.driver) for x in targets] == [((12, 0), "570.86.10"), ((8, 0), "570.86.10")]


def test_host_report_that_names_nothing_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("nothing here\n")
    assert main(["check", "--site", str(tmp_path), "--host", str(empty)]) == 2
    assert "no GPU or driver found" in capsys.readouterr().err
