"""Layer normalization throughput: one generated layer tar rewritten as ``envkit build`` does.

No Docker: a layer of ``ENVKIT_BENCH_NORMALIZE_FILES`` (default 20,000) files totalling
``ENVKIT_BENCH_NORMALIZE_MB`` (default 256) MB of incompressible data, in shuffled order with
build-time mtimes, is normalized (:func:`envkit.reproduce.layers.normalize_layer`) to a file.
Prints MB/s: the CPU and disk part of the cost; ``docker save`` and ``docker load`` add the
engine's part (``envkit build --json`` reports the whole under ``normalized.seconds``).
"""

from __future__ import annotations

import io
import os
import random
import tarfile
import tempfile
import time
from pathlib import Path

from benchmarks._goals import knob
from envkit.reproduce.layers import LayerPlan


def main() -> None:
    files = int(knob("ENVKIT_BENCH_NORMALIZE_FILES", "20000", "200"))
    total = int(knob("ENVKIT_BENCH_NORMALIZE_MB", "256", "1")) << 20
    each = max(1, total // files)
    rng = random.Random(21)
    names = [f"opt/env/lib/python3.11/site-packages/pkg{i % 200}/mod{i}.py" for i in range(files)]
    rng.shuffle(names)
    with tempfile.TemporaryDirectory(prefix="envkit-bench-") as tmp:
        source = Path(tmp) / "layer.tar"
        with tarfile.open(source, "w") as tar:
            for name in names:
                info = tarfile.TarInfo(name)
                info.size, info.mtime, info.uname = each, 1_800_000_000 + rng.randrange(100), "root"
                tar.addfile(info, io.BytesIO(os.urandom(each)))
        size = source.stat().st_size
        start = time.perf_counter()
        with tarfile.open(source, "r:") as layer, (Path(tmp) / "out.tar").open("wb") as out:
            plan = LayerPlan(layer, 1_700_000_000)
            planned = plan.size
            result = plan.write(out)
        seconds = time.perf_counter() - start
        assert result.size == planned
    rate = size / 1e6 / seconds
    print(f"   normalize: {files} files, {size / 1e6:.0f} MB in {seconds:.2f} s ({rate:.0f} MB/s)")


if __name__ == "__main__":
    main()
