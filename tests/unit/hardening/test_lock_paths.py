"""Hostile lock fields that would become paths in the pack cache and the pack (``envkit pack``).

A conda package's sha256 names its cache folder and its URL's last two parts its place in the
pack; a hand-edited or hostile conda-lock.yml must be refused before anything is fetched or any
folder is made.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any

import pytest

from envkit.errors import PackError
from envkit.lock.solver import CondaPackage
from envkit.offline.collect import PackRequest, collect
from envkit.offline.lock_names import check_conda_file
from envkit.offline.testing import FakeFetcher

DATA = b"a conda archive"
GOOD = CondaPackage(
    name="tzdata",
    version="2024a",
    build="h0c530f3_0",
    url="https://conda.anaconda.org/conda-forge/noarch/tzdata-2024a-h0c530f3_0.conda",
    md5=hashlib.md5(DATA, usedforsecurity=False).hexdigest(),
    sha256=hashlib.sha256(DATA).hexdigest(),
    platform="linux-64",
)


def _request(package: CondaPackage) -> PackRequest:
    return PackRequest("demo", ("linux-64",), "0" * 64, {"linux-64": (package,)}, None, "3.11", {})


HOSTILE: dict[str, dict[str, Any]] = {
    "sha256-dotdot": {"sha256": "../../../../victim"},
    "sha256-absolute": {"sha256": "/tmp/victim"},
    "sha256-short": {"sha256": "abc"},
    "sha256-nul": {"sha256": "\x00" * 64},
    "md5-slash": {"md5": "a/b"},
    "url-filename-dotdot": {"url": "https://conda.anaconda.org/conda-forge/noarch/.."},
    "url-subdir-dotdot": {"url": "https://conda.anaconda.org/conda-forge/../tzdata-2024a-h0c530f3_0.conda"},
    "url-encoded-slash": {"url": "https://h/c/noarch/..%2F..%2Fvictim.conda"},
    "url-no-archive": {"url": "https://conda.anaconda.org/conda-forge/noarch/tzdata"},
    "url-backslash": {"url": "https://h/c/noarch/..\\..\\victim.conda"},
    "url-unicode": {"url": "https://h/c/noarch/tzd\u0430ta-2024a-0.conda"},
    "url-long": {"url": "https://h/c/noarch/" + "a" * 5000 + ".conda"},
    "url-bare": {"url": "tzdata-2024a-0.conda"},
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_lock_entry_is_refused_before_any_fetch(case: str, tmp_path: Path) -> None:
    package = dataclasses.replace(GOOD, **HOSTILE[case])
    fetcher = FakeFetcher({package.url: DATA})
    cache = tmp_path / "home" / "cache"
    with pytest.raises(PackError) as info:
        collect(_request(package), cache, fetcher)
    assert "images/demo/conda-lock.yml: tzdata 2024a (linux-64)" in info.value.message
    assert len(info.value.message) < 400 and "\x00" not in info.value.message
    assert fetcher.requests == []
    assert sorted(tmp_path.rglob("*")) == []


@pytest.mark.parametrize(
    "url",
    [
        GOOD.url,
        "https://conda.anaconda.org/pytorch/linux-64/pytorch-2.1.0-py3.10_cuda12.1_cudnn8.9.2_0.tar.bz2",
        "https://repo.anaconda.com/pkgs/main/linux-64/_libgcc_mutex-0.1-main.conda",
        "https://conda.anaconda.org/conda-forge/linux-64/libblas-3.9.0-20_linux64_openblas.conda",
        "https://conda.anaconda.org/conda-forge/win-64/vc14_runtime-14.38.33130-h82b7239_18.conda",
        "file:///srv/mirror/conda-forge/osx-arm64/python-3.11.9-h932a869_0_cpython.conda",
    ],
)
def test_real_lock_urls_pass(url: str) -> None:
    check_conda_file(dataclasses.replace(GOOD, url=url), "conda-lock.yml")
