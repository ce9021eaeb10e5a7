"""Layers that follow the lock (issue 47): a one-pin rebuild, its new layer bytes, variants' sharing.

Needs a Docker engine and ``envkit/debian-python:bookworm`` (``envkit base-image``); the locks and
wheels come from PyPI. In a temporary project, an offline venv spec of the flagship's shape is built:
``cuda: "11.8"``, ``cuda_runtime: pypi`` (the catalog's 11 NVIDIA runtime wheels, ~2.3 GB, the
``cuda`` layer), numpy (``native``), six and idna (``python``) -- the flagship without paddle
(``ENVKIT_BENCH_LAYERS_CUDA=cpu``, and the smoke run: the same without the CUDA wheels). Then:

- one pure-Python pin changed (idna 3.7 -> 3.8), relocked and rebuilt: wall time, the context bytes
  sent, where the seconds went (normalizing's save / rewrite / load), and the bytes of the layers the
  new image has and the old one had not (normalized, uncompressed);
- the cu12.4 variant of the same spec (another CUDA layer, the same numpy, six, idna) built beside
  it: the layers and bytes it shares with the cu11.8 image;
- the no-op build of the same spec in a fresh copy of the project (no ``.envkit``): wall time;
- the free disk of the engine's root file system before and at the lowest point of the rebuild.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks._goals import knob, record
from envkit.build.builder import CACHE_TAG, BuildOptions, BuildResult
from envkit.catalog import load_catalog
from envkit.cli import Services
from envkit.errors import EnvkitError
from envkit.spec.load import load_spec

BASE = "envkit/debian-python:bookworm"
SPEC = """name: {name}
python: "3.11"
cuda: "{cuda}"
installer: venv
{runtime}offline: true
pip:
  - numpy=={numpy}
  - six==1.16.0
  - idna=={idna}
"""


CUDA_ENV = "ENVKIT_BENCH_LAYERS_CUDA"  # the first image's CUDA: 11.8 (its variant: 12.4), or cpu


def _write(root: Path, name: str, cuda: str, numpy: str = "1.26.4", idna: str = "3.7") -> Path:
    path = root / "environments" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    runtime = f"base_image: {BASE}\n" if cuda == "cpu" else "cuda_runtime: pypi\n"
    path.write_text(SPEC.format(name=name, cuda=cuda, runtime=runtime, numpy=numpy, idna=idna))
    return path


class _DiskWatch:
    """The lowest free space of ``path``'s file system while a build runs (sampled every 0.2 s)."""

    def __init__(self, path: str) -> None:
        self.path, self.lowest, self._stop = path, shutil.disk_usage(path).free, threading.Event()
        self.before = self.lowest
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.lowest = min(self.lowest, shutil.disk_usage(self.path).free)

    def __enter__(self) -> _DiskWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _sizes(result: BuildResult) -> dict[str, int]:
    """diff_id -> normalized size of the image's own layers."""
    normalized = result.normalized or {}
    ids = list(normalized.get("diff_ids") or [])  # type: ignore[call-overload]
    sizes = list(normalized.get("layer_sizes") or [])  # type: ignore[call-overload]
    return dict(zip(ids[len(ids) - len(sizes) :], sizes, strict=True))


def _timed(build: Callable[[], BuildResult]) -> tuple[BuildResult, float]:
    start = time.perf_counter()
    result = build()
    return result, time.perf_counter() - start


def main() -> None:
    try:
        services = Services()
        engine = services.engine()
    except EnvkitError as e:
        print(f"   skipped: {e.message}")
        return
    if engine.inspect(BASE) is None:
        print(f"   skipped: {BASE} is missing (`envkit base-image` makes it)")
        return
    catalog, options = load_catalog(), BuildOptions(offline=True)
    cuda = knob(CUDA_ENV, "11.8", "cpu")
    docker_root = "/var/lib/docker" if Path("/var/lib/docker").is_dir() else "/"
    made: list[str] = []
    with tempfile.TemporaryDirectory(prefix="envkit-bench-layers-") as tmp:
        root = Path(tmp) / "project"
        builder = services.builder(root)
        spec = _write(root, "bench-layers", cuda)
        first, took = _timed(lambda: builder.build(load_spec(spec, catalog), options))
        made.append(first.tag)
        print(
            f"   first build (cuda {cuda}): {took:.1f} s, {first.size / 1e9:.2f} GB, "
            f"{len(_sizes(first))} own layers, context {first.context_bytes / 1e6:.0f} MB"
        )
        with _DiskWatch(docker_root) as disk:
            path = _write(root, "bench-layers", cuda, idna="3.8")
            second, took = _timed(lambda: builder.build(load_spec(path, catalog), options))
        made.append(second.tag)
        before = engine.inspect(first.tag)  # an up-to-date first build has no normalize figures
        old, new = dict.fromkeys(before.diff_ids if before else (), 0), _sizes(second)
        fresh = sum(size for layer, size in new.items() if layer not in old)
        kept = sum(size for layer, size in new.items() if layer in old)
        norm = second.normalized or {}
        record("layers_one_pin_s", took)
        record("layers_one_pin_new_mb", fresh / 1e6)
        print(f"   one pure-Python pin (idna 3.7 -> 3.8): rebuilt in {took:.1f} s (goal <= 60 s)")
        print(
            f"   where: context sent {second.context_bytes / 1e6:.1f} MB; normalizing "
            f"{norm.get('seconds')} s {norm.get('stages')}, "
            f"{norm.get('layers_reused')} of {norm.get('own_layers')} layers known, "
            f"{int(norm.get('bytes_loaded') or 0) / 1e6:.1f} MB loaded"  # type: ignore[call-overload]
        )
        print(
            f"   new layer bytes {fresh / 1e6:.1f} MB (goal <= 100 MB), unchanged layers {kept / 1e6:.1f} MB"
        )
        print(
            f"   free disk on {docker_root}: {disk.before / 1e9:.1f} GB before, lowest "
            f"{disk.lowest / 1e9:.1f} GB (the rebuild needed {(disk.before - disk.lowest) / 1e9:.2f} GB "
            "at its peak)"
        )
        if cuda != "cpu":  # the smoke run (CI): the pin's rebuild and the fresh clone only
            variant = load_spec(_write(root, "bench-layers-v2", "12.4", idna="3.8"), catalog)
            other, took = _timed(lambda: builder.build(variant, options))
            made.append(other.tag)
            theirs = _sizes(other)
            shared = {layer: size for layer, size in new.items() if layer in theirs}
            print(
                f"   cu12.4 variant ({took:.1f} s, {other.size / 1e9:.2f} GB): {len(shared)} of {len(new)} "
                f"own layers shared with the cu11.8 image, {sum(shared.values()) / 1e6:.1f} MB of "
                f"{sum(new.values()) / 1e6:.1f} MB (the rest: the CUDA layer and the layers it moves)"
            )
        clone = Path(tmp) / "clone"
        shutil.copytree(root, clone, ignore=shutil.ignore_patterns(".envkit"))
        start = time.perf_counter()  # the whole command, as CI runs it in a fresh checkout
        done = subprocess.run(
            [sys.executable, "-m", "envkit", "build", "bench-layers", "--json"],
            env={**os.environ, "ENVKIT_ROOT": str(clone)},
            capture_output=True,
            text=True,
            check=False,
        )
        took = time.perf_counter() - start
        record("layers_noop_fresh_clone_s", took)
        status = json.loads(done.stdout)["result"]["status"] if done.returncode == 0 else done.stderr[-300:]
        print(
            f"   no-op `envkit build` in a fresh clone (the process): {status} in {took:.2f} s (goal <= 3 s)"
        )
    for tag in made:
        info = engine.inspect(tag)
        if info is not None and tag.startswith("envkit/bench-layers"):
            for name in info.tags:
                engine.remove(name)  # only the benchmark's own images
    for name in ("bench-layers", "bench-layers-v2"):
        engine.remove(f"envkit/{name}:{CACHE_TAG}")  # the engine's originals kept as the build cache
        engine.prune_builder_images(name)  # and their layer stages (the build cache)
