"""``too_deep`` (the depth bound of every JSON input) judges as the plain walk over every value does."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from envkit._io import load_json_bounded, too_deep


def _walk(value: Any, limit: int) -> bool:
    """The plain definition: a value at depth > ``limit`` (the top is 1), every value visited."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack += [(v, depth + 1) for v in item.values()]
        elif isinstance(item, list):
            stack += [(v, depth + 1) for v in item]
    return False


def _random_value(rng: random.Random, depth: int) -> Any:
    kind = rng.random()
    if depth <= 0 or kind < 0.3:
        return rng.choice([1, "s", None, 2.5, True])
    children = [_random_value(rng, depth - rng.randint(1, 2)) for _ in range(rng.randint(0, 3))]
    if kind < 0.65:
        return children
    return {f"k{i}": c for i, c in enumerate(children)}


HOSTILE = [
    [],
    {},
    1,
    "text",
    [[[]]],
    [[[1]]],
    [[], [[]], [[[0]]]],
    {"a": {"b": {"c": {}}}},
    {"a": {"b": {"c": {"d": None}}}},
    json.loads("[" * 31 + "]" * 31),
    json.loads("[" * 32 + "]" * 32),
    json.loads("[" * 32 + "1" + "]" * 32),
    json.loads("[" * 33 + "]" * 33),
    json.loads('{"a": ' * 31 + "{}" + "}" * 31),
    [json.loads("[" * 31 + '"x"' + "]" * 31), 1],
]


@pytest.mark.parametrize("limit", [1, 2, 3, 4, 32])
@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_shapes_as_the_plain_walk(value: Any, limit: int) -> None:
    assert too_deep(value, limit) is _walk(value, limit)


def test_random_documents_as_the_plain_walk() -> None:
    rng = random.Random(35)
    for _ in range(2000):
        value = _random_value(rng, rng.randint(0, 9))
        for limit in (1, 3, 5, 7):
            assert too_deep(value, limit) is _walk(value, limit), (value, limit)


def test_load_json_bounded_refuses_one_level_past_the_limit() -> None:
    assert load_json_bounded("[" * 3 + "]" * 3, 4) == [[[]]]
    assert load_json_bounded("[[[1]]]", 4) == [[[1]]]
    with pytest.raises(ValueError, match="nested deeper than 3 levels"):
        load_json_bounded("[[[1]]]", 3)
