"""Readers for the pages the catalog is built from, and the trimming applied when recording them.

- PyPI's JSON API (``/pypi/<project>/json``): releases, files, yanked flags.
- Core metadata of one wheel (PEP 658 ``<wheel>.metadata``): the CUDA runtime the
  PyPI default wheel requires (``nvidia-cuda-runtime-cu12==12.4.127``, ``cuda-toolkit==13.0.3``).
- PEP 503 simple pages (download.pytorch.org, paddlepaddle.org.cn/packages/...) and
  find-links pages (paddlepaddle.org.cn/whl/.../stable.html): anchors naming wheel files.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from email.parser import HeaderParser
from html.parser import HTMLParser
from urllib.parse import unquote, urljoin

from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from envkit._io import load_json_bounded
from envkit._pep503 import canonicalize_name
from envkit.errors import EnvkitError

__all__ = [
    "DistFile",
    "PageFormatError",
    "WheelFile",
    "cuda_requirements",
    "linux_pythons",
    "read_core_metadata",
    "read_link_page",
    "read_pypi_project",
    "trim_page",
]

# Linux platform tags of the wheels envkit installs (x86_64 and aarch64).
_LINUX = re.compile(r"^(manylinux[0-9_]*|linux)_(x86_64|aarch64)\Z")


class PageFormatError(EnvkitError):
    """A page the refresh reads is not in the format its reader expects."""

    def __init__(self, url: str, problem: str) -> None:
        super().__init__(
            f"{url}: unexpected page format ({problem})",
            hint="the index changed its format: report it; --offline keeps the shipped catalog",
        )


@dataclass(frozen=True)
class WheelFile:
    """A wheel file listed on PyPI or a framework index: name, version, build tag, tags, yanked."""

    filename: str
    project: str
    version: Version
    build: str  # build tag ('' when absent): torch-2.10.0-3-cp312-... has '3'
    tags: frozenset[Tag]
    yanked: bool = False
    url: str = ""

    @property
    def is_linux(self) -> bool:
        return any(_LINUX.match(t.platform) for t in self.tags)

    @property
    def cpython(self) -> set[str]:
        """CPython versions ('3.12') of the wheel's tags; free-threaded (cp313t) builds excluded."""
        found = set()
        for tag in self.tags:
            m = re.fullmatch(r"cp(\d)(\d+)", tag.interpreter)
            if m and not tag.abi.endswith("t"):
                found.add(f"{m.group(1)}.{m.group(2)}")
        return found


@dataclass(frozen=True)
class DistFile:
    """A file of a PyPI release (only wheels are kept)."""

    wheel: WheelFile
    metadata_url: str | None


def _wheel(filename: str, *, yanked: bool = False, url: str = "") -> WheelFile | None:
    if not filename.endswith(".whl"):
        return None
    try:
        name, version, build, tags = parse_wheel_filename(filename)
    except (InvalidWheelFilename, InvalidVersion):
        return None
    return WheelFile(
        filename, str(name), version, "".join(map(str, build)) if build else "", tags, yanked, url
    )


def read_pypi_project(url: str, body: bytes) -> dict[Version, list[DistFile]]:
    """Release -> its Linux wheels, from a PyPI JSON API page."""
    try:
        data = load_json_bounded(body, 16)  # a recorded page may come from anyone: bounded depth
        releases = data["releases"]
        if not isinstance(releases, dict):
            raise TypeError("'releases' is not an object")
    except (ValueError, KeyError, TypeError) as e:
        raise PageFormatError(url, f"not a PyPI JSON project page: {e}") from e
    found: dict[Version, list[DistFile]] = {}
    for text, files in releases.items():
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        wheels = []
        for entry in files:
            file_url = urljoin(url, entry.get("url", ""))
            wheel = _wheel(entry.get("filename", ""), yanked=bool(entry.get("yanked")), url=file_url)
            if wheel is not None and wheel.is_linux:
                # PEP 658 metadata beside the wheel (PyPI backfilled it; the JSON flag is unreliable)
                wheels.append(DistFile(wheel, f"{file_url}.metadata" if entry.get("url") else None))
        found[version] = wheels
    return found


def read_core_metadata(body: bytes) -> list[Requirement]:
    """``Requires-Dist`` of a wheel's METADATA (RFC 822 headers)."""
    headers = HeaderParser().parsestr(body.decode("utf-8", "replace"), headersonly=True)
    return [r for line in headers.get_all("Requires-Dist") or [] if (r := _requirement(line))]


def _requirement(line: str) -> Requirement | None:
    try:
        return Requirement(line)
    except InvalidRequirement:
        return None


_CUDA_RUNTIME = re.compile(r"^(nvidia-cuda-runtime-cu\d+|cuda-toolkit|nvidia-cuda-runtime)\Z")
_CUDNN = re.compile(r"^nvidia-cudnn-cu\d+\Z")


def cuda_requirements(requirements: list[Requirement]) -> tuple[str | None, str | None]:
    """(CUDA major.minor, cuDNN major.minor) pinned by a wheel's Linux x86_64 requirements."""
    cuda = cudnn = None
    env = {"platform_system": "Linux", "platform_machine": "x86_64", "sys_platform": "linux", "extra": ""}
    for req in requirements:
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        pins = [s.version for s in req.specifier if s.operator == "=="]
        if not pins:
            continue
        major_minor = ".".join(pins[0].split(".")[:2])
        name = canonicalize_name(req.name)
        if _CUDA_RUNTIME.match(name) and cuda is None:
            cuda = major_minor
        elif _CUDNN.match(name) and cudnn is None:
            cudnn = major_minor
    return cuda, cudnn


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[tuple[str, str, dict[str, str | None]]] = []
        self._href: str | None = None
        self._attrs: dict[str, str | None] = {}
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._attrs = dict(attrs)
            self._href = self._attrs.get("href") or ""
            self._text = []

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._href is not None:
            self.links.append((self._href, "".join(self._text).strip(), self._attrs))
            self._href = None


def read_link_page(url: str, body: bytes) -> list[WheelFile]:
    """Wheel files linked from a PEP 503 page or a find-links page (Linux wheels only)."""
    text = body.decode("utf-8", "replace")
    if "<a" not in text.lower() and "<html" not in text.lower():
        raise PageFormatError(url, "no HTML links")
    parser = _Anchors()
    parser.feed(text)
    found = []
    for href, label, attrs in parser.links:
        target = urljoin(url, href)
        filename = unquote(target.split("#", 1)[0].rsplit("/", 1)[-1]) or label
        wheel = _wheel(filename, yanked="data-yanked" in attrs, url=target)
        if wheel is not None and wheel.is_linux:
            found.append(wheel)
    return found


def linux_pythons(wheels: list[WheelFile]) -> list[str]:
    """CPython versions with an x86_64 Linux wheel, oldest first."""
    found: set[str] = set()
    for w in wheels:
        if any(t.platform.endswith("x86_64") for t in w.tags):
            found |= w.cpython
    return sorted(found, key=lambda p: tuple(int(x) for x in p.split(".")))


# -- trimming recorded pages: keep what the readers use, drop the rest ----------------------


def trim_page(url: str, body: bytes, *, keep: set[Version] | None = None) -> bytes:
    """A smaller page of the same shape: the readers give the same answers on it."""
    if url.endswith(".metadata"):
        return _trim_metadata(body)
    if "/pypi/" in url and url.endswith("/json"):
        return _trim_pypi(body, keep)
    return body


def _trim_metadata(body: bytes) -> bytes:
    head = body.decode("utf-8", "replace").split("\n\n", 1)[0]
    kept = [
        line
        for line in head.splitlines()
        if line.split(":", 1)[0]
        in {"Metadata-Version", "Name", "Version", "Requires-Python", "Requires-Dist"}
    ]
    return ("\n".join(kept) + "\n").encode("utf-8")


def _trim_pypi(body: bytes, keep: set[Version] | None) -> bytes:
    data = load_json_bounded(body, 16)
    releases = {}
    for text, files in data.get("releases", {}).items():
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        if keep is not None and version not in keep:
            continue
        releases[text] = [
            {k: f[k] for k in ("filename", "url", "yanked") if k in f}
            for f in files
            if (w := _wheel(f.get("filename", ""))) is not None and w.is_linux
        ]
    out = {"info": {"name": data.get("info", {}).get("name")}, "releases": releases}
    return (json.dumps(out, indent=0, sort_keys=True) + "\n").encode("utf-8")
