"""Fleet diff at 10,000 hosts: read 10,000 pip freezes of 400 lines from disk and diff them (goal < 10 s).

The template is real: the ``name==version`` lines of the pip freezes in ../shared/inventories
(EmbodMocap, GLANCE, moma-ppo, nix flake), the first 400 projects by name,
each at the version its first file pins, with numpy 1.26.4 and torch 2.4.1+cu121. Planted drift:
5% of the hosts with 3 packages at 99.0.0, host 7 with numpy 1.21.6. The case reads the files
with ``read_inventory`` (format detection included) and runs ``diff_inventories``, in a fresh
process. Printed too: the same fleet with a comment line naming the host in each file, so that no
two texts are the same (the reader's memo of identical listings never hits).
``ENVKIT_BENCH_HOSTS=N`` changes the count.
"""

from __future__ import annotations

import os
import random
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._goals import knob, record, run_case

PACKAGES = 400
SHARED = Path(os.environ.get("ENVKIT_SHARED", Path(__file__).resolve().parents[1].parent / "shared"))
_PIN = re.compile(r"^([A-Za-z0-9._-]+)==([^ ;@]+)$")


def template() -> dict[str, str]:
    """400 real ``name -> version`` pins from the shared pip freezes."""
    pins: dict[str, str] = {}
    for path in sorted((SHARED / "inventories").glob("pipfreeze-*.txt")):
        for line in path.read_text("utf-8").splitlines():
            m = _PIN.match(line.strip())
            name = re.sub(r"[-_.]+", "-", m.group(1)).lower() if m else ""
            if m and name not in pins:  # PEP 503 names: one row per project, as in a real freeze
                pins[name] = m.group(2)
    pins |= {"numpy": "1.26.4", "torch": "2.4.1+cu121"}
    keep = [n for n in sorted(pins) if n not in ("numpy", "torch")][: PACKAGES - 2]
    return {n: pins[n] for n in sorted([*keep, "numpy", "torch"])}


def write_fleet(folder: Path, hosts: int, seed: int = 0, *, distinct: bool = False) -> int:
    rng = random.Random(seed)
    base = template()
    names = [n for n in base if n not in ("numpy", "torch")]
    folder.mkdir(parents=True)
    for h in range(hosts):
        versions = dict(base)
        if rng.random() < 0.05:
            for name in rng.sample(names, 3):
                versions[name] = "99.0.0"
        if h == 7:
            versions["numpy"] = "1.21.6"
        text = (f"# host-{h:05d}\n" if distinct else "") + "".join(f"{n}=={v}\n" for n, v in versions.items())
        (folder / f"host-{h:05d}.txt").write_text(text, "utf-8")
    return len(base)


def case(folder: str) -> tuple[float, float, dict[str, Any]]:
    from envkit.drift import diff_inventories
    from envkit.inventory import read_inventory

    paths = sorted(Path(folder).iterdir())
    start, cpu = time.perf_counter(), time.process_time()
    inventories = [read_inventory(p) for p in paths]
    read_wall, read_cpu = time.perf_counter() - start, time.process_time() - cpu
    report = diff_inventories(inventories)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    numpy = next(f.message for f in report.findings if f.package == "numpy" and f.kind == "version")
    info = {"findings": len(report.findings), "read_wall": read_wall, "read_cpu": read_cpu, "numpy": numpy}
    return wall, cpu, info


def main() -> None:
    hosts = int(knob("ENVKIT_BENCH_HOSTS", "10000", "20"))
    if not (SHARED / "inventories").is_dir():
        print(f"   skipped: {SHARED / 'inventories'} is absent")
        return
    with tempfile.TemporaryDirectory(prefix="envkit-bench-") as tmp:
        n = write_fleet(Path(tmp) / "fleet", hosts)
        m = run_case("benchmarks.bench_diff10k:case", str(Path(tmp) / "fleet"))
        write_fleet(Path(tmp) / "distinct", hosts, distinct=True)
        worst = run_case("benchmarks.bench_diff10k:case", str(Path(tmp) / "distinct"))
    i = m.info
    print(f"   {hosts} pip freezes x {n} packages -> {i['findings']} findings")
    print(f"   read {i['read_wall']:.2f} s wall ({i['read_cpu']:.2f} s CPU); read + diff: {m.line()}")
    print(f"   {i['numpy'][:110]}")
    w = worst.info
    print("   every file distinct (a comment line naming the host: no listing read twice):")
    print(f"   read {w['read_wall']:.2f} s wall ({w['read_cpu']:.2f} s CPU); read + diff: {worst.line()}")
    if hosts == 10_000:
        record("diff", m.wall, f"{m.cpu:.2f} s CPU, read {i['read_wall']:.2f} s, {m.rss_mib:.0f} MiB")
