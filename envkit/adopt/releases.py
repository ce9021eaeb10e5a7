"""The one place ``envkit init --from`` asks the catalog (issue 45): :func:`read_releases`.

As :func:`envkit.spec.resolve.resolve_spec` reads every catalog fact a build needs once, this reads
every fact the adoption plan needs once, before planning, into a typed
:class:`~envkit.init.releases.Releases` that is passed down; the readers of the source
(:func:`envkit.adopt.read_evidence`) never see the catalog. ``envkit validate`` of the written
spec (:func:`envkit.spec.load.load_spec`) is its own entry, as it is for any spec.
"""

from __future__ import annotations

from envkit.catalog import Catalog
from envkit.catalog.ngc import ngc_pytorch
from envkit.init.releases import Releases

__all__ = ["Releases", "read_releases"]

_BAIDU = "registry.baidubce.com/"  # Paddle's own mirror of its Docker Hub images


def read_releases(catalog: Catalog, base_image: str | None = None) -> Releases:
    """What the plan needs from ``catalog`` (and the NGC table) for a source on ``base_image``."""
    cudas = tuple(c.version for c in catalog.cuda)
    return Releases(
        families={name: family.releases for name, family in catalog.frameworks.items()},
        cuda_versions=cudas,
        runtime_cudas=frozenset(
            b.cuda for b in catalog.base_images if b.kind == "cuda-runtime" and b.cuda in cudas
        ),
        framework_indexes=frozenset(
            w.index.rstrip("/")
            for family in catalog.frameworks.values()
            for r in family.releases
            for w in r.wheels
            if w.index
        ),
        base_image=catalog.base_image(base_image.removeprefix(_BAIDU)) if base_image else None,
        ngc=ngc_pytorch(base_image) if base_image else None,
    )
