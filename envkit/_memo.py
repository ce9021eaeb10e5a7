"""``by_identity``: remember a pure function's answer for the very object it was given.

A fleet's inventories read from one text share their package tuple and table (see
:mod:`envkit.inventory.read`), so per-inventory work is done once per shared object. The key is
the object's ``id``; the memo holds the object itself, so that id is not reused while remembered.
Only for immutable arguments (tuples, tables callers must not change): a value never goes stale.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["by_identity"]

T = TypeVar("T")
R = TypeVar("R")
MAX_HELD = 1024  # distinct objects remembered per function; then it starts again


def by_identity(function: Callable[[T], R]) -> Callable[[T], R]:
    memo: dict[int, tuple[Any, R]] = {}

    def remembered(arg: T) -> R:
        held = memo.get(id(arg))
        if held is not None and held[0] is arg:
            return held[1]
        value = function(arg)
        if len(memo) >= MAX_HELD:
            memo.clear()
        memo[id(arg)] = (arg, value)
        return value

    remembered.__doc__ = function.__doc__
    remembered.__name__ = function.__name__
    return remembered
