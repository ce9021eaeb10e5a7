"""Lock fields that become paths in the pack cache, the pack and the build context, checked first.

A conda package's sha256 names its cache folder (``<cache>/conda/<sha256>/<file>``) and the last
two parts of its URL name its place in the pack (``channel/<subdir>/<file>``). A lock is text
anyone can edit (or a pull request can change), so before any of it becomes a path: the sha256
must be 64 lowercase hex digits, the md5 32 (or absent), the subdir a conda subdir
(``linux-64``, ``noarch``) and the file a conda archive name (``*.conda`` / ``*.tar.bz2``) with no
separator, no ``..`` and nothing outside ASCII letters, digits and ``._+!-``.
"""

from __future__ import annotations

import re

from envkit.errors import PackError
from envkit.lock.solver import CondaPackage

__all__ = ["check_conda_file"]

_SHA256 = re.compile(r"[0-9a-f]{64}", re.ASCII)
_MD5 = re.compile(r"[0-9a-f]{32}", re.ASCII)
_SUBDIR = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}", re.ASCII)
_ARCHIVE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+!-]{0,250}\.(?:conda|tar\.bz2)", re.ASCII)


def check_conda_file(package: CondaPackage, where: str) -> None:
    """Raise :class:`PackError` naming ``where`` and the package when a field would be an unsafe path."""
    subdir, filename = ["", *package.url.rstrip("/").rsplit("/", 2)[-2:]][-2:]
    problem = None
    if _SHA256.fullmatch(package.sha256) is None:
        problem = f"sha256 {package.sha256[:80]!r} is not 64 hex digits"
    elif package.md5 and _MD5.fullmatch(package.md5) is None:
        problem = f"md5 {package.md5[:80]!r} is not 32 hex digits"
    elif _SUBDIR.fullmatch(subdir) is None or _ARCHIVE.fullmatch(filename) is None or ".." in filename:
        problem = f"url {package.url[:200]!r} does not end in <subdir>/<name>.conda|.tar.bz2"
    if problem:
        raise PackError(
            f"{where}: {package.name} {package.version} ({package.platform}): {problem}",
            hint="the lock was edited by hand or is not envkit's; relock with `envkit lock NAME` "
            "and review the diff",
        )
