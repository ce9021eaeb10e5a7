"""Issue 24, class 5: no validator passes a value with a trailing newline.

In Python's ``re`` a pattern ending in ``$`` also matches before a final ``\\n``: ``NAME_RE`` let
``envkit init --name $'evil\\n'`` write ``environments/evil\\n.yaml``. Every end-anchored pattern
of envkit is collected here by importing every module; none may end in a bare ``$``, and each one
(fed samples drawn from itself by hypothesis) must refuse the sample plus ``\\n``. The pydantic
field patterns (Rust regex: ``$`` is the end of the text) are checked the same way.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

import envkit
from envkit.errors import EnvkitError

# Parsers of one already-stripped line whose grammar itself allows trailing whitespace (\s*):
# they read text, they validate nothing that becomes a name or a path.
LINE_PARSERS = {
    "envkit.inventory._collect.REQUIREMENT",
    "envkit.inventory.collect_env.SECTION",
    "envkit.inventory.readers_data._DEP",  # "NAME VERSION BUILD": whitespace separates its fields
    "envkit.inventory.readers_text._TABLE_HEADER",
    "envkit.inventory.readers_text._SEPARATOR",
    "envkit.inventory.readers_table._HEADER",  # pip list's columns: one stripped line each
    "envkit.inventory.readers_table._ROW",
    "envkit.inventory.readers_table._RULE",
    "envkit.spec.check._CONDA_PIN",
    # `envkit init --from` readers: their input lines were refused before when they hold a newline
    # or a control character (init.adopted.hostile), and whitespace separates their fields
    "envkit.adopt.sources.conda_env._EXACT",
    "envkit.adopt.sources.conda_env._SPEC",
    "envkit.adopt.sources.dockerfile._INSTRUCTION",  # DOTALL: a joined multi-line instruction
    "envkit.adopt.sources.requirements._URL_LINE",  # a classifier (prefix OR suffix), not a validator
}


def _modules() -> list[Any]:
    out = []
    for info in pkgutil.walk_packages(envkit.__path__, "envkit."):
        if ".payload" in info.name or info.name.endswith("__main__"):
            continue  # the payload runs as a script; __main__ runs the CLI
        with warnings.catch_warnings():  # guard's framework adapters import paddle, which warns
            warnings.simplefilter("ignore")
            out.append(importlib.import_module(info.name))
    return out


def _patterns() -> dict[str, re.Pattern[str]]:
    found: dict[int, tuple[str, re.Pattern[str]]] = {}
    for module in _modules():
        for key, value in vars(module).items():
            if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                found.setdefault(id(value), (f"{module.__name__}.{key}", value))
    return dict(found.values())


PATTERNS = _patterns()
END_ANCHORED = {name: p for name, p in PATTERNS.items() if p.pattern.endswith("\\Z")}


def _model_patterns() -> dict[str, str]:
    out: dict[str, str] = {}
    seen: list[type[BaseModel]] = [BaseModel]
    while seen:
        cls = seen.pop()
        seen += cls.__subclasses__()
        if not cls.__module__.startswith("envkit."):
            continue
        for field, info in cls.model_fields.items():
            for meta in info.metadata:
                pattern = getattr(meta, "pattern", None)
                if isinstance(pattern, str) and pattern.endswith("$"):  # end-anchored validators
                    out[f"{cls.__module__}.{cls.__name__}.{field}"] = pattern
    return out


MODEL_PATTERNS = _model_patterns()


def test_the_collection_found_the_validators() -> None:
    assert len(PATTERNS) > 50 and len(END_ANCHORED) > 30  # the walk really imported envkit
    from envkit.fleet import slurm
    from envkit.spec import models

    collected = {id(p) for p in END_ANCHORED.values()}
    for pattern in (models.NAME_RE, models._URL_RE, models._IMAGE_RE, slurm._NAME):
        assert id(pattern) in collected, pattern.pattern
    assert len(MODEL_PATTERNS) >= 5


def test_no_pattern_ends_in_a_bare_dollar() -> None:
    """``$`` without MULTILINE accepts a final newline: every end anchor is ``\\Z``."""
    loose = [
        name
        for name, p in PATTERNS.items()
        if p.pattern.endswith("$") and not p.pattern.endswith("\\$") and not p.flags & re.MULTILINE
    ]
    escaped_then_anchor = [n for n, p in PATTERNS.items() if p.pattern.endswith("\\\\$")]
    assert loose + escaped_then_anchor == []


# Deny-lists: they say what to hide (a secret query parameter); matching a trailing newline too is
# the safe side, so their ``\s*\Z`` is deliberate.
DENY_LISTS = {"envkit.adopt.evidence._SECRET_QUERY"}


@pytest.mark.parametrize("name", sorted(set(END_ANCHORED) - LINE_PARSERS - DENY_LISTS))
def test_every_validator_refuses_a_trailing_newline(name: str) -> None:
    pattern = END_ANCHORED[name]

    @settings(max_examples=25, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.from_regex(pattern, fullmatch=True))
    def check(sample: str) -> None:
        assert pattern.match(sample), sample
        for tail in ("\n", "\r\n", "\nevil"):
            assert pattern.match(sample + tail) is None, (sample, tail)

    check()


@pytest.mark.parametrize("name", sorted(MODEL_PATTERNS))
def test_every_model_field_pattern_refuses_a_trailing_newline(name: str) -> None:
    source = MODEL_PATTERNS[name]
    adapter: TypeAdapter[str] = TypeAdapter(Annotated[str, Field(pattern=source)])

    @settings(max_examples=15, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.from_regex(source, fullmatch=True).filter(lambda s: s == s.strip()))
    def check(sample: str) -> None:
        adapter.validate_python(sample)
        with pytest.raises(ValidationError):
            adapter.validate_python(sample + "\n")

    check()


def _init(root: Path) -> Callable[[str], object]:
    from envkit.init.repo import init_repo

    return lambda name: init_repo(root, "torch", "cpu", name=name)


def _refusers(tmp_path: Path) -> dict[str, Callable[[str], object]]:
    from envkit.fleet.slurm import _check_name
    from envkit.store import layout

    return {
        "envkit init --name": _init(tmp_path),
        "run id": layout.check_run_id,
        "slurm partition": lambda v: _check_name(v, "partition"),
    }


@pytest.mark.parametrize("what", ["envkit init --name", "run id", "slurm partition"])
@pytest.mark.parametrize("tail", ["\n", "\r\n", "\nall:\n\ttouch /tmp/pwned"])
def test_names_with_a_newline_are_refused_end_to_end(tmp_path: Path, what: str, tail: str) -> None:
    good = {"envkit init --name": "evil", "run id": "nightly", "slurm partition": "debug"}
    refuse = _refusers(tmp_path)[what]
    refuse(good[what])  # the value itself is fine
    with pytest.raises(EnvkitError):
        refuse(good[what] + tail)
    assert not any("\n" in p.name for p in tmp_path.rglob("*"))
    mk = tmp_path / "envkit.mk"
    assert not mk.exists() or "pwned" not in mk.read_text()
