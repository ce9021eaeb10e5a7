"""Build benchmark: no-op rebuild time and image sizes (needs a Docker engine and the local test base image).

Builds a tiny offline venv image (packaging, six) in a temporary project, then
times ``Builder.build`` when nothing changed (the "up to date" path), and
prints the size of every envkit image present and the disk the removal of the
builder stage's untagged image saved per build. The first build locks with uv (PyPI).
``ENVKIT_BENCH_TORCH=1`` also builds the CPU torch image; the lock then needs torch and its
dependencies in a wheel directory given as ``$ENVKIT_FIND_LINKS`` (used as the spec's PyPI mirror).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks._goals import scaled
from envkit.build.builder import Builder, BuildOptions
from envkit.catalog import load_catalog
from envkit.cli import Services
from envkit.errors import EnvkitError
from envkit.spec.load import load_spec

BASE = "envkit/debian-python:bookworm"


def _spec(root: Path, name: str, pins: list[str], extra: str = "") -> Path:
    folder = root / "environments"
    folder.mkdir(parents=True, exist_ok=True)
    body = "".join(f"  - {p}\n" for p in pins)
    path = folder / f"{name}.yaml"
    path.write_text(
        f'name: {name}\npython: "3.11"\ncuda: cpu\ninstaller: venv\nbase_image: {BASE}\n{extra}pip:\n{body}'
    )
    return path


def _torch_extra() -> str:
    wheels = Path(os.environ.get("ENVKIT_FIND_LINKS", "/opt/wheels")).resolve()
    return f'frameworks:\n  torch: "2.13.0"\nmirrors:\n  pypi: {wheels.as_uri()}\n'


def main() -> None:
    try:
        from envkit.engine.docker_api import DockerEngine

        engine = DockerEngine()
    except EnvkitError as e:
        print(f"   skipped: {e.message}")
        return
    if engine.inspect(BASE) is None:
        print(f"   skipped: {BASE} is missing (run the docker integration tests once to create it)")
        return
    catalog = load_catalog()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        builder = Builder(engine, root, locker=Services().locker())
        options = BuildOptions(offline=True, find_links=("/opt/wheels",))
        loaded = load_spec(_spec(root, "bench-tiny", ["packaging==24.1", "six==1.16.0"]), catalog)
        first = builder.build(loaded, options)
        print(f"   bench-tiny first build: {first.status} in {first.seconds:.1f} s (lock: {first.lock})")
        print(f"   builder-stage image removed after the build: {first.pruned_bytes / 1e6:.0f} MB saved")
        times = []
        for _ in range(scaled(5, 1)):
            start = time.perf_counter()
            result = builder.build(
                load_spec(_spec(root, "bench-tiny", ["packaging==24.1", "six==1.16.0"]), catalog), options
            )
            times.append(time.perf_counter() - start)
            assert result.status == "up-to-date"
        median, worst = statistics.median(times) * 1000, max(times) * 1000
        print(f"   no-op rebuild (up to date): median {median:.0f} ms, max {worst:.0f} ms")
        if os.environ.get("ENVKIT_BENCH_TORCH"):
            torch = load_spec(_spec(root, "bench-torch", ["numpy>=1.26,<3"], _torch_extra()), catalog)
            built = builder.build(torch, options)
            print(f"   bench-torch build: {built.status} in {built.seconds:.1f} s")
            print(f"   bench-torch builder-stage image removed: {built.pruned_bytes / 1e6:.0f} MB saved")
    print(f"   {BASE}: {engine.inspect(BASE).size / 1e6:.0f} MB")  # type: ignore[union-attr]
    for info in sorted(engine.images("io.envkit.name"), key=lambda i: i.tags):
        print(f"   {', '.join(info.tags) or info.id[:19]}: {info.size / 1e6:.0f} MB")
        for tag in info.tags:
            if tag.startswith("envkit/bench-"):
                engine.remove(tag)  # only the benchmark's own images
