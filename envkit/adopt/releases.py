"""The one place ``envkit init --from`` asks the catalog (issue 45): :func:`read_releases`.

As :func:`envkit.spec.resolve.resolve_spec` reads every catalog fact a build needs once, this reads
every fact the adoption plan needs once, before planning, into a typed
:class:`~envkit.init.releases.Releases` that is passed down; the readers of the source
(:func:`envkit.adopt.read_evidence`) never see the catalog. Each of the catalog's tables is read
once, here; the plan's answers are computed from those tables, and ``envkit validate`` of the
written spec (:func:`envkit.spec.load.load_spec`) runs on them too (``Releases.tables``), so the
whole walk enters the catalog in this one call.
"""

from __future__ import annotations

from dataclasses import fields

from envkit.catalog import Catalog
from envkit.catalog.ngc import ngc_pytorch
from envkit.init.releases import Releases

__all__ = ["Releases", "read_releases"]

_BAIDU = "registry.baidubce.com/"  # Paddle's own mirror of its Docker Hub images


def read_releases(catalog: Catalog, base_image: str | None = None) -> Releases:
    """What the plan (and the check of the spec it writes) needs from ``catalog`` (and the NGC
    table) for a source on ``base_image``: each table of the catalog read once."""
    tables = Catalog(**{f.name: getattr(catalog, f.name) for f in fields(Catalog)})
    cudas = tuple(c.version for c in tables.cuda)
    return Releases(
        families={name: family.releases for name, family in tables.frameworks.items()},
        cuda_versions=cudas,
        runtime_cudas=frozenset(
            b.cuda for b in tables.base_images if b.kind == "cuda-runtime" and b.cuda in cudas
        ),
        framework_indexes=frozenset(
            w.index.rstrip("/")
            for family in tables.frameworks.values()
            for r in family.releases
            for w in r.wheels
            if w.index
        ),
        base_image=tables.base_image(base_image.removeprefix(_BAIDU)) if base_image else None,
        ngc=ngc_pytorch(base_image) if base_image else None,
        tables=tables,
    )
