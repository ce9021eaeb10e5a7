"""Lock time for a realistic spec against a synthetic channel of >= 50,000 records on two platforms."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from benchmarks._goals import scaled
from envkit.lock import lock_environment
from envkit.lock.conda import RattlerSolver
from envkit.lock.pip import UvResolver
from envkit.lock.testing import Record, make_wheel, realistic_records, write_channel
from envkit.spec.load import load_spec

PLATFORMS = ("linux-64", "linux-aarch64")
FILLER_PER_PLATFORM = scaled(25_000, 200)


def _filler(subdir: str) -> list[Record]:
    """Noise packages (repodata only): 2,500 names x 10 versions, with dependency chains."""
    records = []
    for i in range(FILLER_PER_PLATFORM):
        name, version = f"synthetic-{i // 10:04d}", f"1.{i % 10}.0"
        deps = ("python >=3.10", f"synthetic-{(i // 10 + 1) % 2500:04d} >=1.0") if i % 3 == 0 else ()
        records.append(Record(name, version, "h0_0", subdir, deps))
    return records


def write_project(root: Path) -> int:
    """The channel, the wheel mirror and ``environments/bench.yaml`` under ``root``; the record count."""
    real = realistic_records(PLATFORMS)
    filler = [r for p in PLATFORMS for r in _filler(p)]
    channel = write_channel(root / "channel", [*real, *filler], archives=False)
    wheels = root / "wheels"
    make_wheel(wheels, "alpha", "1.0", ["beta>=1"])
    make_wheel(wheels, "beta", "2.0")
    (root / "environments").mkdir()
    (root / "environments" / "bench.yaml").write_text(
        'name: bench\npython: "3.11"\ncuda: "12.1"\n'
        "conda:\n  - pytorch\n  - numpy\n  - libblas * *openblas\n"
        f'  - synthetic-0001\npip:\n  - alpha\nchannels: ["{channel}"]\n'
        f'platforms: [{", ".join(PLATFORMS)}]\nmirrors:\n  pypi: "{wheels.as_uri()}"\n'
    )
    return len(real) + len(filler)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="envkit-bench-") as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        records = write_project(root)
        print(f"   wrote the channel in {time.perf_counter() - start:.1f} s")
        loaded = load_spec(root / "environments" / "bench.yaml")
        print(f"   channel: {records} records over {len(PLATFORMS)} platforms + noarch")
        for label in ("first lock", "relock (previous lock preferred)"):
            start = time.perf_counter()
            result = lock_environment(loaded, root / "images" / "bench", RattlerSolver(), UvResolver())
            took = time.perf_counter() - start
            counts = ", ".join(f"{p} {len(result.contents.conda[p])}" for p in PLATFORMS)
            print(
                f"   {label}: {took:.2f} s (conda packages: {counts}; files changed: {len(result.changed)})"
            )
