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

from envkit.audit.osv_dir import OsvDirService, parse_record
from envkit.audit.service import Dep
from envkit.drift import diff_inventories
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


# Class 12 (issue 26): versions with components of thousands of digits, TOML nested thousands deep
# and TOML integers of thousands of digits, in every reader; and the diff and the audit of whatever
# was read. Before the bounds: ValueError (4,300-digit int limit) or RecursionError tracebacks.
HUGE_VERSIONS = st.builds(
    lambda head, digits, tail: f"{head}{'9' * digits}{tail}",
    st.sampled_from(["", "1.", "2.1.", "0.post", "1!"]),
    st.integers(41, 6000),
    st.sampled_from(["", ".0", "+cu121", "rc1", ".dev0"]),
)
VERSION_TEMPLATES = {
    "pip-freeze": "numpy==1.26.4\ntorch=={v}\n",
    "conda-list": "# Name  Version  Build  Channel\nnumpy  {v}  py311h64a7726_0  conda-forge\n"
    "torch  2.1.0  py3.11_0  pytorch\n",
    "env-export": "name: x\ndependencies:\n  - numpy={v}=py311_0\n  - pip:\n    - torch=={v}\n",
    "collect-env": "PyTorch version: {v}\nPython version: 3.11.9\n[pip3] numpy=={v}\n"
    "[conda] torch  {v}  py3.11_0  pytorch\n",
    "uv-lock": 'version = 1\nrequires-python = ">=3.10"\n\n[[package]]\nname = "numpy"\nversion = "{v}"\n'
    'source = {{ registry = "https://pypi.org/simple" }}\n',
    "pylock": 'lock-version = "1.0"\ncreated-by = "x"\n[[packages]]\nname = "numpy"\nversion = "{v}"\n',
    "poetry-lock": '[[package]]\nname = "numpy"\nversion = "{v}"\noptional = false\n'
    'python-versions = ">=3.9"\nfiles = []\n',
}
TOML_TEMPLATES = {k: v for k, v in VERSION_TEMPLATES.items() if k in {"uv-lock", "pylock", "poetry-lock"}}
OTHER = parse_inventory("numpy==1.26.4\ntorch==2.1.0+cu121\n", path="other.txt", label="other")


def _read_diff_audit(text: str, fmt: str | None, tmp_path: Path) -> None:
    try:
        inventory = parse_inventory(text, path="fuzz.txt", label="fuzz", format=fmt)
    except EnvkitError as e:
        assert len(e.message) < 2000  # the message names the line, not the whole value
        return
    diff_inventories([inventory, OTHER])
    db = tmp_path / "db" / "vulns" / "numpy"
    db.mkdir(parents=True, exist_ok=True)
    (db / "PYSEC-1.json").write_text(
        json.dumps({"id": "PYSEC-1", "affected": [{"package": {"name": "numpy", "ecosystem": "PyPI"}}]})
    )
    service = OsvDirService(tmp_path / "db")
    for package in inventory.packages:
        with contextlib.suppress(EnvkitError):
            service.query(Dep(package.name, package.version))


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(fmt=st.sampled_from(sorted(VERSION_TEMPLATES)), version=HUGE_VERSIONS, forced=st.booleans())
def test_versions_of_thousands_of_digits_in_every_reader(
    tmp_path: Path, fmt: str, version: str, forced: bool
) -> None:
    _read_diff_audit(VERSION_TEMPLATES[fmt].format(v=version), fmt if forced else None, tmp_path)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(
    fmt=st.sampled_from(sorted(TOML_TEMPLATES)),
    depth=st.integers(500, 20_000),
    opener=st.sampled_from(["[", "{ a = "]),
    digits=st.integers(4301, 9000),
    where=st.sampled_from(["nest", "int-key", "int-version"]),
)
def test_hostile_toml_in_every_toml_reader(
    tmp_path: Path, fmt: str, depth: int, opener: str, digits: int, where: str
) -> None:
    text = TOML_TEMPLATES[fmt].format(v="1.0")
    if where == "nest":
        closer = "]" if opener == "[" else " }"
        text = f"x = {opener * depth}1{closer * depth}\n" + text
    elif where == "int-key":
        text = f"x = {'9' * digits}\n" + text
    else:
        text = text.replace('version = "1.0"', f"version = {'9' * digits}")
    _read_diff_audit(text, fmt, tmp_path)
