"""The explicit lock (``conda-<platform>.lock``) must be readable by the conda/micromamba of every
installer in the catalog: the hash format written there is checked against sourced version facts."""

from __future__ import annotations

import re

import pytest
from packaging.version import Version

from envkit.catalog import InstallerFile, load_catalog
from envkit.lock.lockfile import EXPLICIT_HASH, explicit_file
from envkit.lock.solver import CondaPackage

MD5 = "0123456789abcdef" * 2
SHA = "ab" * 32


def _hash_kind(fragment: str) -> str:
    return {32: "md5", 64: "sha256"}[len(fragment)]


def _written_kind() -> str:
    pkg = CondaPackage("zlib", "1.3", "h0", "https://x.org/ch/linux-64/zlib-1.3-h0.conda", MD5, SHA,
                       "linux-64", "linux-64", ())  # fmt: skip
    line = explicit_file("", "linux-64", [pkg]).splitlines()[-1]
    fragment = line.rsplit("#", 1)[1]
    assert re.fullmatch(r"[0-9a-f]+", fragment)
    return _hash_kind(fragment)


def test_written_format_is_the_declared_one() -> None:
    assert _written_kind() == EXPLICIT_HASH == "md5"


@pytest.mark.parametrize(
    "installer", load_catalog().installers, ids=lambda i: f"{i.kind}-{i.version}-{i.arch}"
)
def test_every_catalog_installer_reads_the_explicit_format(installer: InstallerFile) -> None:
    catalog = load_catalog()
    kind = _written_kind()
    support = catalog.explicit_hash_since(installer.tool, kind)
    assert support is not None and support.source, f"no sourced fact for {installer.tool} reading #{kind}"
    assert installer.tool_version_source
    assert Version(installer.tool_version) >= Version(support.since), (
        f"{installer.kind} {installer.version} ships {installer.tool} {installer.tool_version}, "
        f"which cannot read #{kind} in explicit files (needs >= {support.since}: {support.source})"
    )


def test_sha256_would_break_the_catalog_minicondas() -> None:
    """The check above can fail: with sha256 lines the catalog's Miniconda (conda 23.5.2/24.3.0) could not
    read the lock (conda PR #14048, 24.9.0), nor micromamba 2.0.5 (mamba PR #3866)."""
    catalog = load_catalog()
    sha = {t: catalog.explicit_hash_since(t, "sha256") for t in ("conda", "micromamba")}
    since = {t: s.since for t, s in sha.items() if s is not None}
    assert since.keys() == sha.keys()
    too_old = {
        f"{i.kind}-{i.tool_version}"
        for i in catalog.installers
        if Version(i.tool_version) < Version(since[i.tool])
    }
    assert {"miniconda-23.5.2", "miniconda-24.3.0", "micromamba-2.0.5"} <= too_old
