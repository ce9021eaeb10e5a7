"""`envkit check` of a torch CUDA environment: the readiness goal (<= 30 s on 2 cores).

The target is the torch CUDA image named by ``ENVKIT_BENCH_TORCH_CUDA_IMAGE`` (torch 2.15.0 on
NVIDIA's cu13 wheels, `envkit build` of the torch CUDA spec) or, without one, the site-packages of
this interpreter when it holds a CUDA torch (the same files, read on the host: no container start).
Three rounds, the median wall time recorded; the CPU time of envkit and its payload beside it.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

from benchmarks._goals import ROOT, record, scaled

ROUNDS = scaled(3, 1)
TARGETS = ["--gpu", "H100", "--gpu", "RTX5090", "--driver", "580.65.06"]


def _target() -> tuple[list[str], str] | None:
    image = os.environ.get("ENVKIT_BENCH_TORCH_CUDA_IMAGE")
    if image:
        return [image], f"image {image}"
    site = Path(sysconfig.get_paths()["purelib"])
    version = site / "torch" / "version.py"
    if version.is_file() and "cuda: Optional[str] = '" in version.read_text():
        return ["--site", str(site)], f"host site-packages {site} (no ENVKIT_BENCH_TORCH_CUDA_IMAGE)"
    return None


def _walk_cost(site: str) -> None:
    """What reading every shared object of the environment adds to the payload (issue 46.1): the
    payload's report without and with the walk, in this process, warm page cache."""
    import importlib.util

    from envkit.catalog import load_catalog

    payload = ROOT / "envkit" / "payload" / "scripts"
    sys.path.insert(0, str(payload))  # its modules import each other by name
    found = importlib.util.spec_from_file_location("envkit_payload_ready", payload / "ready.py")
    assert found is not None and found.loader is not None
    ready = importlib.util.module_from_spec(found)
    found.loader.exec_module(ready)

    spec = load_catalog().gpu.payload_spec()
    ready.report(spec, [site], None, None)  # warm the page cache
    took = []
    options: tuple[list[str] | None, ...] = (None, [])
    for caches in options:
        start = time.perf_counter()
        doc = ready.report(spec, [site], None, caches)
        took.append(time.perf_counter() - start)
    walked = doc["walk"]["shared_objects"]
    print(
        f"   every-library walk: payload {took[0]:.1f} s without, {took[1]:.1f} s with "
        f"({walked} shared objects read; +{took[1] - took[0]:.1f} s)"
    )


def main() -> None:
    found = _target()
    if found is None:
        print("   skipped: no ENVKIT_BENCH_TORCH_CUDA_IMAGE and no CUDA torch in this interpreter")
        return
    argv, what = found
    walls, cpus = [], []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for _ in range(ROUNDS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "envkit", "check", *argv, *TARGETS, "--json"],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        if done.returncode not in (0, 1):
            print(f"   envkit check failed (exit {done.returncode}): {done.stderr.strip()[-400:]}")
            return
    wall = statistics.median(walls)
    print(f"   {what}: wall {', '.join(f'{w:.1f}' for w in walls)} s; CPU {statistics.median(cpus):.1f} s")
    record("readiness", wall, f"{what}; CPU {statistics.median(cpus):.1f} s")
    if argv[0] == "--site":
        _walk_cost(argv[1])
