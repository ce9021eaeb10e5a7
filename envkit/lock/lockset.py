"""The lock set of ``images/NAME/`` as one typed value, verified before anyone builds from it.

``envkit lock`` writes every file of the set, then ``lockset.json`` last: the sha256 of each
file, the lock-inputs hash, and one digest over the set. A set is *fresh* only when

- every expected file is there and ``lockset.json`` lists exactly them with their current sha256
  (an interrupted ``envkit lock`` leaves new files beside an old manifest: not fresh; a hand edit
  changes a sha256: not fresh);
- the lock-inputs hash in the manifest and in every header is the spec's (:mod:`envkit.lock.inputs`);
- ``conda-lock.yml`` parses (the one reader, :func:`envkit.lock.lockfile.parse_conda_lock`), covers
  the spec's platforms and every package in it has a well-formed hash;
- the files derived from it (explicit files, ``requirements.lock``, ``environment.yml``) are
  exactly what envkit renders from it, so nothing can be installed that ``conda-lock.yml`` does not
  list, and never without its hash.

:class:`Lock` carries the bytes it was verified from: the build copies those (not a second read
of the disk) and labels the image with :attr:`Lock.sha256`, the digest over the set.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from envkit.errors import LockError
from envkit.lock.lockfile import (
    CONDA_LOCK,
    ENVIRONMENT_YML,
    REQUIREMENTS_LOCK,
    LockContents,
    explicit_name,
    header_sha256,
    parse_conda_lock,
    parse_requirements_lock,
)

__all__ = [
    "GPU_CODE",
    "MANIFEST",
    "Freshness",
    "Lock",
    "LockState",
    "manifest_bytes",
    "set_digest",
    "verify_lock",
]

MANIFEST = "lockset.json"
GPU_CODE = "gpu-code.json"  # the locked wheels' GPU code (envkit.readiness.lockcheck writes and reads it)
MANIFEST_VERSION = 1
Freshness = Literal["fresh", "stale", "missing"]
_HEX64 = re.compile(r"^[0-9a-f]{64}\Z")
_HEX32 = re.compile(r"^[0-9a-f]{32}\Z")
_MAX_MANIFEST = 64 * 1024

# files derived from conda-lock.yml: name -> bytes as envkit renders them from the parsed contents
Renderer = Callable[[LockContents], Mapping[str, bytes]]


@dataclass(frozen=True)
class Lock:
    """A verified lock set: what was solved, the bytes of every file, one digest over them."""

    directory: Path
    inputs_sha256: str
    contents: LockContents
    files: Mapping[str, bytes]  # every file of the set (not the manifest)
    sha256: str  # set_digest(files): the image's io.envkit.lock-sha256
    conda_locks: tuple[str, ...] = ()  # explicit files the image installs from
    pip_lock: str | None = None  # requirements.lock, when it lists packages
    # gpu-code.json beside the set (`envkit lock` writes it from the wheels it read; not in the set's
    # digest): the framework's fatbins, from which render derives the image's NVIDIA_REQUIRE_ARCH
    gpu_code: bytes | None = None

    @property
    def install_files(self) -> dict[str, bytes]:
        """The files the image installs from, for the build context."""
        names = [*self.conda_locks, *([self.pip_lock] if self.pip_lock else [])]
        return {name: self.files[name] for name in names}


@dataclass(frozen=True)
class LockState:
    """Whether ``images/NAME`` holds a verified lock for the spec as it is now."""

    status: Freshness
    reason: str
    files: tuple[str, ...] = ()
    lock: Lock | None = field(default=None, compare=False)

    @property
    def fresh(self) -> bool:
        return self.status == "fresh" and self.lock is not None

    @property
    def conda_locks(self) -> tuple[str, ...]:
        return self.lock.conda_locks if self.lock else ()

    @property
    def pip_lock(self) -> str | None:
        return self.lock.pip_lock if self.lock else None

    @property
    def lock_sha256(self) -> str | None:
        return self.lock.sha256 if self.lock else None


def set_digest(files: Mapping[str, bytes]) -> str:
    """sha256 over the sorted ``name<TAB>sha256`` lines of the set's files."""
    lines = "".join(f"{name}\t{hashlib.sha256(files[name]).hexdigest()}\n" for name in sorted(files))
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def manifest_bytes(files: Mapping[str, bytes], inputs_sha256: str) -> bytes:
    """``lockset.json``: written after every other file of the set."""
    data = {
        "version": MANIFEST_VERSION,
        "generated_by": "envkit lock (do not edit)",
        "lock_inputs_sha256": inputs_sha256,
        "files": {name: hashlib.sha256(files[name]).hexdigest() for name in sorted(files)},
        "sha256": set_digest(files),
    }
    return (json.dumps(data, indent=1, sort_keys=True) + "\n").encode("utf-8")


def verify_lock(
    directory: Path,
    expected: tuple[str, ...],
    inputs_sha256: str,
    platforms: tuple[str, ...],
    files: Mapping[str, bytes],
    manifest: bytes | None,
    render: Renderer,
    pip_options: tuple[str, ...] = (),
) -> LockState:
    """Check a lock set (bytes already read) against the spec's inputs; see the module doc."""
    if CONDA_LOCK not in files:
        return LockState("missing", f"no {CONDA_LOCK} in {directory}", expected)
    for name in expected:
        if name not in files:
            return LockState("stale", f"{name} is missing", expected)
    problem = _check_manifest(manifest, expected, files)
    if problem:
        return LockState("stale", problem, expected)
    for name in expected:
        found = header_sha256(files[name].decode("utf-8", errors="replace"))
        if found is None:
            return LockState(
                "stale", f"{name} has no lock-inputs hash (written by an older envkit: relock once)", expected
            )
        if found != inputs_sha256:
            return LockState(
                "stale", f"{name} was locked from other solver inputs (conda, pip, ...)", expected
            )
    try:
        contents = parse_conda_lock(files[CONDA_LOCK], str(directory / CONDA_LOCK))
    except LockError as e:
        return LockState("stale", e.message, expected)
    problem = (
        _check_contents(contents, platforms, inputs_sha256)
        or _check_requirements(contents, files[REQUIREMENTS_LOCK], pip_options)
        or _check_derived(contents, files, render)
    )
    if problem:
        return LockState("stale", problem, expected)
    subset = {name: files[name] for name in expected}
    uses_conda = any(name.startswith("conda-") and name.endswith(".lock") for name in expected)
    lock = Lock(
        directory=directory,
        inputs_sha256=inputs_sha256,
        contents=contents,
        files=subset,
        sha256=set_digest(subset),
        conda_locks=tuple(explicit_name(p) for p in platforms) if uses_conda else (),
        pip_lock=REQUIREMENTS_LOCK if any(contents.pip.values()) else None,
    )
    return LockState(
        "fresh", "the lock set is complete, verified and of the spec's solver inputs", expected, lock
    )


def _check_manifest(manifest: bytes | None, expected: tuple[str, ...], files: Mapping[str, bytes]) -> str:
    if manifest is None:
        return f"{MANIFEST} is missing (written by an older envkit: relock once; or a lock was interrupted)"
    if len(manifest) > _MAX_MANIFEST:
        return f"{MANIFEST} is too large to be envkit's"
    try:
        data = json.loads(manifest)
    except (ValueError, RecursionError):
        return f"{MANIFEST} is not valid JSON"
    listed = data.get("files") if isinstance(data, dict) else None
    if (
        not isinstance(data, dict)
        or data.get("version") != MANIFEST_VERSION
        or not isinstance(listed, dict)
        or not all(isinstance(v, str) and _HEX64.match(v) for v in listed.values())
    ):
        return f"{MANIFEST} is not an envkit lock manifest (version {MANIFEST_VERSION})"
    if sorted(listed) != sorted(expected):
        return f"{MANIFEST} lists {', '.join(sorted(listed)) or 'no files'}, not the spec's lock files"
    for name in sorted(expected):
        if hashlib.sha256(files[name]).hexdigest() != listed[name]:
            return f"{name} changed after it was locked (hand-edited, or `envkit lock` was interrupted)"
    subset = {name: files[name] for name in expected}
    if data.get("sha256") != set_digest(subset):
        return f"{MANIFEST}: the digest over the set does not match its files"
    return ""


def _check_contents(contents: LockContents, platforms: tuple[str, ...], inputs_sha256: str) -> str:
    if sorted(contents.platforms) != sorted(platforms):
        locked = ", ".join(contents.platforms) or "no platform"
        return f"{CONDA_LOCK} locks {locked}, the spec {', '.join(platforms)}"
    if any(contents.content_hash.get(p) != inputs_sha256 for p in platforms):
        return f"{CONDA_LOCK}: metadata.content_hash is not the spec's lock-inputs hash"
    for platform in platforms:
        for c in contents.conda.get(platform, ()):
            # the explicit files carry md5 (what every conda reads): a package without one would
            # be installed unchecked
            well_formed = _HEX32.match(c.md5) and (not c.sha256 or _HEX64.match(c.sha256))
            if not well_formed or "://" not in c.url:
                return f"{CONDA_LOCK}: {c.name} {c.version} ({platform}) has no well-formed md5/sha256 or url"
        for p in contents.pip.get(platform, ()):
            if not p.hashes or not all(_HEX64.match(h) for h in p.hashes):
                return f"{CONDA_LOCK}: pip {p.name} {p.version} ({platform}) has no well-formed sha256"
    return ""


def _check_requirements(contents: LockContents, data: bytes, pip_options: tuple[str, ...]) -> str:
    """requirements.lock pins exactly conda-lock.yml's pip packages, each with its hash."""
    try:
        options, pins = parse_requirements_lock(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        return f"{REQUIREMENTS_LOCK} is truncated or edited: {e}"
    packages = [p for platform in sorted(contents.pip) for p in contents.pip[platform]]
    locked = {(p.name, p.version) for p in packages}
    if sorted(pins) != sorted(locked):
        return f"{REQUIREMENTS_LOCK} does not pin the pip packages of {CONDA_LOCK} (truncated or edited)"
    for p in packages:
        if p.sha256 not in pins[(p.name, p.version)]:
            return f"{REQUIREMENTS_LOCK}: {p.name}=={p.version} lacks the hash {CONDA_LOCK} records"
    if locked and options != list(pip_options):
        return f"{REQUIREMENTS_LOCK}: its index options are not the spec's"
    return ""


def _check_derived(contents: LockContents, files: Mapping[str, bytes], render: Renderer) -> str:
    for name, data in sorted(render(contents).items()):
        if name != REQUIREMENTS_LOCK and name in files and files[name] != data:
            what = "is truncated or edited" if name != ENVIRONMENT_YML else "was edited"
            return f"{name} {what}: it does not match {CONDA_LOCK}"
    return ""
