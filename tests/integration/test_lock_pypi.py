"""The pip part against the real PyPI (network marker: deselected by default)."""

from __future__ import annotations

import hashlib
import urllib.request

import pytest

from envkit.lock.pip import UvResolver
from envkit.lock.solver import PipRequest


@pytest.mark.network
def test_uv_resolves_pypi_with_real_hashes() -> None:
    request = PipRequest(("packaging==24.1",), "3.11", "x86_64-manylinux_2_35")
    (package,) = UvResolver().resolve(request)
    assert (package.name, package.version) == ("packaging", "24.1")
    with urllib.request.urlopen(package.url, timeout=60) as response:  # the first hash belongs to the url
        assert hashlib.sha256(response.read()).hexdigest() == package.sha256
