"""PythonRngCache: Python's generator read in full only when it changed, never a stale state."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from envkit.guard.adapter import PythonRngCache, python_rng


def test_the_layout_is_recognised_on_cpython() -> None:
    assert PythonRngCache().usable


@pytest.mark.parametrize(
    "change",
    [
        lambda: random.random(),
        lambda: random.getrandbits(1),
        lambda: random.seed(1234),
        lambda: random.setstate(random.Random(7).getstate()),
        lambda: random.gauss(0.0, 1.0),  # keeps a cached Gaussian (gauss_next) beside the words
        lambda: random.shuffle([1, 2, 3]),
    ],
)
def test_every_change_is_seen(change: Callable[[], object]) -> None:
    cache = PythonRngCache()
    before = cache.read()
    assert before == list(random.getstate())
    change()
    after = cache.read()
    assert after == list(random.getstate()) and after != before
    assert cache.read() is after  # unchanged: the cached state, no full read


def test_a_used_up_gaussian_is_seen() -> None:
    random.gauss(0.0, 1.0)  # draws two, keeps one
    cache = PythonRngCache()
    held = cache.read()
    random.gauss(0.0, 1.0)  # uses the kept one: the words stay, gauss_next changes
    assert cache.read() == list(random.getstate()) != held


def test_an_unknown_layout_reads_in_full_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(PythonRngCache, "OFFSET", PythonRngCache.OFFSET + 8)  # another interpreter's struct
    cache = PythonRngCache()
    assert not cache.usable
    first = cache.read()
    assert first == list(random.getstate()) and cache.read() is not first
    assert python_rng(cache) == python_rng() == list(random.getstate())
