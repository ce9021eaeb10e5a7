"""Provenance of a built image: an in-toto Statement v1 with a SLSA Provenance v1 predicate.

Formats: https://github.com/in-toto/attestation/blob/main/spec/v1/statement.md and
https://slsa.dev/spec/v1.0/provenance. SLSA v1 calls the v0.2 "materials" ``resolvedDependencies``:
the base image (by image ID), the lock (by its set digest, ``io.envkit.lock-sha256``), the spec,
the installers (their sha256: the catalog's Miniconda/Miniforge/micromamba file, or the pack's
py-rattler wheel) and envkit itself (by version). The SBOM is a byproduct, by sha256. Written
to ``.envkit/provenance/NAME-<image id 12>.intoto.json`` after every build that built.

:func:`read_provenance` reads one back for ``envkit verify``, bounded (size, depth) and strictly:
a truncated, huge or deeply nested file is an :class:`~envkit.errors.UsageError` naming it.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envkit import __version__
from envkit._atomic import state_dir, write_text_atomic
from envkit._io import TooLarge, load_json_bounded, open_regular, read_limited
from envkit.errors import UsageError

__all__ = [
    "BUILD_TYPE",
    "MAX_PROVENANCE_BYTES",
    "PREDICATE_TYPE",
    "STATEMENT_TYPE",
    "Material",
    "materials_of",
    "provenance_path",
    "provenance_statement",
    "read_provenance",
    "write_provenance",
]

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://slsa.dev/provenance/v1"
BUILD_TYPE = "https://envkit.invalid/build/docker/v1"  # envkit's build type (no public URL yet)
MAX_PROVENANCE_BYTES = 4 << 20
_MAX_DEPTH = 32


@dataclass(frozen=True)
class Material:
    """One resolved dependency: a name, a URI and its sha256 (hex) when known."""

    name: str
    uri: str
    sha256: str | None = None

    def to_json(self) -> dict[str, object]:
        found: dict[str, object] = {"name": self.name, "uri": self.uri}
        if self.sha256:
            found["digest"] = {"sha256": self.sha256.removeprefix("sha256:")}
        return found


def _time(when: dt.datetime) -> str:
    return when.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def provenance_statement(
    *,
    name: str,
    image_id: str,
    external: Mapping[str, object],
    internal: Mapping[str, object],
    materials: Sequence[Material],
    byproducts: Sequence[Material],
    started: dt.datetime,
    finished: dt.datetime,
) -> dict[str, object]:
    """The statement for image ``envkit/NAME`` with ``image_id`` (``sha256:...``)."""
    envkit = Material("envkit", f"pkg:pypi/envkit@{__version__}")
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": f"envkit/{name}", "digest": {"sha256": image_id.removeprefix("sha256:")}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "buildDefinition": {
                "buildType": BUILD_TYPE,
                "externalParameters": dict(external),
                "internalParameters": dict(internal),
                "resolvedDependencies": [m.to_json() for m in [*materials, envkit]],
            },
            "runDetails": {
                "builder": {"id": envkit.uri, "version": {"envkit": __version__}},
                "metadata": {"startedOn": _time(started), "finishedOn": _time(finished)},
                "byproducts": [m.to_json() for m in byproducts],
            },
        },
    }


def provenance_path(root: Path, name: str, image_id: str) -> Path:
    return state_dir(root, "provenance") / f"{name}-{image_id.removeprefix('sha256:')[:12]}.intoto.json"


def write_provenance(root: Path, name: str, statement: Mapping[str, Any]) -> Path:
    subject = statement["subject"][0]["digest"]["sha256"]
    path = provenance_path(root, name, subject)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(statement, indent=2, sort_keys=True) + "\n", within=root)
    return path


def read_provenance(path: Path) -> dict[str, Any]:
    """A provenance statement written by envkit, checked for shape; errors name the file and field.

    Read bounded (at most :data:`MAX_PROVENANCE_BYTES` + 1 bytes of a regular file: no link, FIFO
    or device; a sparse file of any size costs no more) and nested at most ``_MAX_DEPTH`` levels;
    every field :func:`materials_of` and ``envkit verify`` use has its shape checked, so a
    ``predicate`` that is a string is a clear error, not a traceback.
    """
    hint = "rebuild the image (`envkit build NAME --no-cache`) to write its provenance again"
    try:
        with open_regular(path) as fh:
            raw = read_limited(fh, MAX_PROVENANCE_BYTES, path)
    except TooLarge:
        raise UsageError(
            f"{path}: larger than a provenance statement can be ({MAX_PROVENANCE_BYTES} bytes)", hint=hint
        ) from None
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror or e}", hint=hint) from None
    try:
        data = load_json_bounded(raw, _MAX_DEPTH)
    except ValueError as e:
        reason = str(e) if str(e).startswith(("invalid", "nested")) else f"invalid JSON: {e}"
        raise UsageError(f"{path}: {reason}: truncated or not an envkit provenance", hint=hint) from None
    if (
        not isinstance(data, dict)
        or data.get("_type") != STATEMENT_TYPE
        or data.get("predicateType") != PREDICATE_TYPE
    ):
        raise UsageError(f"{path}: not an in-toto statement with a SLSA provenance v1 predicate", hint=hint)
    subject = data.get("subject")
    first = subject[0] if isinstance(subject, list) and subject else None
    digest = first.get("digest") if isinstance(first, dict) else None
    if not (isinstance(digest, dict) and isinstance(digest.get("sha256"), str)):
        raise UsageError(f"{path}: subject[0].digest.sha256 is missing", hint=hint)
    problem = _shape_problem(data)
    if problem:
        raise UsageError(f"{path}: {problem}: not an envkit provenance", hint=hint)
    return data


def _shape_problem(data: Mapping[str, object]) -> str | None:
    """What is of the wrong shape in the fields verify reads (None: all fine)."""
    predicate = data.get("predicate")
    if not isinstance(predicate, dict):
        return f"predicate is a {type(predicate).__name__}, not an object"
    definition = predicate.get("buildDefinition")
    if not isinstance(definition, dict):
        return f"predicate.buildDefinition is a {type(definition).__name__}, not an object"
    deps = definition.get("resolvedDependencies", [])
    if not isinstance(deps, list):
        return f"predicate.buildDefinition.resolvedDependencies is a {type(deps).__name__}, not a list"
    for number, dep in enumerate(deps):
        where = f"predicate.buildDefinition.resolvedDependencies[{number}]"
        if not isinstance(dep, dict):
            return f"{where} is a {type(dep).__name__}, not an object"
        if not isinstance(dep.get("name", ""), str):
            return f"{where}.name is not text"
        digest = dep.get("digest", {})
        if not isinstance(digest, dict) or not all(isinstance(v, str) for v in digest.values()):
            return f"{where}.digest is not an object of text values"
    return None


def materials_of(statement: Mapping[str, object]) -> dict[str, str]:
    """``name -> sha256`` of the statement's resolved dependencies (those with a digest).

    Tolerant of any shape (what :func:`read_provenance` refuses is simply no material here).
    """
    found: dict[str, str] = {}
    predicate = statement.get("predicate")
    definition = predicate.get("buildDefinition") if isinstance(predicate, dict) else None
    deps = definition.get("resolvedDependencies") if isinstance(definition, dict) else None
    for dep in deps if isinstance(deps, list) else []:
        if isinstance(dep, dict) and isinstance(dep.get("digest"), dict):
            sha = dep["digest"].get("sha256")
            if isinstance(sha, str):
                found[str(dep.get("name"))] = sha
    return found
