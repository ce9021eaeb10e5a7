"""`envkit audit` against the full advisory database: cold and warm, and 100 image snapshots.

Uses ../shared/advisory-db (or $ENVKIT_SHARED/advisory-db), the real PyPA snapshot. The inventory
is bench_audit's: the real 2023 paris env export's PyPI packages, padded with other packages named
in the database (version 1.0) to 400. Cases, each in a fresh process with an empty cache
($XDG_CACHE_HOME in a temporary folder) at the start:

* the audit as bench_audit times it (the service, ``audit_file`` of the inventory, SARIF):
  the first run (it builds the advisory index), then warm runs (the minimum of 3 is the figure;
  goal < 0.5 s); the whole command line (``envkit audit INVENTORY --db DB --format sarif -o OUT``:
  the interpreter and the imports too) is printed beside it;
* 100 ``envkit snapshot``-format files of 400 packages (each with 20 packages at other versions),
  audited in one process with one service: ``audit_file`` each (goal < 5 s, warm index); and
  with a SARIF report rendered for each (printed: 400 findings each, Python's indenting encoder).
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

from benchmarks._goals import ROOT, record, run_case, run_cli, scaled
from benchmarks.bench_audit import N

SNAPSHOTS = scaled(100, 3)
SHARED = Path(os.environ.get("ENVKIT_SHARED", Path(__file__).resolve().parents[1].parent / "shared"))


def packages(db: Path) -> list[tuple[str, str]]:
    """bench_audit's 400 (name, version) pairs."""
    from envkit.inventory import read_inventory

    base = read_inventory(SHARED / "inventories" / "envexport-paris-444fb8e.yml")
    pairs = [(p.project, p.version) for p in base.packages if not p.project.startswith("conda:")]
    names = {n for n, _ in pairs}
    for folder in sorted((db / "vulns").iterdir()):
        if len(pairs) >= N:
            break
        if folder.is_dir() and folder.name.lower() not in names:
            pairs.append((folder.name.lower(), "1.0"))
            names.add(folder.name.lower())
    return pairs[:N]


def write_snapshots(folder: Path, pairs: list[tuple[str, str]], seed: int = 0) -> None:
    from envkit.inventory.snapshot import take_snapshot, write_snapshot
    from envkit.inventory.testing import FakeSource

    rng = random.Random(seed)
    other = ["0.1", "1.0", "2.0", "3.2.1", "10.0"]
    folder.mkdir(parents=True)
    for i in range(SNAPSHOTS):
        versions = dict(pairs)
        for name in rng.sample(sorted(versions), 20):
            versions[name] = rng.choice(other)
        source = FakeSource(hostname=f"image-{i:03d}", dists=sorted(versions.items()))
        write_snapshot(take_snapshot(source), folder / f"image-{i:03d}.json")


def audit_case(db: str, inventory: str) -> tuple[float, float, dict[str, Any]]:
    return images_case(db, inventory, "sarif")


def images_case(db: str, folder: str, sarif: str = "") -> tuple[float, float, dict[str, Any]]:
    from envkit.audit.report import render
    from envkit.audit.targets import AuditRequest, audit_file
    from envkit.catalog import load_catalog
    from envkit.cli._services import Services

    given = Path(folder)
    paths = sorted(given.glob("*.json")) if given.is_dir() else [given]
    start, cpu = time.perf_counter(), time.process_time()
    request = AuditRequest(service=Services().vuln_service(Path(db), False), catalog=load_catalog(),
                           today=date(2026, 12, 1))  # fmt: skip
    findings = 0
    for path in paths:
        report = audit_file(path, request)
        if sarif:
            render(report, "sarif", "low")
        findings += len(report.findings)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return wall, cpu, {"findings": findings, "files": len(paths)}


def main() -> None:
    db = SHARED / "advisory-db"
    if not db.is_dir():
        print(f"   skipped: {db} is absent")
        return
    pairs = packages(db)
    with tempfile.TemporaryDirectory(prefix="envkit-bench-") as tmp:
        root = Path(tmp)
        inventory = root / "inventory.txt"
        inventory.write_text("".join(f"{n}=={v}\n" for n, v in pairs), "utf-8")
        cache = {"ENVKIT_ADVISORY_INDEX": str(root / "index")}
        audit = ("benchmarks.bench_audit_fleet:audit_case", str(db), str(inventory))
        cold = run_case(*audit, env=cache)
        warm = min((run_case(*audit, env=cache) for _ in range(3)), key=lambda m: m.wall)
        print(f"   audit + SARIF of {len(pairs)} packages, first run: {cold.line()}")
        print(f"   warm (min of 3): {warm.line()}")
        extra = f"{cold.wall - warm.wall:.2f} s wall, {cold.cpu - warm.cpu:.2f} s CPU"
        print(f"   the first run's indexing cost: {extra}")
        env = {**os.environ, "PYTHONPATH": str(ROOT), "ENVKIT_ADVISORY_INDEX": str(root / "cli-index")}
        argv = [sys.executable, "-m", "envkit", "audit", str(inventory), "--db", str(db),
                "--format", "sarif", "-o", str(root / "out.sarif")]  # fmt: skip
        cli_cold = run_cli(argv, env, ok=(0, 1))
        cli = min((run_cli(argv, env, ok=(0, 1)) for _ in range(3)), key=lambda m: m.wall)
        print(f"   the command line: first run {cli_cold.line()}")
        print(f"   the command line, warm (min of 3): {cli.line()}")
        write_snapshots(root / "images", pairs)
        case = ("benchmarks.bench_audit_fleet:images_case", str(db), str(root / "images"))
        images = run_case(*case, env=cache)
        what = f"{images.info['files']} snapshots x {len(pairs)} packages"
        print(f"   {what}, audit each: {images.line()}")
        with_sarif = run_case(*case, "sarif", env=cache)
        print(f"   the same with a SARIF report each: {with_sarif.line()}")
        print(f"   {images.info['findings']} findings in all")
    detail = (
        f"{warm.cpu:.2f} s CPU, first run {cold.wall:.2f} s; CLI warm {cli.wall:.2f} s, {cli.cpu:.2f} s CPU"
    )
    record("audit_warm", warm.wall, detail)
    record("audit_images", images.wall, f"{images.cpu:.2f} s CPU, {images.rss_mib:.0f} MiB")
