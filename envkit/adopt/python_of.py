"""Which Python a source states: a conda pin (``conda-forge::python=3.7`` too), a wheel's ``cp3X``
tag, ``pythonX.Y`` in a Dockerfile (``apt-get install python3.10``, ``python3.7 get-pip.py``,
``update-alternatives``), the base image's, the OS's own ``python3`` on a known distribution, the
conda builds' ``py3X``; and the Python a spec gets when the source states none or a range."""

from __future__ import annotations

import re

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from envkit.adopt.evidence import AdoptError, Collected, shown_item
from envkit.adopt.releases import Releases

__all__ = ["choose_python", "python_statement", "stated_python"]

_PREFERRED_PYTHON = "3.11"
_BUILD_PYTHON = re.compile(r"(?:^|_)py3\.?(\d{1,2})(?:_|h|\Z)")  # py36_0, py3.9_cuda11.3_..., py311h...
_PYTHONS = tuple(f"3.{m}" for m in range(6, 15))


def minor_in(spec: SpecifierSet, minor: str) -> bool:
    """Some release of the ``minor`` series (``3.14``) is in ``spec``: ``>=3.14.6,<3.15`` has 3.14,
    though not 3.14.0."""
    return any(spec.contains(f"{minor}.{patch}") for patch in range(40))


def choose_python(
    found: Collected,
    versions: dict[str, str],
    releases: Releases,
    image_python: str | None,
    how: dict[str, str],
) -> str:
    allowed = set(_PYTHONS)
    for framework, version in versions.items():
        release = releases.release(framework, version)
        if release is not None:
            allowed &= set(release.python)
    stated, where = python_statement(found, image_python)
    if stated:
        exact = re.match(r"^[=\s]*(3\.\d+)(?:\.\d+|\.\*)?(?:[=\s].*)?$", stated)
        if exact:
            how["python"] = f"python {shown_item(stated.lstrip('= '))} ({where})"
            return exact[1]
        try:
            spec = SpecifierSet(stated.replace(" ", ""))
        except InvalidSpecifier:
            spec = SpecifierSet()
        fitting = [p for p in _PYTHONS if p in allowed and minor_in(spec, p)]
        if fitting:
            chosen = _PREFERRED_PYTHON if _PREFERRED_PYTHON in fitting else max(fitting, key=Version)
            newest = max(fitting, key=Version)
            why = (
                f"{chosen}, the newest in that range the frameworks publish wheels for"
                if chosen == newest
                else f"{chosen}, envkit's default, in that range (the frameworks also publish wheels for "
                f"{', '.join(p for p in sorted(fitting, key=Version) if Version(p) > Version(chosen))})"
            )
            how["python"] = f"python{shown_item(stated)} ({where}): {why}"
            return chosen
        if str(spec):
            shown = ", ".join(f"{fw} {v}" for fw, v in sorted(versions.items())) or "the spec"
            raise AdoptError(
                f"{where}: python{shown_item(stated)}: no Python in that range has wheels of {shown} "
                f"(it has {', '.join(sorted(allowed, key=Version)) or 'none'}); nothing was written",
                hint="rerun with --python one of " + ", ".join(sorted(allowed, key=Version)),
            )
    chosen = _PREFERRED_PYTHON if _PREFERRED_PYTHON in allowed else max(allowed, key=Version)
    how["python"] = f"not stated by the source: {chosen}, envkit's default (--python to choose)"
    return chosen


def python_statement(found: Collected, image_python: str | None) -> tuple[str | None, str]:
    """The Python the source states (a conda pin, a wheel tag or `pythonX.Y` in a Dockerfile, the
    base image's, the OS's own python3 on a known distribution, the conda builds' py3X), and where."""
    pin = next((p for p in found.conda if p.name == "python"), None)
    stated = (pin.spec.split("::", 1)[-1][len("python") :].strip() if pin else None) or found.python
    where = (pin.where if pin else found.python_where) or found.origin
    if not stated and image_python:
        stated, where = image_python, f"the base image {found.base_image}"
    if not stated and found.distro_python:
        distro = _distro_python(found.base_image or "")
        if distro:
            stated, where = distro[0], f"{found.distro_python}: the python3 of {distro[1]}"
    if not stated:
        built = next((b for p in found.conda if p.build and (b := _BUILD_PYTHON.search(p.build))), None)
        if built:
            stated, where = f"3.{built[1]}", "the py3X tag of the conda builds"
    return stated, where


def stated_python(found: Collected, image_python: str | None) -> str | None:
    """The Python the source pins: a minor version (``3.10``), a range (``>=3.7,<3.9``), or None."""
    stated, _ = python_statement(found, image_python)
    exact = re.match(r"^[=\s]*(3\.\d+)(?:\.\d+|\.\*)?(?:[=\s].*)?$", stated or "")
    if exact:
        return exact[1]
    try:
        return str(SpecifierSet((stated or "").replace(" ", ""))) or None
    except InvalidSpecifier:
        return None


# The python3 each distribution ships (Ubuntu and Debian release notes).
_DISTRO_PYTHON = {
    "ubuntu16.04": "3.5",
    "ubuntu18.04": "3.6",
    "ubuntu20.04": "3.8",
    "ubuntu22.04": "3.10",
    "ubuntu23.04": "3.11",
    "ubuntu23.10": "3.11",
    "ubuntu24.04": "3.12",
    "ubuntu24.10": "3.12",
    "ubuntu25.04": "3.13",
    "buster": "3.7",
    "bullseye": "3.9",
    "bookworm": "3.11",
    "trixie": "3.13",
}
_DISTRO = re.compile(r"(ubuntu)[:-]?(\d\d\.\d\d)|(?:debian:|-)(buster|bullseye|bookworm|trixie)\b")


def _distro_python(image: str) -> tuple[str, str] | None:
    match = _DISTRO.search(image)
    if not match:
        return None
    key = f"ubuntu{match[2]}" if match[1] else match[3]
    python = _DISTRO_PYTHON.get(key)
    return (python, f"{key} (the base image {image})") if python else None
