"""Pack benchmark: collect (cold, cached), write, open + verify, on a generated channel of real archives.

No network and no Docker: a local channel of ``ENVKIT_BENCH_PACK_PACKAGES`` (default 100) noarch
packages plus one package holding ``ENVKIT_BENCH_PACK_MB`` (default 64) MB of incompressible data,
locked with py-rattler; the installer wheel comes from a fake pip (catalog entry pinned to its bytes).
Prints the time of each stage and the pack's size: the cold collect is file:// copying + sha256, the
cached one re-hashes the cache, ``open_pack`` is what ``build --pack`` pays before the engine is asked.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from benchmarks._goals import knob
from envkit._proc import ProcResult
from envkit.catalog import OfflineInstaller, load_catalog
from envkit.lock.conda import RattlerSolver
from envkit.lock.fresh import EnvLocker, ensure_fresh_lock
from envkit.lock.testing import FakePipResolver
from envkit.offline.archive import open_pack
from envkit.offline.collect import collect
from envkit.offline.fetch import UrlFetcher
from envkit.offline.request import pack_request
from envkit.offline.testing import ArchivePackage, make_real_channel, noarch_python, venv_python
from envkit.pack.tarball import write_pack
from envkit.spec.load import image_dir, load_spec

_WHEEL = "py_rattler-0.28.0-cp310-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
_WHEEL_BYTES = b"benchmark stand-in for the installer wheel"

T = TypeVar("T")


def _pip(argv: Sequence[str], **_: object) -> ProcResult:
    """``pip download`` of the one wheel, without pip (the pack's pip runner)."""
    dest = Path(argv[argv.index("--dest") + 1])
    dest.mkdir(parents=True, exist_ok=True)
    (dest / _WHEEL).write_bytes(_WHEEL_BYTES)
    return ProcResult(tuple(argv), 0, "", "")


def _timed(label: str, fn: Callable[[], T]) -> T:
    start = time.perf_counter()
    result = fn()
    print(f"   {label:<34} {time.perf_counter() - start:7.2f} s")
    return result


def main() -> None:
    count = int(knob("ENVKIT_BENCH_PACK_PACKAGES", "100", "5"))
    blob_mb = int(knob("ENVKIT_BENCH_PACK_MB", "64", "1"))
    fake = OfflineInstaller(kind="py-rattler", version="0.28.0", arch="x86_64", filename=_WHEEL,
                            sha256=hashlib.sha256(_WHEEL_BYTES).hexdigest(), source="benchmark")  # fmt: skip
    catalog = replace(load_catalog(), offline_installers=(fake,))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        packages = [venv_python()]
        packages += [
            noarch_python(f"lib{i:04d}", "1.0.0", {f"lib{i:04d}/__init__.py": f"X = {i}\n"})
            for i in range(count)
        ]
        blob = ArchivePackage("blob", "1.0.0", "h0", "noarch", {"share/blob.bin": os.urandom(blob_mb << 20)})
        url = _timed(
            f"make the channel ({count + 2} archives)",
            lambda: make_real_channel(root / "ch", [*packages, blob]),
        )
        (root / "environments").mkdir()
        conda = "".join(f"  - lib{i:04d}\n" for i in range(count)) + "  - blob\n"
        spec = f'name: b\npython: "3.11"\ncuda: cpu\nchannels: [{url}]\nconda:\n{conda}'
        (root / "environments" / "b.yaml").write_text(spec + "base_image: envkit/debian-python:bookworm\n")
        loaded = load_spec(root / "environments" / "b.yaml", catalog)
        locker = EnvLocker(RattlerSolver(), FakePipResolver())
        lock, _ = _timed("lock (py-rattler, file://)", lambda: ensure_fresh_lock(root, loaded, locker))
        request = pack_request(loaded, lock, image_dir(root, "b"))
        cache = root / ".envkit" / "cache"
        _timed(
            "collect, cold (copy + sha256)", lambda: collect(request, cache, UrlFetcher(), pip_runner=_pip)
        )
        collected = _timed(
            "collect, cached (re-hash)", lambda: collect(request, cache, UrlFetcher(), pip_runner=_pip)
        )
        _timed("write the pack", lambda: write_pack(collected, root / "p.tar"))
        print(
            f"   pack: {(root / 'p.tar').stat().st_size / 1e6:.1f} MB, {len(collected.manifest.files)} files"
        )
        _timed("open_pack, first (extract + verify)", lambda: open_pack(root / "p.tar", request, cache))
        _timed("open_pack, again (verify only)", lambda: open_pack(root / "p.tar", request, cache))
