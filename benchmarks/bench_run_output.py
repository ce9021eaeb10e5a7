"""A container that floods its stdout: what ``DockerEngine.run`` costs in memory and time.

The image is the one tests/integration/test_engine_bounds.py makes (this host's ``sh`` and ``head``
with their libraries, ``docker import``ed under its own tag, removed after). Each case runs in a
child process (``head -c BYTES /dev/zero`` in the container) so that its peak RSS is its own; the
engine reads at most 64 MiB of a stream (envkit/engine/run_bounds.py), so every flood past that
costs the same. Skipped without a Docker engine.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks._goals import ROOT, scaled

FLOODS = [scaled(n, 1 << 20) for n in (16 << 20, 256 << 20)]
_CHILD = """
import json, resource, sys, time
from envkit.engine.docker_api import DockerEngine
from envkit.errors import ContainerOutputTooLarge
tag, size = sys.argv[1], int(sys.argv[2])
start = time.perf_counter()
try:
    read = len(DockerEngine().run(tag, ["sh", "-c", f"head -c {size} /dev/zero"], timeout_s=600).stdout)
except ContainerOutputTooLarge:
    read = -1
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"read": read, "seconds": time.perf_counter() - start, "peak": peak}))
"""


def main() -> None:
    try:
        from envkit.engine.docker_api import DockerEngine
        from tests.integration.test_engine_bounds import _rootfs

        engine = DockerEngine(timeout=10)
        engine.api.ping()
    except Exception as e:  # noqa: BLE001 - no engine: nothing to measure
        print(f"   skipped: no Docker engine ({type(e).__name__})")
        return
    tag = "envkit-bench/run-output:1"
    with tempfile.TemporaryDirectory() as tmp:
        engine.import_image(_rootfs(Path(tmp)), tag)
    try:
        for size in FLOODS:
            done = subprocess.run(
                [sys.executable, "-c", _CHILD, tag, str(size)],
                capture_output=True, text=True, cwd=ROOT, check=True,
            )  # fmt: skip
            found = json.loads(done.stdout)
            what = "refused past 64 MiB" if found["read"] < 0 else f"read {found['read']} bytes"
            print(
                f"   {size >> 20} MiB to stdout: {what}, {found['seconds']:.1f} s, "
                f"peak RSS {found['peak'] / 1e6:.0f} MB"
            )
    finally:
        engine.remove(tag)
        engine.api.close()
