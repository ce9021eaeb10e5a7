"""Bounded fuzzing (Hypothesis) of the loaders of untrusted input: the spec loader, every inventory
reader and the advisory record parser. Whatever the bytes, the only exceptions are envkit's own
errors (exit 2/3 with a message), never a traceback. Bounded: a fixed number of examples each,
derandomized so that CI runs are reproducible."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envkit.audit.osv_dir import parse_record
from envkit.errors import EnvkitError
from envkit.inventory import FORMATS, parse_inventory
from envkit.spec.load import load_spec

from .conftest import REPO

FUZZ = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
YAMLISH = st.text(
    alphabet=st.sampled_from([*list("abc:-[]{}&*!|>'\"#%@`?,\n\t 0123456789.=<~\\"), "é", "\x00", "\x1b"]),
    max_size=300,
)
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=40), st.dates()
)
TREES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=25,
)
SPEC_KEYS = [
    "name",
    "description",
    "python",
    "cuda",
    "frameworks",
    "conda",
    "pip",
    "channels",
    "platforms",
    "installer",
    "base_image",
    "mirrors",
    "env",
    "offline",
    "audit",
]
SPEC_TREES = st.dictionaries(st.sampled_from(SPEC_KEYS), TREES, max_size=8)
REAL_SPEC = (REPO / "environments" / "cpu-torch.yaml").read_text()
INVENTORIES = sorted((REPO / "tests" / "data" / "inventories").glob("*.*"))


def _mutate(text: str, data: st.DataObject) -> str:
    for _ in range(data.draw(st.integers(0, 4))):
        at = data.draw(st.integers(0, len(text)))
        cut = data.draw(st.integers(0, 20))
        text = text[:at] + data.draw(st.text(max_size=12)) + text[at + cut :]
    return text


def _spec(tmp_path: Path, text: str) -> None:
    path = tmp_path / "environments" / "fuzz.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, "utf-8", errors="surrogatepass")
    with contextlib.suppress(EnvkitError):
        load_spec(path)


@FUZZ
@given(text=YAMLISH)
def test_spec_loader_on_yaml_like_text(tmp_path: Path, text: str) -> None:
    _spec(tmp_path, text)


@FUZZ
@given(tree=SPEC_TREES)
def test_spec_loader_on_wrongly_typed_specs(tmp_path: Path, tree: dict[str, Any]) -> None:
    _spec(tmp_path, yaml.safe_dump(tree, allow_unicode=True))


@FUZZ
@given(data=st.data())
def test_spec_loader_on_mutated_real_specs(tmp_path: Path, data: st.DataObject) -> None:
    _spec(tmp_path, _mutate(REAL_SPEC, data))


def _inventory(text: str, fmt: str | None) -> None:
    with contextlib.suppress(EnvkitError):
        parse_inventory(text, path="fuzz.txt", label="fuzz", format=fmt)


@FUZZ
@given(text=YAMLISH, fmt=st.sampled_from([None, *FORMATS]))
def test_inventory_readers_on_arbitrary_text(text: str, fmt: str | None) -> None:
    _inventory(text, fmt)


@FUZZ
@given(tree=TREES, fmt=st.sampled_from([None, *FORMATS]))
def test_inventory_readers_on_json_and_yaml_documents(tree: Any, fmt: str | None) -> None:
    _inventory(json.dumps(tree, default=str), fmt)
    _inventory(yaml.safe_dump(tree, allow_unicode=True), fmt)


@pytest.mark.parametrize("path", INVENTORIES, ids=lambda p: p.name)
@settings(max_examples=25, deadline=None, derandomize=True)
@given(data=st.data())
def test_inventory_readers_on_mutated_real_files(path: Path, data: st.DataObject) -> None:
    text = path.read_text("utf-8")
    _inventory(_mutate(text, data), data.draw(st.sampled_from([None, *FORMATS])))


RECORD = {
    "id": st.one_of(st.text(max_size=10), SCALARS),
    "aliases": TREES,
    "summary": TREES,
    "withdrawn": TREES,
    "severity": TREES,
    "database_specific": TREES,
    "references": TREES,
    "affected": st.one_of(
        TREES,
        st.lists(
            st.fixed_dictionaries(
                {
                    "package": st.one_of(
                        TREES, st.fixed_dictionaries({"name": SCALARS, "ecosystem": st.just("PyPI")})
                    ),
                    "ranges": TREES,
                    "versions": TREES,
                }
            ),
            max_size=3,
        ),
    ),
}


@FUZZ
@given(record=st.fixed_dictionaries({}, optional=RECORD))
def test_advisory_parser_on_hostile_records(record: dict[str, Any]) -> None:
    with contextlib.suppress(EnvkitError):
        parse_record(record, "fuzz.json")
