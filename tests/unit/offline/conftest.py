"""Fixtures for ``envkit.offline``: the build stage's stand-in for ``pip download``."""

from __future__ import annotations

import pytest

from tests.unit.build.conftest import FakePip


@pytest.fixture
def pip() -> FakePip:
    return FakePip()
