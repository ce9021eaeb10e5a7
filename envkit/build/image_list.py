"""``envkit images``: built images per environment, and whether they are stale."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from envkit._safe import one_line
from envkit.build.builder import CACHE_TAG, CONTEXT_LABEL, NAME_LABEL, image_repo
from envkit.catalog import Catalog
from envkit.engine.protocol import ContainerEngine
from envkit.errors import EnvkitError
from envkit.lock.fresh import lock_state
from envkit.render.debug import DEBUG_VARIANT, RUNTIME_LABEL, VARIANT_LABEL
from envkit.render.dockerfile import LOCK_LABEL, SPEC_LABEL
from envkit.spec.load import SPEC_DIR, load_spec
from envkit.spec.models import NAME_RE

__all__ = ["ImageRow", "list_images"]


@dataclass(frozen=True)
class ImageRow:
    """One image envkit built: its environment, tags, the hashes it carries and whether it is stale."""

    name: str
    id: str
    tags: tuple[str, ...]
    context_sha256: str
    spec_sha256: str
    lock_sha256: str | None
    size: int
    latest: bool
    stale: bool
    reason: str
    variant: str = "runtime"  # or "debug": built FROM the runtime image ``runtime_id``
    runtime_id: str | None = None
    layers: int = 0  # its layers (diff_ids), the base's included
    # layers this image shares with another envkit image of another environment (a CUDA variant of
    # the spec: the layers above the CUDA ones are the same content, stored and pulled once)
    shared_layers: int = 0
    shared_with: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


def list_images(engine: ContainerEngine, root: Path, catalog: Catalog) -> list[ImageRow]:
    """Every envkit image, sorted by environment then tag; stale against the current spec and lock."""
    current: dict[str, tuple[str | None, str | None, str]] = {}
    rows = []
    infos = engine.images(NAME_LABEL)
    for info in infos:
        if all(t.endswith(f":{CACHE_TAG}") for t in info.tags):
            continue  # a build's engine-made original, kept as the next build's cache
        name = info.labels[NAME_LABEL]
        if name not in current:
            current[name] = _current(root, name, catalog)
        spec_sha, lock_sha, problem = current[name]
        image_spec = info.labels.get(SPEC_LABEL, "")
        image_lock = info.labels.get(LOCK_LABEL)
        if problem:
            reason = problem
        elif image_spec != spec_sha:
            reason = "the spec changed since this image was built"
        elif image_lock != lock_sha:
            reason = "the lock changed since this image was built"
        else:
            reason = ""
        repo = image_repo(name)
        tags = tuple(sorted(t for t in info.tags if t.startswith(repo + ":")))
        variant = info.labels.get(VARIANT_LABEL, "runtime")
        rows.append(
            ImageRow(
                name=one_line(name),
                id=info.id,
                tags=tags,
                context_sha256=info.labels.get(CONTEXT_LABEL, ""),
                spec_sha256=image_spec,
                lock_sha256=image_lock,
                size=info.size,
                latest=f"{repo}:latest" in tags or f"{repo}:{DEBUG_VARIANT}" in tags,
                stale=bool(reason),
                reason=reason,
                variant=one_line(variant),
                runtime_id=info.labels.get(RUNTIME_LABEL),
            )
        )
    rows = _with_sharing(rows, {info.id: info.diff_ids for info in infos})
    # side by side: each environment's runtime image(s), then the debug image(s) built FROM them
    return sorted(rows, key=lambda r: (r.name, r.variant != "runtime", r.variant, not r.latest, r.tags))


def _with_sharing(rows: list[ImageRow], diff_ids: dict[str, tuple[str, ...]]) -> list[ImageRow]:
    """Each row with the layers it shares with the images of other environments (by diff_id)."""
    owners: dict[str, set[str]] = {}
    for row in rows:
        for layer in diff_ids.get(row.id, ()):
            owners.setdefault(layer, set()).add(row.name)
    found = []
    for row in rows:
        layers = diff_ids.get(row.id, ())
        others = [owners[layer] - {row.name} for layer in layers]
        found.append(
            replace(
                row,
                layers=len(layers),
                shared_layers=sum(1 for o in others if o),
                shared_with=tuple(sorted(set().union(*others))) if others else (),
            )
        )
    return found


def _current(root: Path, name: str, catalog: Catalog) -> tuple[str | None, str | None, str]:
    if not NAME_RE.fullmatch(name):  # an image's label is the image's: never a path to follow
        return (
            None,
            None,
            f"the image's {NAME_LABEL} label {one_line(name)[:80]!r} is not an environment name",
        )
    path = root / SPEC_DIR / f"{name}.yaml"
    if not path.is_file():
        return None, None, f"no spec {SPEC_DIR}/{name}.yaml any more"
    try:
        loaded = load_spec(path, catalog)
    except EnvkitError as e:
        return None, None, f"the spec is invalid now: {e.message.splitlines()[0]}"
    lock = lock_state(root, loaded)  # the digest render/build put in io.envkit.lock-sha256
    return loaded.sha256, lock.lock_sha256 if lock.fresh else None, ""
