"""The adopted spec as a value (:class:`Adoption`), the check it passes before anything is
written (:func:`spec_check`: ``envkit validate`` on its text) and :func:`write_adoption`."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from envkit._atomic import write_text_atomic
from envkit.adopt.evidence import AdoptError, Lost, shown_item
from envkit.catalog import Catalog
from envkit.errors import SpecError
from envkit.spec.load import SPEC_DIR, load_spec
from envkit.spec.models import Spec

__all__ = ["Adoption", "SpecCheck", "spec_check", "write_adoption"]

SpecCheck = Callable[[str, str, str], "tuple[Spec, tuple[str, ...]]"]
"""``envkit validate`` of a spec text: (name, text, source) -> (the spec, its warnings)."""


@dataclass(frozen=True)
class Adoption:
    """The spec adopted from a source, what was detected and how, and what was not carried."""

    source: str
    kind: str
    name: str
    text: str  # the spec's YAML
    spec: Spec
    detected: dict[str, str]  # fact -> value
    how: dict[str, str]  # fact -> where it came from
    lost: tuple[Lost, ...]
    notes: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    pins: dict[str, tuple[str, ...]] = field(default_factory=dict)  # conda / pip, as written in the spec

    @property
    def relative_path(self) -> str:
        return f"{SPEC_DIR}/{self.name}.yaml"

    def to_json(self) -> dict[str, object]:
        return {
            "source": self.source,
            "kind": self.kind,
            "name": self.name,
            "spec": self.relative_path,
            "detected": self.detected,
            "how": self.how,
            "conda": list(self.pins.get("conda", ())),
            "pip": list(self.pins.get("pip", ())),
            "not_carried": [item.to_json() for item in self.lost],
            "notes": list(self.notes),
        }


def write_adoption(root: Path, adoption: Adoption) -> Path:
    """Write ``environments/NAME.yaml``; never over an existing file."""
    path = root / SPEC_DIR / f"{adoption.name}.yaml"
    if path.exists() or path.is_symlink():
        raise AdoptError(
            f"{adoption.relative_path} exists: envkit init --from never replaces a spec; nothing was written",
            hint=f"choose another name with --name, or move {adoption.relative_path} away",
        )
    write_text_atomic(path, adoption.text, within=root)  # never through an `environments` link out of root
    return path


def spec_check(catalog: Catalog) -> SpecCheck:
    """``envkit validate`` with ``catalog`` (its own entry, as for any spec): what
    :func:`~envkit.adopt.plan.plan_adoption` runs on the text before anything is written."""
    return lambda name, text, origin: _validate(name, text, catalog, origin)


def _validate(name: str, text: str, catalog: Catalog, origin: str) -> tuple[Spec, tuple[str, ...]]:
    """``envkit validate`` on the text, before anything is written."""
    with tempfile.TemporaryDirectory(prefix="envkit-init-") as tmp:
        path = Path(tmp) / f"{name}.yaml"
        path.write_text(text, "utf-8")
        try:
            loaded = load_spec(path, catalog)
        except SpecError as e:
            problems = "; ".join(f"{p.field or p.line}: {p.message}" for p in e.problems[:5])
            raise AdoptError(
                f"the spec adopted from {shown_item(origin)} does not validate ({problems}); "
                "nothing was written",
                hint="this is a bug in envkit init --from when the source is sound; --cuda/--python choose "
                "other values",
            ) from e
    return loaded.spec, loaded.warnings
