"""The lock files in ``images/NAME/``: conda-lock.yml v1, explicit files, requirements.lock, environment.yml.

Pure functions from values to bytes; every file starts with the spec-hash header, is sorted and
has no timestamps, so relocking an unchanged spec gives identical bytes.
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import ValidationError

from envkit._yaml import YamlProblem, load_bounded_fast
from envkit.errors import LockError
from envkit.lock.solver import CondaPackage, PipPackage
from envkit.spec.models import ARCHES

if TYPE_CHECKING:
    from conda_lock.lockfile.v2prelim.models import LockedDependency, Lockfile

__all__ = [
    "CONDA_LOCK",
    "ENVIRONMENT_YML",
    "EXPLICIT_HASH",
    "REQUIREMENTS_LOCK",
    "LockContents",
    "conda_lock_yml",
    "contents_from_data",
    "explicit_file",
    "explicit_name",
    "header_sha256",
    "parse_conda_lock",
    "parse_conda_lock_file",
    "parse_requirements_lock",
    "pinned_environment_yml",
    "read_conda_lock",
    "requirements_lock",
]


@functools.cache
def _import_conda_lock() -> None:
    """Import conda-lock on first use: it takes about a second, and an audit never needs it."""
    with warnings.catch_warnings():  # conda-lock's vendored conda warns about itself on import
        conda_root = os.environ.get("CONDA_ROOT")  # and sets it: restored below
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        import conda_lock.lockfile  # noqa: F401
    # conda-lock's vendored conda sets CONDA_ROOT=sys.prefix (envkit's venv) in os.environ on import:
    # every conda envkit then starts (`snapshot` runs `conda list --json`) would look for its root
    # .condarc there, not in its own install (seen with real conda: 24.3.0 then asks for libmamba).
    if conda_root is None:
        os.environ.pop("CONDA_ROOT", None)
    else:
        os.environ["CONDA_ROOT"] = conda_root


def parse_conda_lock_file(path: Path) -> Lockfile:
    """conda-lock's own reader of ``path``."""
    _import_conda_lock()
    from conda_lock.lockfile import parse_conda_lock_file as parse

    return parse(path)


CONDA_LOCK = "conda-lock.yml"
REQUIREMENTS_LOCK = "requirements.lock"
ENVIRONMENT_YML = "environment.yml"
# The hash written after ``#`` in explicit files. conda reads sha256 there only from 24.9.0 (conda PR
# #14048) and the catalog's Miniconda installers ship 23.5.2 / 24.3.0, so the line carries md5 (read by
# every conda and micromamba); the sha256 stays in conda-lock.yml and envkit checks it itself (pack,
# offline builds). The catalog's ``explicit_hashes`` facts and tests/unit/test_catalog.py hold this.
EXPLICIT_HASH = "md5"
_HEADER_RE = re.compile(r"lock inputs sha256 ([0-9a-f]{64})")


@dataclass(frozen=True)
class LockContents:
    """Everything locked for one spec: conda and pip packages per platform."""

    platforms: tuple[str, ...]
    channels: tuple[str, ...]
    conda: Mapping[str, tuple[CondaPackage, ...]] = field(default_factory=dict)
    pip: Mapping[str, tuple[PipPackage, ...]] = field(default_factory=dict)
    content_hash: Mapping[str, str] = field(default_factory=dict)  # platform -> lock inputs sha256


def explicit_name(platform: str) -> str:
    return f"conda-{platform}.lock"


def header_sha256(text: str) -> str | None:
    """The lock-inputs hash in a lock file's header (its first lines), or None."""
    match = _HEADER_RE.search("\n".join(text.splitlines()[:5]))
    return match.group(1) if match else None


def conda_lock_yml(header: str, contents: LockContents, spec_sha256: str, source: str) -> str:
    """conda-lock's v1 format, written by conda-lock's own models and writer."""
    _import_conda_lock()
    from conda_lock.lockfile import write_conda_lock_file
    from conda_lock.lockfile.v1.models import LockMeta
    from conda_lock.lockfile.v2prelim.models import Lockfile

    packages = [_conda_dep(p) for platform in contents.platforms for p in contents.conda.get(platform, ())]
    packages += [
        _pip_dep(p, platform) for platform in contents.platforms for p in contents.pip.get(platform, ())
    ]
    lock = Lockfile(
        package=packages,
        metadata=LockMeta(
            content_hash=dict.fromkeys(contents.platforms, spec_sha256),
            channels=[{"url": c, "used_env_vars": []} for c in contents.channels],
            platforms=list(contents.platforms),
            sources=[source],
        ),
    )
    with tempfile.TemporaryDirectory(prefix="envkit-lock-") as tmp:
        path = Path(tmp) / CONDA_LOCK
        write_conda_lock_file(lock, path, metadata_choices=None, include_help_text=False)
        body = path.read_text("utf-8")
    return header + body


def _conda_dep(p: CondaPackage) -> LockedDependency:
    from conda_lock.lockfile.v1.models import HashModel
    from conda_lock.lockfile.v2prelim.models import LockedDependency

    return LockedDependency(
        name=p.name,
        version=p.version,
        manager="conda",
        platform=p.platform,
        dependencies=_dependencies(p.depends),
        url=p.url,
        hash=HashModel(md5=p.md5, sha256=p.sha256 or None),
        build=p.build,
        categories={"main"},
    )


def _pip_dep(p: PipPackage, platform: str) -> LockedDependency:
    from conda_lock.lockfile.v1.models import HashModel
    from conda_lock.lockfile.v2prelim.models import LockedDependency

    return LockedDependency(
        name=p.name,
        version=p.version,
        manager="pip",
        platform=platform,
        dependencies={},
        url=p.url,
        hash=HashModel(sha256=p.sha256),
        categories={"main"},
    )


def _dependencies(depends: Sequence[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for dep in depends:
        name, _, rest = dep.strip().partition(" ")
        found[name] = rest.strip() or "*"
    return dict(sorted(found.items()))


def read_conda_lock(path: Path) -> LockContents:
    """Read a conda-lock.yml (ours or conda-lock's) back into values."""
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise LockError(f"{path}: cannot read: {e}", hint="check the file") from e
    return parse_conda_lock(text, str(path))


def parse_conda_lock(text: str | bytes, where: str) -> LockContents:
    """The one reader of conda-lock.yml (v1, and conda-lock's v2): lock, inventory and audit share it.

    conda-lock's own models validate the document; any problem is a :class:`LockError` naming
    ``where``.
    """
    try:
        body = text.decode("utf-8") if isinstance(text, bytes) else text
        data = load_bounded_fast(body, max_bytes=MAX_LOCK_BYTES)  # no aliases, bounded size and depth
    except UnicodeDecodeError as e:
        raise LockError(f"{where}: not UTF-8 text (byte {e.start})", hint=_HINT) from e
    except YamlProblem as e:
        at = f"{where}:{e.line}" if e.line else where
        raise LockError(f"{at}: not valid YAML: {e.message}", hint=_HINT) from e
    return contents_from_data(data, where)


MAX_LOCK_BYTES = 256 * 1024 * 1024  # a 3-platform, 2,000-package conda-lock.yml is ~10 MB
_HINT = "regenerate it with `envkit lock NAME` (or conda-lock), or restore it from version control"


def _scalars_as_text(entry: object) -> object:
    """Tolerate real files: YAML reads an unquoted ``version: 1.0`` or an all-digit hash as a number."""
    if not isinstance(entry, Mapping):
        return entry
    fixed = {"optional": False, "category": "main", **entry}  # older conda-lock wrote neither always
    if isinstance(fixed.get("version"), int | float) and not isinstance(fixed.get("version"), bool):
        fixed["version"] = str(fixed["version"])
    if isinstance(fixed.get("hash"), Mapping):
        fixed["hash"] = _hashes_as_text(fixed["hash"])
    return fixed


def _hashes_as_text(hashes: Mapping[Any, Any]) -> dict[Any, Any]:
    return {k: str(v) if isinstance(v, int) and not isinstance(v, bool) else v for k, v in hashes.items()}


def contents_from_data(data: object, where: str) -> LockContents:
    """A loaded conda-lock document (``yaml.safe_load``) as :class:`LockContents`."""
    if not isinstance(data, Mapping):
        raise LockError(f"{where}: not a conda-lock file (expected a mapping with 'package')", hint=_HINT)
    content = dict(data)
    version = content.pop("version", None)
    if isinstance(content.get("package"), list):
        content["package"] = [_scalars_as_text(p) for p in content["package"]]
    meta = content.get("metadata")
    if isinstance(meta, Mapping) and isinstance(meta.get("content_hash"), Mapping):
        content["metadata"] = {**meta, "content_hash": _hashes_as_text(meta["content_hash"])}
    _import_conda_lock()
    from conda_lock.lockfile.v1.models import Lockfile as LockfileV1
    from conda_lock.lockfile.v2prelim.models import Lockfile, lockfile_v1_to_v2

    try:
        if version == 1:
            lock = lockfile_v1_to_v2(LockfileV1.model_validate(content))
        elif version == 2:
            lock = Lockfile.model_validate(content)
        else:
            raise LockError(f"{where}: unknown conda-lock version {version!r} (expected 1)", hint=_HINT)
    except (ValidationError, ValueError, TypeError) as e:
        first = e.errors()[0] if isinstance(e, ValidationError) and e.errors() else None
        what = f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}" if first else str(e)
        raise LockError(f"{where}: not a valid conda-lock file: {what}", hint=_HINT) from e
    conda: dict[str, list[CondaPackage]] = {}
    pip: dict[str, list[PipPackage]] = {}
    for dep in lock.package:
        if dep.manager == "conda":
            conda.setdefault(dep.platform, []).append(
                CondaPackage(
                    name=dep.name,
                    version=dep.version,
                    build=dep.build or "",
                    url=dep.url,
                    md5=dep.hash.md5 or "",
                    sha256=dep.hash.sha256 or "",
                    platform=dep.platform,
                    subdir=dep.url.rsplit("/", 2)[-2] if "/" in dep.url else "",
                    depends=tuple(f"{k} {v}" if v != "*" else k for k, v in dep.dependencies.items()),
                )
            )
        else:
            pip.setdefault(dep.platform, []).append(
                PipPackage(dep.name, dep.version, dep.url, (dep.hash.sha256,) if dep.hash.sha256 else ())
            )
    return LockContents(
        platforms=tuple(lock.metadata.platforms),
        channels=tuple(c.url for c in lock.metadata.channels),
        conda={k: tuple(sorted(v, key=lambda p: p.name)) for k, v in conda.items()},
        pip={k: tuple(sorted(v, key=lambda p: p.name)) for k, v in pip.items()},
        content_hash=dict(lock.metadata.content_hash),
    )


def explicit_file(header: str, platform: str, packages: Sequence[CondaPackage]) -> str:
    """conda's explicit format, dependencies first: ``conda create --file`` / micromamba.

    Each line is ``url#md5`` (:data:`EXPLICIT_HASH`); a package without an md5 gets no fragment
    rather than a sha256 that older conda cannot parse.
    """
    lines = [f"# platform: {platform}", "@EXPLICIT"]
    lines += [f"{p.url}#{p.md5}" if p.md5 else p.url for p in _toposort(packages)]
    return header + "\n".join(lines) + "\n"


def _toposort(packages: Sequence[CondaPackage]) -> list[CondaPackage]:
    """Dependencies before dependents; ties (and cycles) broken by name, so the order is stable."""
    by_name = {p.name: p for p in packages}
    needs = {p.name: {d.split(" ")[0] for d in p.depends} & set(by_name) - {p.name} for p in packages}
    ordered: list[CondaPackage] = []
    done: set[str] = set()
    while len(done) < len(by_name):
        ready = sorted(n for n in by_name if n not in done and needs[n] <= done)
        if not ready:  # a cycle: take the alphabetically first remaining package
            ready = [min(n for n in by_name if n not in done)]
        for name in ready:
            done.add(name)
            ordered.append(by_name[name])
    return ordered


def requirements_lock(header: str, pip: Mapping[str, Sequence[PipPackage]], options: Sequence[str]) -> str:
    """pip's ``--require-hashes`` format; a version that differs per platform gets a marker."""
    versions: dict[str, dict[str, PipPackage]] = {}
    for platform, packages in sorted(pip.items()):
        for p in packages:
            versions.setdefault(p.name, {})[platform] = p
    lines = [f"{o}\n" for o in options]
    for name in sorted(versions):
        per_platform = versions[name]
        groups: dict[str, list[str]] = {}
        for platform, p in sorted(per_platform.items()):
            groups.setdefault(p.version, []).append(platform)
        for version, platforms in sorted(groups.items()):
            marker = ""
            if len(groups) > 1 or len(platforms) < len(pip):
                alts = " or ".join(f'platform_machine == "{ARCHES[p]}"' for p in platforms)
                marker = f" ; {alts}"
            hashes = sorted({h for p in platforms for h in per_platform[p].hashes})
            lines.append(f"{name}=={version}{marker} \\\n")
            cont = [" \\"] * (len(hashes) - 1) + [""]
            lines += [f"    --hash=sha256:{h}{c}\n" for h, c in zip(hashes, cont, strict=True)]
    return header + "".join(lines)


_REQ_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)(?: ; [^\\]+)? \\\Z")
_HASH_LINE = re.compile(r"^    --hash=sha256:([0-9a-f]{64})( \\)?\Z")


def parse_requirements_lock(text: str) -> tuple[list[str], dict[tuple[str, str], list[str]]]:
    """Our requirements.lock back into (options, {(name, version): sha256s}); ValueError on any other line."""
    options: list[str] = []
    pins: dict[tuple[str, str], list[str]] = {}
    current: list[str] | None = None
    more = False
    for number, line in enumerate(text.splitlines(), start=1):
        if more:
            match = _HASH_LINE.match(line)
            if match is None or current is None:
                raise ValueError(f"line {number}: expected '    --hash=sha256:<64 hex>'")
            current.append(match.group(1))
            more = bool(match.group(2))
            continue
        if not line or line.startswith("#"):
            continue
        if line.startswith("--") and current is None:
            options.append(line)
            continue
        match = _REQ_LINE.match(line)
        if match is None:
            raise ValueError(f"line {number}: not a hashed pin: {line[:80]!r}")
        current = pins.setdefault((match.group(1), match.group(2)), [])
        more = True
    if more:
        raise ValueError("the file ends inside a pin (truncated?)")
    return options, pins


def pinned_environment_yml(
    header: str, name: str, channels: Sequence[str], contents: LockContents, pip_options: Sequence[str]
) -> str:
    """environment.yml with ``name=version=build`` pins (the first platform's solve) and ``==`` pip pins."""
    platform = contents.platforms[0]
    deps: list[object] = [p.pin for p in sorted(contents.conda.get(platform, ()), key=lambda p: p.name)]
    pip = sorted(contents.pip.get(platform, ()), key=lambda p: p.name)
    if pip:
        deps.append({"pip": [*pip_options, *(f"{p.name}=={p.version}" for p in pip)]})
    body = {"name": name, "channels": list(channels), "dependencies": deps}
    others = ", ".join(contents.platforms[1:]) or "none"
    note = f"# conda pins are the {platform} solve; other platforms: {others}\n"
    return header + note + yaml.safe_dump(body, sort_keys=False, default_flow_style=False, width=1000)
