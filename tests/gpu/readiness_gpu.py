"""`envkit check`'s static prediction against what the GPU says (part of `make gpu-check`).

Standard library + CUDA torch only (no pydantic on a bare GPU machine): runs the readiness payload
on this interpreter's site-packages, then compares, on the device itself:
- the SASS of libtorch_cuda.so's fatbins with ``torch.cuda.get_arch_list()``;
- the predicted verdict for the device's compute capability with a matmul and a conv actually run;
- the cuDNN the payload loaded with ``torch.backends.cudnn.version()``, its CUDA runtime with
  ``torch.version.cuda``;
- the cuDNN/cuBLAS files the payload resolved with those ``/proc/self/maps`` shows after the conv.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

PAYLOAD = Path(__file__).resolve().parents[2] / "envkit" / "probe" / "payload" / "ready.py"
HOST_LIBS = ["libcuda.so.1", "libnvidia-ml.so.1", "libnvidia-ptxjitcompiler.so.1"]


def payload_report() -> dict[str, Any]:
    spec = json.dumps({"host_libraries": HOST_LIBS, "dynload": {}})
    done = subprocess.run(
        [sys.executable, str(PAYLOAD), "--spec", spec],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def _runs(arch: str, cc: tuple[int, int]) -> bool:
    if not arch.startswith("sm_"):
        return False
    digits = arch[3:].rstrip("a")
    major, minor = int(digits[:-1]), int(digits[-1])
    return (major, minor) == cc if arch.endswith("a") else major == cc[0] and minor <= cc[1]


def _ptx_ok(arch: str, cc: tuple[int, int]) -> bool:
    if not arch.startswith("compute_"):
        return False
    digits = arch[8:].rstrip("a")
    return (int(digits[:-1]), int(digits[-1])) <= cc


def predicted_ready(lib: dict[str, Any], cc: tuple[int, int]) -> bool:
    """The readiness rule for a framework library: code (SASS or JIT-able PTX) in most fatbins."""
    covered = sum(
        g["fatbins"] for g in lib["groups"] if any(_runs(a, cc) or _ptx_ok(a, cc) for a in g["archs"])
    )
    return bool(covered * 2 > lib["fatbins"])


def device_runs() -> tuple[bool, str]:
    import torch

    try:
        x = torch.randn(64, 64, device="cuda")
        y = (x @ x).sum()
        conv = torch.nn.Conv2d(3, 8, 3).cuda()
        z = conv(torch.randn(1, 3, 16, 16, device="cuda")).sum()
        torch.cuda.synchronize()
        return True, f"matmul {float(y):.3g}, conv {float(z):.3g}"
    except RuntimeError as e:  # "no kernel image is available for execution on the device"
        return False, str(e).splitlines()[0]


def mapped(names: tuple[str, ...]) -> set[str]:
    out = set()
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            if any(f"/{n}" in path for n in names):
                out.add(os.path.realpath(path))
    return out


def readiness_checks() -> list[dict[str, Any]]:
    """Each comparison: name, predicted, actual, ok."""
    import torch

    report = payload_report()
    fw = report["frameworks"]["torch"]
    cuda_lib = next(p for p in report["libraries"] if p.endswith("/libtorch_cuda.so"))
    lib = report["libraries"][cuda_lib]
    cc = torch.cuda.get_device_capability()
    rows: list[dict[str, Any]] = []

    def row(name: str, predicted: Any, actual: Any, ok: bool) -> None:
        rows.append({"check": name, "predicted": predicted, "actual": actual, "ok": bool(ok)})

    sass = sorted(
        (a for g in lib["groups"] for a in g["archs"] if g["fatbins"] * 2 >= lib["fatbins"]), key=str
    )
    built = sorted({a for a in torch.cuda.get_arch_list() if a.startswith("sm_")}, key=str)
    row(
        "libtorch_cuda.so SASS = torch.cuda.get_arch_list()",
        sorted(set(sass)),
        built,
        sorted(set(sass)) == built,
    )
    ready = predicted_ready(lib, cc)
    ran, how = device_runs()
    row(f"verdict for sm_{cc[0]}{cc[1]} = a matmul and a conv on the device", ready, how, ready == ran)
    loaded = fw["loaded"]["versions"]
    cudnn = torch.backends.cudnn.version()  # type: ignore[no-untyped-call]
    row(
        "loaded cuDNN = torch.backends.cudnn.version()",
        loaded.get("cudnn"),
        cudnn,
        loaded.get("cudnn") == cudnn,
    )
    cudart = loaded.get("cudart")
    runtime = f"{cudart // 1000}.{cudart % 1000 // 10}" if isinstance(cudart, int) else None
    row(
        "loaded CUDA runtime = torch.version.cuda", runtime, torch.version.cuda, runtime == torch.version.cuda
    )
    resolved = {os.path.realpath(lk["to"]) for lk in fw["links"] if lk["to"]}
    in_use = mapped(("libcudnn.so", "libcublas.so", "libcudart.so"))
    row(
        "files torch maps after the conv were resolved by the payload",
        sorted(resolved & in_use),
        sorted(in_use),
        in_use <= resolved | {p for ps in fw["loaded"]["maps"].values() for p in map(os.path.realpath, ps)},
    )
    return rows


def main() -> int:
    rows = readiness_checks()
    for r in rows:
        print(
            f"{'ok  ' if r['ok'] else 'FAIL'} {r['check']}: predicted {r['predicted']}, device {r['actual']}"
        )
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
