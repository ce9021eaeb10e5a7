"""PythonRngCache, NumpyRngCache: the generators read in full only when they changed, never stale."""

from __future__ import annotations

import ctypes
import random
from collections.abc import Callable
from typing import Any

import pytest

from envkit.guard import adapter
from envkit.guard.adapter import NumpyRngCache, PythonRngCache, RngState, numpy_rng, python_rng


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
        lambda: [random.getrandbits(32) for _ in range(624)],  # the words regenerated, the index back
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


@pytest.mark.parametrize(
    "change",
    [
        lambda np: np.random.rand(),
        lambda np: np.random.seed(1234),  # reseeds the same bit generator: the view made once reads it
        lambda np: np.random.set_state(np.random.RandomState(7).get_state()),
        lambda np: np.random.standard_normal(),  # legacy gauss: a cached value beside the words
        lambda np: np.random.shuffle([1, 2, 3]),
        lambda np: np.random.randint(0, 2**32, 624, dtype="uint32"),  # the words regenerated, pos back
    ],
)
def test_every_numpy_change_is_seen(change: Callable[[Any], object]) -> None:
    np = pytest.importorskip("numpy")
    np.random.seed(0)  # no cached Gaussian (a state holding one is read in full: it would prove nothing)
    cache = NumpyRngCache()
    rng = RngState()
    numpy_rng(rng, cache)
    before = (rng.arrays["numpy.keys"].copy(), list(rng.values["numpy"]))
    change(np)
    after = RngState()
    numpy_rng(after, cache)
    _, keys, pos, has_gauss, cached = np.random.get_state()
    assert (after.arrays["numpy.keys"] == keys).all()
    assert after.values["numpy"] == ["MT19937", int(pos), int(has_gauss), float(cached)]
    assert (before[0] != keys).any() or before[1] != after.values["numpy"]
    again = RngState()
    numpy_rng(again, cache)
    assert again.values["numpy"] == after.values["numpy"]  # unchanged: the same state again


def test_a_numpy_layout_that_does_not_match_reads_in_full_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    np = pytest.importorskip("numpy")
    np.random.seed(0)
    zeros = (ctypes.c_uint32 * 625)()  # not the generator's words: another numpy's struct
    monkeypatch.setattr(adapter, "_mt_words", lambda address: memoryview(zeros).cast("B").cast("I"))
    cache = NumpyRngCache()
    first = cache.read(np)
    assert cache.words is None and cache.read(np) is not first  # each read a full one
    assert (cache.read(np)[1] == np.random.get_state()[1]).all()


@pytest.mark.parametrize("word", [3, 100, 311, 500, 622])
def test_a_python_state_set_by_hand_differing_in_one_other_word_is_read(word: int) -> None:
    """The position and the five words the old check compared unchanged, one other word changed:
    the old cache gave the state before (a stale RNG in the dump, a replay that lies)."""
    random.seed(5)
    cache = PythonRngCache()
    before = cache.read()
    version, words, gauss = random.getstate()
    changed = list(words)
    changed[word] ^= 1
    random.setstate((version, tuple(changed), gauss))
    after = cache.read()
    assert after == list(random.getstate()) and after[1][word] == changed[word] != before[1][word]


@pytest.mark.parametrize("word", [3, 100, 311, 500, 622])
def test_a_numpy_state_set_by_hand_differing_in_one_other_word_is_read(word: int) -> None:
    np = pytest.importorskip("numpy")
    np.random.seed(5)
    cache = NumpyRngCache()
    held = RngState()
    numpy_rng(held, cache)
    name, keys, pos, has_gauss, cached = np.random.get_state()
    keys = keys.copy()
    keys[word] ^= 1
    np.random.set_state((name, keys, pos, has_gauss, cached))
    now = RngState()
    numpy_rng(now, cache)
    assert (now.arrays["numpy.keys"] == keys).all() and now.arrays["numpy.keys"][word] != held.arrays[
        "numpy.keys"
    ][word]


def test_a_python_view_that_stops_agreeing_turns_the_fast_path_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """The self-check at each full read: a view that is not the state read is dropped for getstate()."""
    cache = PythonRngCache()
    assert cache.usable
    cache.read()
    zeros = (ctypes.c_uint32 * 625)()
    cache.words = memoryview(zeros).cast("B").cast("I")  # what a moved or different struct would show
    random.random()
    assert cache.read() == list(random.getstate()) and not cache.usable
    assert cache.read() == list(random.getstate())
