"""Fleet view: diff 1,000 synthetic inventories of 400 packages each; print time and peak memory."""

from __future__ import annotations

import random
import time
import tracemalloc

from benchmarks._goals import scaled
from envkit.drift import diff_inventories
from envkit.inventory import parse_inventory
from envkit.inventory.models import Inventory, Package

HOSTS = scaled(1000, 20)
PACKAGES = 400


def fleet(seed: int = 0) -> list[Inventory]:
    rng = random.Random(seed)
    names = [f"pkg{i:03d}" for i in range(PACKAGES - 3)] + ["numpy", "torch", "torchvision"]
    base = {name: f"1.{rng.randrange(30)}.{rng.randrange(10)}" for name in names}
    base |= {"numpy": "1.26.4", "torch": "2.4.1+cu121", "torchvision": "0.19.1+cu121"}
    hosts = []
    for h in range(HOSTS):
        versions = dict(base)
        if rng.random() < 0.05:
            for name in rng.sample(names[:-3], 3):
                versions[name] = "2.0.0"
        if h == 7:
            versions["numpy"] = "1.21.6"
        pkgs = tuple(sorted(Package(n, n, v, "pip") for n, v in versions.items()))
        hosts.append(Inventory(f"host-{h:04d}", f"host-{h:04d}.txt", "pip-freeze", pkgs))
    return hosts


def main() -> None:
    inventories = fleet()
    start, cpu = time.perf_counter(), time.process_time()
    diff_inventories(inventories)
    untraced, cpu = time.perf_counter() - start, time.process_time() - cpu
    tracemalloc.start()
    start = time.perf_counter()
    report = diff_inventories(inventories)
    elapsed = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    numpy = next(f for f in report.findings if f.package == "numpy" and f.kind == "version")
    print(f"   fleet diff: {HOSTS} inventories x {PACKAGES} packages -> {len(report.findings)} findings")
    print(
        f"   time {untraced:.2f} s wall, {cpu:.2f} s CPU ({elapsed:.2f} s traced), "
        f"peak traced memory {peak / 2**20:.1f} MiB"
    )
    print(f"   {numpy.message[:110]}")
    texts = ["".join(f"{p.name}=={p.version}\n" for p in inv.packages) for inv in fleet(seed=1)]
    start, cpu = time.perf_counter(), time.process_time()
    read = [parse_inventory(t, path=f"host-{i:04d}.txt", label=f"host-{i:04d}") for i, t in enumerate(texts)]
    parsed, parsed_cpu = time.perf_counter() - start, time.process_time() - cpu
    diff_inventories(read)
    total, total_cpu = time.perf_counter() - start, time.process_time() - cpu
    print(
        f"   read {HOSTS} pip freezes of {PACKAGES} lines: {parsed:.2f} s wall, {parsed_cpu:.2f} s CPU; "
        f"read + diff {total:.2f} s wall, {total_cpu:.2f} s CPU"
    )


if __name__ == "__main__":
    main()
