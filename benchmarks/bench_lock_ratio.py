"""The lock against its engine's own speed: `envkit lock` / a bare py-rattler solve of the same specs.

bench_lock's spec and channel (50,047 records over linux-64, linux-aarch64 and noarch, plus a
wheel mirror). Two fresh processes: the first locks (``lock_environment``: both platforms' conda
solves, one per platform, the pip part with uv beside them, the files) and records the conda
requests envkit made; the second solves exactly those requests with py-rattler alone (one
``Gateway``, ``rattler.solve`` per platform with the same virtual packages and CUDA
constraint): the floor. Goal: ratio <= 1.2. Both run ``ROUNDS`` times, alternately; the minimum
wall time of each is kept. The lock's CPU time includes uv's (a child process).
"""

from __future__ import annotations

import asyncio
import json
import resource
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._goals import record, run_case, scaled
from benchmarks.bench_lock import PLATFORMS, write_project

ROUNDS = scaled(3, 1)


def lock_case(root: str, requests_out: str) -> tuple[float, float, dict[str, Any]]:
    from envkit.lock import lock_environment
    from envkit.lock.conda import RattlerSolver
    from envkit.lock.lockfile import _import_conda_lock
    from envkit.lock.pip import UvResolver
    from envkit.lock.solver import CondaRequest, CondaSolution
    from envkit.spec.load import load_spec

    seen: list[dict[str, Any]] = []

    class Recording(RattlerSolver):
        def solve(self, request: CondaRequest) -> CondaSolution:
            seen.append(
                {
                    "specs": list(request.specs),
                    "channels": list(request.channels),
                    "platform": request.platform,
                    "virtual": [[v.name, v.version, v.build] for v in request.virtual_packages],
                    "cuda": request.cuda,
                }
            )
            return super().solve(request)

        async def _run(self, *args: Any, **kw: Any) -> list[Any]:
            solves.append(1)
            return await super()._run(*args, **kw)

    solves: list[int] = []

    loaded = load_spec(Path(root) / "environments" / "bench.yaml")
    _import_conda_lock()  # its writer's import (about 1 s), like `import rattler` for the bare solve
    start, cpu, uv = time.perf_counter(), time.process_time(), _children_cpu()
    result = lock_environment(loaded, Path(root) / "images" / "bench", Recording(), UvResolver())
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu + _children_cpu() - uv
    Path(requests_out).write_text(json.dumps(seen), "utf-8")
    counts = {p: len(result.contents.conda[p]) for p in PLATFORMS}
    return wall, cpu, {"conda": counts, "solves": len(solves)}


def _children_cpu() -> float:
    """CPU seconds of finished child processes (uv resolves the pip part in one)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def bare_case(requests_in: str) -> tuple[float, float, dict[str, Any]]:
    import rattler

    requests = json.loads(Path(requests_in).read_text("utf-8"))

    async def solve_all() -> dict[str, int]:
        gateway = rattler.Gateway()
        counts = {}
        for req in requests:
            records = await rattler.solve(
                [rattler.Channel(c) for c in req["channels"]],
                [rattler.MatchSpec(s) for s in req["specs"]],
                gateway=gateway,
                platforms=[req["platform"], "noarch"],
                virtual_packages=[
                    rattler.GenericVirtualPackage(
                        rattler.PackageName(n), rattler.Version(v), rattler.BuildString(b)
                    )
                    for n, v, b in req["virtual"]
                ],
                constraints=[f"cuda-version {req['cuda']}.*"] if req["cuda"] else None,
                channel_relations="disabled",
            )
            counts[req["platform"]] = len(records)
        return counts

    start, cpu = time.perf_counter(), time.process_time()
    counts = asyncio.run(solve_all())
    return time.perf_counter() - start, time.process_time() - cpu, {"conda": counts}


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="envkit-bench-") as tmp:
        root = Path(tmp)
        write_project(root)
        requests = root / "requests.json"
        locks, bares = [], []
        for _ in range(ROUNDS):  # alternating, so both see the same machine load; the minimum of each
            shutil.rmtree(root / "images", ignore_errors=True)
            locks.append(run_case("benchmarks.bench_lock_ratio:lock_case", str(root), str(requests)))
            bares.append(run_case("benchmarks.bench_lock_ratio:bare_case", str(requests)))
        lock, bare = min(locks, key=lambda m: m.wall), min(bares, key=lambda m: m.wall)
    ratio = lock.wall / bare.wall
    solves = lock.info["solves"]
    print(f"   envkit lock (first lock, {lock.info['conda']}, {solves} rattler solves): {lock.line()}")
    print(f"   bare py-rattler solve of the same requests ({bare.info['conda']}, 2 solves): {bare.line()}")
    print(f"   ratio {ratio:.2f} wall, {lock.cpu / bare.cpu:.2f} CPU")
    detail = f"lock {lock.wall:.2f} s, bare solve {bare.wall:.2f} s; CPU ratio {lock.cpu / bare.cpu:.2f}"
    record("lock_ratio", ratio, detail)
