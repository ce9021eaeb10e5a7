"""What a fleet probe writes into ``run.json`` and what its task accepts from it: shape-checked, typed.

The store's files are hostile input; they are read bounded and owned by :mod:`envkit.store.reads`.
On top of that:

- the probe options are an allow-list of typed fields with the CLI's own ranges and choices;
  an environment (``env``) is never taken from a file: the task's environment is the scheduler's;
- the image is a ``REPO@sha256:…`` reference or an image id, its tar only ``STORE/images/<id>.tar``;
- a task runs nothing that another user could have written
  (:func:`envkit.store.reads.check_owned`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envkit.errors import FleetError
from envkit.probe.runner import FRAMEWORKS, WORKLOADS, ProbeOptions
from envkit.store.layout import MANIFEST, check_run_id
from envkit.store.manifest import RunManifest
from envkit.store.reads import STORE_HINT
from envkit.store.runs import write_json

__all__ = [
    "FleetImage",
    "ProbePlan",
    "RunLayout",
    "image_from_json",
    "image_tar_path",
    "options_from_json",
    "options_to_json",
    "parse_layout",
    "parse_manifest",
    "write_manifest",
]

_HEX64 = re.compile(r"[0-9a-f]{64}")
_DIGEST_REF = re.compile(r"[a-z0-9][a-z0-9._:/-]{0,254}@sha256:[0-9a-f]{64}")

# field -> (type, allowed values or (min, max)); the CLI's choices and ranges (cli/probe_cmd.py)
_CHOICES: dict[str, tuple[str, ...]] = {
    "mode": ("strict", "default"),
    "dtype": ("float32", "float64"),
    "device": ("auto", "cpu", "cuda"),
    "autocast": ("none", "bf16"),
    "poison": ("none", "input", "lr"),
}
_INTS: dict[str, tuple[int, int]] = {
    "steps": (1, 100_000),
    "seed": (0, 2**63 - 1),
    "poison_step": (0, 100_000),
    "threads": (0, 4096),
}
_FLOATS: dict[str, tuple[float, float]] = {"budget_s": (0.0, 86_400.0)}  # written only when set
_BOOLS = ("tf32", "nan_check")
# None = decided by the probe (a CUDA image's readiness scan); never written, accepted as a ProbeOptions field
_OPTIONAL_BOOLS = ("readiness",)
_LISTS: dict[str, tuple[str, ...]] = {"frameworks": FRAMEWORKS, "workloads": WORKLOADS}


def options_to_json(opts: ProbeOptions) -> dict[str, object]:
    """The allow-listed options as the manifest records them (never ``env``)."""
    data: dict[str, object] = {key: list(getattr(opts, key)) for key in _LISTS}
    data.update({key: getattr(opts, key) for key in (*_CHOICES, *_INTS, *_BOOLS)})
    data.update({key: getattr(opts, key) for key in _FLOATS if getattr(opts, key)})
    return data


def write_manifest(
    run_dir: Path,
    *,
    scheduler: str,
    options: ProbeOptions,
    image: Mapping[str, str] | None,
    tasks_per_node: int,
    nodes: int,
    nodelist: tuple[str, ...],
    extra: Mapping[str, object] | None = None,
) -> dict[str, object]:
    """Write ``run.json``, the one shape every scheduler's run has (read back by
    :func:`parse_manifest`); return what was written (to add the job and result)."""
    manifest: dict[str, object] = {
        "run": run_dir.name,
        "scheduler": scheduler,
        "options": options_to_json(options),
        "tasks_per_node": tasks_per_node,
        "image": dict(image) if image is not None else None,
        "requested": {"nodes": nodes, "nodelist": list(nodelist)},
        **(extra or {}),
    }
    write_json(run_dir / MANIFEST, manifest, within=run_dir)
    return manifest


def options_from_json(data: Any, source: str) -> ProbeOptions:
    """The manifest's ``options``: exactly the allow-listed fields, each typed and in range."""
    if not isinstance(data, Mapping):
        raise FleetError(f"{source}: options must be an object", hint=STORE_HINT)
    fields: dict[str, Any] = {}
    for key, value in data.items():
        where = f"{source}: options.{key}"
        if key == "env":  # written (empty) by earlier envkits; an environment is never taken from a file
            if value not in ({}, None):
                raise FleetError(
                    f"{where}: an environment is never taken from the store (it would run code on the "
                    "node: PYTHONPATH, LD_PRELOAD)",
                    hint="the task's environment is the one the scheduler gives it; " + STORE_HINT,
                )
            continue
        expected = _expected(key)
        if expected is None:
            raise FleetError(
                f"{where}: not a probe option envkit accepts from a run manifest", hint=STORE_HINT
            )
        if not _valid(key, value):
            raise FleetError(f"{where}: {expected}, not {value!r:.60}", hint=STORE_HINT)
        fields[key] = (
            tuple(dict.fromkeys(value)) if key in _LISTS else float(value) if key in _FLOATS else value
        )
    return ProbeOptions(**fields)


def _expected(key: str) -> str | None:
    if key in _LISTS:
        return f"a non-empty list of {', '.join(_LISTS[key])}"
    if key in _CHOICES:
        return f"one of {', '.join(_CHOICES[key])}"
    if key in _INTS:
        return f"an integer from {_INTS[key][0]} to {_INTS[key][1]}"
    if key in _FLOATS:
        return f"a number from {_FLOATS[key][0]:g} to {_FLOATS[key][1]:g}"
    if key in _OPTIONAL_BOOLS:
        return "true, false or null"
    return "true or false" if key in _BOOLS else None


def _valid(key: str, value: Any) -> bool:
    if key in _LISTS:
        return (
            isinstance(value, list)
            and bool(value)
            and all(isinstance(v, str) and v in _LISTS[key] for v in value)
        )
    if key in _CHOICES:
        return isinstance(value, str) and value in _CHOICES[key]
    if key in _INTS:
        return type(value) is int and _INTS[key][0] <= value <= _INTS[key][1]
    if key in _FLOATS:
        return type(value) in (int, float) and _FLOATS[key][0] <= value <= _FLOATS[key][1]
    if key in _OPTIONAL_BOOLS and value is None:
        return True
    return type(value) is bool


@dataclass(frozen=True)
class FleetImage:
    """The run's image: pulled by ``ref`` (``REPO@sha256:…``) or loaded from ``tar`` and checked by ``id``."""

    ref: str | None = None
    id: str | None = None
    tar: Path | None = None
    name: str | None = None


def image_tar_path(store: Path, image_id: str) -> Path:
    """Where the store keeps an image's tar: ``STORE/images/<first 24 hex of the id>.tar``."""
    return store / "images" / f"{image_id.removeprefix('sha256:')[:24]}.tar"


def image_from_json(data: Any, source: str, run_dir: Path) -> FleetImage | None:
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise FleetError(f"{source}: image must be an object", hint=STORE_HINT)
    unknown = sorted(set(data) - {"ref", "id", "tar", "name"})
    if unknown:
        raise FleetError(f"{source}: image.{unknown[0]}: not a field envkit writes", hint=STORE_HINT)
    ref, image_id, tar, name = (data.get(k) for k in ("ref", "id", "tar", "name"))
    if ref is not None and not (isinstance(ref, str) and _DIGEST_REF.fullmatch(ref)):
        raise FleetError(
            f"{source}: image.ref must be REPO@sha256:<64 hex>, not {ref!r:.80}", hint=STORE_HINT
        )
    if image_id is not None and not (
        isinstance(image_id, str) and image_id.startswith("sha256:") and _HEX64.fullmatch(image_id[7:])
    ):
        raise FleetError(f"{source}: image.id must be sha256:<64 hex>, not {image_id!r:.80}", hint=STORE_HINT)
    if name is not None and not isinstance(name, str):
        raise FleetError(f"{source}: image.name must be a string", hint=STORE_HINT)
    where: Path | None = None
    if tar is not None:
        if image_id is None or not isinstance(tar, str):
            raise FleetError(f"{source}: image.tar needs image.id (and is a path)", hint=STORE_HINT)
        where = image_tar_path(run_dir.parent, image_id)
        if Path(tar) != where:
            raise FleetError(
                f"{source}: image.tar {tar!r:.200} is not {where}: a run loads images only from "
                "STORE/images/<id>.tar",
                hint=STORE_HINT,
            )
    if ref is None and where is None:
        raise FleetError(f"{source}: image needs a ref (REPO@sha256:…) or an id and its tar", hint=STORE_HINT)
    return FleetImage(ref=ref, id=image_id, tar=where, name=name)


@dataclass(frozen=True)
class RunLayout:
    """What the follower needs of ``run.json``: checked, typed."""

    run: str
    tasks_per_node: int
    repeat: int
    nodes: int
    nodelist: tuple[str, ...]


@dataclass(frozen=True)
class ProbePlan:
    """What a fleet probe's task runs: the layout, the probe options and the image."""

    layout: RunLayout
    options: ProbeOptions
    image: FleetImage | None

    @property
    def run(self) -> str:
        return self.layout.run


def _int(data: Mapping[str, object], key: str, lo: int, hi: int, source: str, default: int) -> int:
    value = data.get(key, default)
    if not (type(value) is int and lo <= value <= hi):
        raise FleetError(
            f"{source}: {key} must be an integer from {lo} to {hi}, not {value!r:.40}", hint=STORE_HINT
        )
    return value


def parse_layout(manifest: RunManifest, run_dir: Path) -> RunLayout:
    """A run's layout from its manifest, every field checked (the task runs only what it expects)."""
    data, source = manifest.document, str(manifest.path)
    run = data.get("run")
    if not isinstance(run, str) or run != run_dir.name:
        raise FleetError(
            f"{source}: run must be this run's id ({run_dir.name!r}), not {run!r:.80}", hint=STORE_HINT
        )
    check_run_id(run)
    requested = data.get("requested") or {}
    if not isinstance(requested, Mapping):
        raise FleetError(f"{source}: requested must be an object", hint=STORE_HINT)
    nodelist = requested.get("nodelist") or []
    if not (isinstance(nodelist, list) and all(isinstance(n, str) and n for n in nodelist)):
        raise FleetError(f"{source}: requested.nodelist must be a list of node names", hint=STORE_HINT)
    return RunLayout(
        run=run,
        tasks_per_node=_int(data, "tasks_per_node", 1, 1024, source, 1),
        repeat=_int(data, "repeat", 1, 100, source, 1),
        nodes=_int(requested, "nodes", 0, 100_000, source, 1),  # 0: every node the engine has (Ray)
        nodelist=tuple(nodelist),
    )


def parse_manifest(manifest: RunManifest, run_dir: Path) -> ProbePlan:
    """What a fleet probe's task runs, from the run's manifest."""
    data, source = manifest.document, str(manifest.path)
    return ProbePlan(
        layout=parse_layout(manifest, run_dir),
        options=options_from_json(data.get("options", {}), source),
        image=image_from_json(data.get("image"), source, run_dir),
    )
