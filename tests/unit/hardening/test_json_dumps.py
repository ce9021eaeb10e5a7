"""``envkit._json.dumps`` is ``json.dumps(value, indent=N, sort_keys=True)``, byte for byte.

Hostile values: every JSON scalar at its edges (NaN, infinities, -0.0, huge integers, control
characters, lone surrogates, non-ASCII text), empty and deep containers, tuples, subclasses of
the JSON types (an IntEnum, a str subclass), non-text keys, keys that do not sort, objects json
cannot encode and a circular reference: the same text, or the same exception, as ``json.dumps``.
"""

from __future__ import annotations

import enum
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envkit import _json

BOUNDED = settings(max_examples=300, deadline=None, derandomize=True)

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=10),
)
TREES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=40,
)


class Code(enum.IntEnum):
    OK = 0
    FINDINGS = 1


class Text(str):
    __slots__ = ()


def _same(value: Any, indent: int = 2) -> None:
    try:
        expected = json.dumps(value, indent=indent, sort_keys=True)
    except (TypeError, ValueError) as e:
        with pytest.raises(type(e)):
            _json.dumps(value, indent)
        return
    assert _json.dumps(value, indent) == expected


@BOUNDED
@given(TREES, st.sampled_from([0, 1, 2, 4]))
def test_any_json_tree_is_the_same_text(value: Any, indent: int) -> None:
    _same(value, indent)


deep: list[Any] = []
cursor = deep
for _ in range(200):
    cursor.append([])
    cursor = cursor[0]
circular: dict[str, Any] = {"a": 1}
circular["self"] = circular

HOSTILE: list[Any] = [
    {},
    [],
    (),
    {"": ""},
    [[], {}, [[]], {"a": {}}],
    float("nan"),
    [float("inf"), float("-inf"), -0.0, 1e308, 5e-324, 0.1 + 0.2],
    10**200,
    -(10**200),
    True,
    [True, False, None, 0, 1, -1],
    "\x00\x1f\x7f\u2028\u2029\ud800 lone surrogate \U0001f600 …",
    '"quoted" \\back\\slash\t\n\r',
    {"b": 1, "a": 2, "A": 3, "é": 4, "\x00": 5, " ": 6},
    {"outer": {"z": [1, {"y": None}], "a": ()}},
    deep,
    (1, (2, (3,))),
    Code.FINDINGS,  # an IntEnum: json writes its int
    {"exit": Code.OK},
    Text("a str subclass"),
    {Text("k"): "a str-subclass key"},
    {7: "an int key", 2.5: "a float key", None: "a None key", False: "a bool key"},
    {1: "a", "b": 2},  # keys that do not sort: TypeError
    {"a": object()},  # not JSON: TypeError
    {"a": {1, 2}},
    [b"bytes"],
    circular,  # ValueError: circular reference
]


@pytest.mark.parametrize("value", HOSTILE, ids=lambda v: type(v).__name__)
def test_hostile_values_are_the_same_text_or_the_same_error(value: Any) -> None:
    _same(value)


def test_a_report_envelope_is_the_same_text() -> None:
    report = {
        "runs": [
            {
                "results": [
                    {"ruleId": f"PYSEC-{i}", "level": "error", "message": {"text": f"pkg {i}: …"}, "line": i}
                    for i in range(300)
                ],
                "properties": {"provenance": {"database": "/db"}, "dataAge": ""},
            }
        ],
        "version": "2.1.0",
    }
    _same(report)
    assert _json.dumps(report).count("\n") == json.dumps(report, indent=2, sort_keys=True).count("\n") > 1000
