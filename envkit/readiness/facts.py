"""What the readiness payload (``envkit/payload/scripts/ready.py``) found, parsed once into frozen values.

The payload ran inside an image envkit may not have built: every field is type-checked here, and
a document of the wrong shape is a :class:`ReadinessError` naming the field, never a traceback.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from envkit._io import load_json_bounded
from envkit._safe import one_line
from envkit.errors import ProbeError

__all__ = [
    "FrameworkFacts",
    "LibraryScan",
    "Link",
    "Loaded",
    "Opened",
    "Owner",
    "ReadinessError",
    "ReadinessFacts",
    "Walk",
    "parse_facts",
    "parse_library",
]

KIND = "envkit-gpu-readiness"
SCHEMA = 1
MAX_DEPTH = 12


class ReadinessError(ProbeError):
    """The readiness payload's output cannot be read (wrong shape, not JSON)."""


@dataclass(frozen=True)
class LibraryScan:
    """One shared library: its soname, links and the GPU code of its fatbins (counts per arch)."""

    path: str
    soname: str | None
    needed: tuple[str, ...]
    fatbins: int
    sass: Mapping[str, int]
    ptx: Mapping[str, int]
    problem: str | None
    size: int | None
    groups: tuple[tuple[frozenset[str], int], ...] = ()  # (arch set of a fatbin, how many fatbins)


@dataclass(frozen=True)
class Link:
    """``requester`` needs ``name`` (``DT_NEEDED``); ``to`` is what the loader would open (None: missing)."""

    requester: str
    name: str
    to: str | None
    host: bool  # a driver library the NVIDIA Container Toolkit brings from the host


@dataclass(frozen=True)
class Opened:
    """A library the framework opens at run time: the names it tries, what resolved, its soname."""

    lib: str
    names: tuple[str, ...]
    opened_as: str | None
    to: str | None
    soname: str | None


@dataclass(frozen=True)
class Loaded:
    """What a child process loaded: versions from the libraries' own calls, errors, mapped files."""

    versions: Mapping[str, int | str | None]
    errors: Mapping[str, str]
    maps: Mapping[str, tuple[str, ...]]


@dataclass(frozen=True)
class FrameworkFacts:
    """One framework in the environment and what it links, opens and loads."""

    name: str
    version: str | None
    distribution: str | None
    cuda: str | None  # the CUDA it was built for; None: a CPU-only build
    cudnn: str | None
    directory: str
    roots: tuple[str, ...]
    links: tuple[Link, ...]
    opened: tuple[Opened, ...]
    loaded: Loaded


@dataclass(frozen=True)
class Owner:
    """The distribution that installed a library (``RECORD``, ``conda-meta``) or the cache entry it is in."""

    name: str
    version: str | None
    via: str  # "RECORD", "conda-meta", "cache DIR"

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}" if self.version else self.name


@dataclass(frozen=True)
class Walk:
    """What the walk over every shared object covered (None in a report without it)."""

    roots: tuple[str, ...]
    shared_objects: int
    limit: int
    cut: bool


@dataclass(frozen=True)
class ReadinessFacts:
    """The whole payload report."""

    python: str | None
    frameworks: Mapping[str, FrameworkFacts]
    libraries: Mapping[str, LibraryScan]
    cuda_present: tuple[str, ...]
    compat_libcuda: tuple[str, ...]
    # how the libraries were opened on the host (environment, cwd, network); None: inside an image
    load_sandbox: Mapping[str, str] | None = None
    owners: Mapping[str, Owner] = field(default_factory=dict)  # library path -> its distribution
    walk: Walk | None = None
    nvidia_require: Mapping[str, str] = field(default_factory=dict)  # the image's NVIDIA_REQUIRE_*
    document: Mapping[str, Any] = field(repr=False, default_factory=dict)


def _bad(where: str, what: str) -> ReadinessError:
    """The error for a field of the wrong shape; the field's path (keys from the report) on one line."""
    return ReadinessError(
        f"readiness report: {one_line(where)} {what}", hint="envkit and its payload disagree"
    )


def _obj(value: Any, where: str) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise _bad(where, "is not an object")
    return value


def _str(value: Any, where: str, *, optional: bool = True) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _bad(where, "is not a string")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise _bad(where, "is not a list")
    return value


def _strs(value: Any, where: str) -> tuple[str, ...]:
    return tuple(str(_str(v, where, optional=False)) for v in _list(value, where))


def _counts(value: Any, where: str) -> dict[str, int]:
    data = _obj(value, where)
    out = {}
    for k, v in data.items():
        if not isinstance(v, int) or isinstance(v, bool):
            raise _bad(f"{where}.{k}", "is not a count")
        out[str(k)] = v
    return out


def parse_library(path: str, value: Any) -> LibraryScan:
    """One library of a report (or of a lock's ``gpu-code.json``), shape-checked."""
    d = _obj(value, f"libraries[{path}]")
    size = d.get("size")
    fatbins = d.get("fatbins", 0)
    return LibraryScan(
        path=path,
        soname=_str(d.get("soname"), f"{path}.soname"),
        needed=_strs(d.get("needed", []), f"{path}.needed"),
        fatbins=fatbins if isinstance(fatbins, int) else 0,
        sass=_counts(d.get("sass", {}), f"{path}.sass"),
        ptx=_counts(d.get("ptx", {}), f"{path}.ptx"),
        problem=_str(d.get("problem"), f"{path}.problem"),
        size=size if isinstance(size, int) else None,
        groups=tuple(_group(g, f"{path}.groups") for g in _list(d.get("groups", []), f"{path}.groups")),
    )


def _group(value: Any, where: str) -> tuple[frozenset[str], int]:
    g = _obj(value, where)
    n = g.get("fatbins")
    if not isinstance(n, int) or isinstance(n, bool):
        raise _bad(f"{where}.fatbins", "is not a count")
    return frozenset(_strs(g.get("archs", []), f"{where}.archs")), n


def _loaded(value: Any, where: str) -> Loaded:
    d = _obj(value, where)
    versions = {
        str(k): v if isinstance(v, (int, str)) and not isinstance(v, bool) else None
        for k, v in _obj(d.get("versions", {}), f"{where}.versions").items()
    }
    errors = {str(k): str(v) for k, v in _obj(d.get("errors", {}), f"{where}.errors").items()}
    maps_raw = d.get("maps", {})
    maps = {str(k): _strs(v, f"{where}.maps.{k}") for k, v in _obj(maps_raw, f"{where}.maps").items()}
    return Loaded(versions, errors, maps)


def _framework(name: str, value: Any) -> FrameworkFacts:
    d = _obj(value, f"frameworks.{name}")
    links = []
    for i, raw in enumerate(_list(d.get("links", []), f"frameworks.{name}.links")):
        lk = _obj(raw, f"frameworks.{name}.links[{i}]")
        links.append(
            Link(
                str(_str(lk.get("from"), "link.from", optional=False)),
                str(_str(lk.get("name"), "link.name", optional=False)),
                _str(lk.get("to"), "link.to"),
                lk.get("host") is True,
            )
        )
    opened = []
    for i, raw in enumerate(_list(d.get("dynload", []), f"frameworks.{name}.dynload")):
        row = _obj(raw, f"frameworks.{name}.dynload[{i}]")
        opened.append(
            Opened(
                str(_str(row.get("lib"), "dynload.lib", optional=False)),
                _strs(row.get("names", []), "dynload.names"),
                _str(row.get("opened_as"), "dynload.opened_as"),
                _str(row.get("to"), "dynload.to"),
                _str(row.get("soname"), "dynload.soname"),
            )
        )
    return FrameworkFacts(
        name=name,
        version=_str(d.get("version"), f"{name}.version"),
        distribution=_str(d.get("distribution"), f"{name}.distribution"),
        cuda=_str(d.get("cuda"), f"{name}.cuda"),
        cudnn=_str(d.get("cudnn"), f"{name}.cudnn"),
        directory=str(_str(d.get("dir"), f"{name}.dir", optional=False)),
        roots=_strs(d.get("roots", []), f"{name}.roots"),
        links=tuple(links),
        opened=tuple(opened),
        loaded=_loaded(d.get("loaded", {}), f"{name}.loaded"),
    )


def _owner(value: Any, where: str) -> Owner:
    o = _obj(value, where)
    return Owner(
        name=str(_str(o.get("name"), f"{where}.name", optional=False)),
        version=_str(o.get("version"), f"{where}.version"),
        via=str(_str(o.get("via"), f"{where}.via", optional=False)),
    )


def _walk(value: Any) -> Walk | None:
    if value is None:
        return None
    w = _obj(value, "walk")
    counts = _counts({k: w.get(k, 0) for k in ("shared_objects", "limit")}, "walk")
    return Walk(
        _strs(w.get("roots", []), "walk.roots"),
        counts["shared_objects"],
        counts["limit"],
        w.get("cut") is True,
    )


def _sandbox(value: Any) -> Mapping[str, str] | None:
    if value is None:
        return None
    return {
        str(k): str(_str(v, f"load_sandbox.{k}", optional=False))
        for k, v in _obj(value, "load_sandbox").items()
    }


def parse_facts(text: str | bytes, where: str) -> ReadinessFacts:
    """The payload's stdout, parsed once."""
    try:
        data = load_json_bounded(text, MAX_DEPTH)
    except ValueError as e:
        raise ReadinessError(
            f"the readiness payload in {where} printed no report",
            hint="rerun with --debug; is python3 in the image?",
        ) from e
    d = _obj(data, "the document")
    if d.get("kind") != KIND or d.get("schema") != SCHEMA:
        raise ReadinessError(
            f"the readiness payload in {where} printed a {d.get('kind')!r} "
            f"schema {d.get('schema')!r} document",
            hint=f"expected {KIND} schema {SCHEMA}: reinstall envkit",
        )
    return ReadinessFacts(
        python=_str(d.get("python"), "python"),
        frameworks={
            k: _framework(k, v) for k, v in sorted(_obj(d.get("frameworks", {}), "frameworks").items())
        },
        libraries={
            k: parse_library(k, v) for k, v in sorted(_obj(d.get("libraries", {}), "libraries").items())
        },
        cuda_present=_strs(d.get("cuda_present", []), "cuda_present"),
        compat_libcuda=_strs(d.get("compat_libcuda", []), "compat_libcuda"),
        load_sandbox=_sandbox(d.get("load_sandbox")),
        owners={k: _owner(v, f"owners[{k}]") for k, v in sorted(_obj(d.get("owners", {}), "owners").items())},
        walk=_walk(d.get("walk")),
        nvidia_require={
            str(k): str(_str(v, f"nvidia_require.{k}", optional=False))
            for k, v in _obj(d.get("nvidia_require", {}), "nvidia_require").items()
        },
        document=d,
    )
