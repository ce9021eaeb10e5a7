"""Audit a 400-package inventory against the full advisory directory: time and peak memory.

Uses ../shared/advisory-db (or $ENVKIT_SHARED/advisory-db). The inventory is the real
2023 paris env export, padded with other packages named in the database (version 1.0)
to 400 PyPI packages, so most lookups load a package folder.
"""

from __future__ import annotations

import os
import resource
import time
import tracemalloc
from datetime import date
from pathlib import Path

from benchmarks._goals import scaled
from envkit.audit.osv_dir import OsvDirService
from envkit.audit.policy import PolicyContext
from envkit.audit.report import render
from envkit.audit.targets import AuditRequest, _report
from envkit.catalog import load_catalog
from envkit.inventory import read_inventory
from envkit.inventory.models import Inventory, Package

N = scaled(400, 40)


def main() -> None:
    shared = Path(os.environ.get("ENVKIT_SHARED", Path(__file__).resolve().parents[1].parent / "shared"))
    db = shared / "advisory-db"
    if not db.is_dir():
        print(f"   skipped: {db} is absent")
        return
    base = read_inventory(shared / "inventories" / "envexport-paris-444fb8e.yml")
    packages = [p for p in base.packages if not p.project.startswith("conda:")]
    names = {p.project for p in packages}
    for folder in sorted((db / "vulns").iterdir()):
        if len(packages) >= N:
            break
        if folder.name.lower() not in names:
            packages.append(Package(folder.name.lower(), folder.name.lower(), "1.0", "pip"))
            names.add(folder.name.lower())
    inventory = Inventory("bench", "bench.txt", "pip-freeze", tuple(packages[:N]))
    catalog = load_catalog()

    def audit() -> tuple[OsvDirService, int]:
        service = OsvDirService(db)
        request = AuditRequest(service=service, catalog=catalog, today=date.today())
        ctx = PolicyContext(catalog=catalog, today=request.today, inventory=inventory)
        report = _report("bench", "inventory", inventory, ctx, request, None)
        render(report, "sarif", "low")
        return service, len(report.findings)

    start = time.perf_counter()
    service, findings = audit()  # timed alone: tracemalloc slows Python several times over
    elapsed = time.perf_counter() - start
    tracemalloc.start()
    audit()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    loaded = sum(len(v) for v in service._records.values())
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"   {len(inventory.packages)} packages looked up, {loaded} advisory records parsed")
    print(f"   {findings} findings; audit + SARIF: {elapsed:.2f} s (goal < 2 s, issue 26)")
    print(f"   peak Python allocations {peak / 2**20:.1f} MiB; process max RSS {rss:.0f} MiB")
