"""Load specs from YAML: every problem of a file at once, each with its line."""

from __future__ import annotations

import datetime
import difflib
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from envkit._io import TooLarge, read_text_bounded
from envkit.catalog import Catalog, load_catalog
from envkit.errors import Problem, SpecError
from envkit.project import SPEC_DIR, display_path, find_specs, image_dir, resolve_spec_path
from envkit.spec.check import check_against_catalog
from envkit.spec.models import Spec, StrictModel
from envkit.spec.provenance import lost_from_source, source_facts
from envkit.spec.resolve import ResolvedSpec, resolve_spec
from envkit.spec.yamlsrc import MAX_SPEC_BYTES, Located, load_located

# SPEC_DIR, find_specs, image_dir and resolve_spec_path live in envkit.project (the layout); named here
# too until their importers move.
__all__ = ["SPEC_DIR", "LoadedSpec", "find_specs", "image_dir", "load_spec", "resolve_spec_path", "spec_hash"]

_VERSION_KEYS = {("python",), ("cuda",), ("frameworks", "torch"), ("frameworks", "paddle")}


@dataclass(frozen=True)
class LoadedSpec:
    """A validated spec, the file it came from, its sha256, the catalog's facts about it
    (:class:`~envkit.spec.resolve.ResolvedSpec`, looked up once) and the warnings of loading it."""

    spec: Spec
    path: Path
    sha256: str
    resolved: ResolvedSpec = field(compare=False, repr=False)
    warnings: tuple[str, ...] = ()

    @property
    def display_path(self) -> str:
        return display_path(self.path)


_LATER_FIELDS: dict[str, object] = {
    "cuda_runtime": "image",
    "gpus": [],
    "drivers": [],
}  # field -> its default (JSON)


def spec_hash(spec: Spec) -> str:
    """sha256 of the normalized model: stable under key order, comments and formatting.

    Fields added after specs were hashed count only when set off their default, so a new field
    leaves every existing spec's hash (and the labels and images made from it) unchanged.
    """
    data = spec.model_dump(mode="json")
    for key, default in _LATER_FIELDS.items():
        if data.get(key) == default:
            del data[key]
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def load_spec(path: Path, catalog: Catalog | None = None, *, strict: bool = False) -> LoadedSpec:
    """Parse and validate one spec file; raise :class:`SpecError` with all problems.

    ``strict``: what the catalog cannot check (an unknown framework release) is an error, not a warning.
    """
    filename = display_path(path)
    try:
        text = read_text_bounded(path, MAX_SPEC_BYTES)
    except TooLarge as e:
        raise SpecError(
            [Problem(filename, None, None, f"larger than {e.limit} bytes: not a spec", "check the path")]
        ) from e
    except UnicodeDecodeError as e:
        raise SpecError([Problem(filename, None, None, f"not UTF-8 text (byte {e.start})")]) from e
    except OSError as e:
        raise SpecError([Problem(filename, None, None, f"cannot read: {e.strerror or e}")]) from e
    located, problems = load_located(text, filename)
    if located is None:
        raise SpecError(problems)
    if not isinstance(located.data, dict):
        raise SpecError(
            [Problem(filename, 1, None, "a spec is a mapping of keys such as name, python, cuda")]
        )
    version_problems = _quoted_versions(located, filename)
    problems += version_problems
    spec: Spec | None = None
    try:
        spec = Spec.model_validate(located.data)
    except ValidationError as e:
        problems += _pydantic_problems(e, located, filename, {p.field for p in version_problems})
    if spec is None:
        raise SpecError(problems or [Problem(filename, None, None, "not a valid spec")])
    if spec.name != path.stem:
        problems.append(
            Problem(
                filename,
                located.line_of(("name",)),
                "name",
                f"name {spec.name!r} differs from the file name {path.stem!r}",
                f"rename the file to {spec.name}.yaml or set name: {path.stem}",
            )
        )
    catalog = catalog or load_catalog()
    errors, warnings = check_against_catalog(spec, catalog, located, filename, strict=strict)
    warnings = [*warnings, *lost_from_source(spec, source_facts(text))]  # an adopted spec's header
    problems += errors
    if problems:
        raise SpecError(problems)
    return LoadedSpec(
        spec=spec,
        path=path,
        sha256=spec_hash(spec),
        resolved=resolve_spec(spec, catalog),
        warnings=tuple(warnings),
    )


def _quoted_versions(located: Located, filename: str) -> list[Problem]:
    """Versions are quoted strings: ``python: 3.10`` is the float 3.1, ``yes`` a boolean, a date a date."""
    problems = []
    for key in sorted(_VERSION_KEYS):
        value: Any = located.data
        for part in key:
            value = value.get(part) if isinstance(value, dict) else None
        if value is None or isinstance(value, str):
            continue
        if isinstance(value, int | float) and not isinstance(value, bool):
            message = f"version {value!r} is a number, not a string (YAML reads 3.10 as 3.1)"
            hint = f'quote it: {key[-1]}: "{value}"'
        else:
            kind = _YAML_KINDS.get(type(value), type(value).__name__)
            message = f"version is {kind}, not a string"
            hint = f'write a quoted version, e.g. {key[-1]}: "{_EXAMPLES[key[-1]]}"'
        problems.append(Problem(filename, located.line_of(key), ".".join(key), message, hint))
    return problems


_YAML_KINDS: dict[type, str] = {
    bool: "a boolean (YAML reads yes/no/on/off/true/false as booleans)",
    list: "a list",
    dict: "a mapping",
    datetime.date: "a date (YAML reads 2024-01-01 as a date)",
    datetime.datetime: "a timestamp",
}
_EXAMPLES = {"python": "3.11", "cuda": "12.1", "torch": "2.5.1", "paddle": "2.6.2"}


def _pydantic_problems(
    error: ValidationError, located: Located, filename: str, reported: set[str | None]
) -> list[Problem]:
    problems = []
    for item in error.errors():
        loc = tuple(item["loc"])
        field = ".".join(str(p) for p in loc)
        if field in reported and item["type"] == "string_type":
            continue  # reported by _quoted_versions with a better hint
        message = str(item["msg"]).removeprefix("Value error, ")
        hint = None
        if item["type"] == "extra_forbidden":
            message = f"unknown key {loc[-1]!r}"
            hint = _nearest_key(loc)
        elif item["type"] == "missing":
            message = f"required key {loc[-1]!r} is missing"
        problems.append(Problem(filename, located.line_of(loc), field, message, hint))
    return problems


def _nearest_key(loc: tuple[Any, ...]) -> str:
    owner: type[StrictModel] = Spec
    for part in loc[:-1]:
        info = owner.model_fields.get(str(part))
        annotation = getattr(info, "annotation", None)
        if isinstance(annotation, type) and issubclass(annotation, StrictModel):
            owner = annotation
    valid = sorted(owner.model_fields)
    close = difflib.get_close_matches(str(loc[-1]), valid, n=2)
    if close:
        return f"did you mean {' or '.join(close)}? valid keys: {', '.join(valid)}"
    return f"valid keys: {', '.join(valid)}"
