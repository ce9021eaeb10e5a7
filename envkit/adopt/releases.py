"""The one place ``envkit init --from`` asks the catalog (issue 45): :func:`read_releases`.

As :func:`envkit.spec.resolve.resolve_spec` reads every catalog fact a build needs once, this reads
every fact the adoption plan needs once, before planning, into a typed
:class:`Releases` that is passed down; the readers of the source
(:func:`envkit.adopt.read_evidence`) never see the catalog. Each of the catalog's tables is read
once, here; the plan's answers are computed from those tables, and ``envkit validate`` of the
written spec (:func:`envkit.spec.load.load_spec`) runs on them too (``Releases.tables``), so the
whole walk enters the catalog in this one call. The planner (:mod:`envkit.adopt.plan`,
:mod:`~envkit.adopt.detect`, :mod:`~envkit.adopt.python_of`, :mod:`~envkit.adopt.refusals`,
:mod:`~envkit.adopt.decide`) takes the :class:`Releases` and never the catalog.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from envkit.catalog import BaseImage, Catalog, FrameworkRelease, Wheel, impossible_in, requested_wheel_in
from envkit.catalog.ngc import NgcImage, ngc_pytorch

__all__ = ["Releases", "read_releases"]

_BAIDU = "registry.baidubce.com/"  # Paddle's own mirror of its Docker Hub images


@dataclass(frozen=True)
class Releases:
    """The catalog's answers an adoption needs: every framework release (with its wheels and
    Pythons), the CUDA releases and which have a runtime image, the framework indexes, and the
    rows of the source's base image (the base-image table's, NGC's)."""

    families: Mapping[str, tuple[FrameworkRelease, ...]]  # framework -> releases, in catalog order
    cuda_versions: tuple[str, ...]  # the CUDA releases the catalog knows, in its order
    runtime_cudas: frozenset[str]  # those with an nvidia/cuda runtime image
    framework_indexes: frozenset[str]  # every framework wheel index, without a trailing slash
    base_image: BaseImage | None = None  # the catalog's row of the source's base image
    ngc: NgcImage | None = None  # the NGC table's row of the source's base image
    # the catalog's tables as they were read (each once): what the written spec is validated against
    tables: Catalog | None = None

    def releases(self, framework: str) -> tuple[FrameworkRelease, ...]:
        return self.families.get(framework, ())

    def release(self, framework: str, version: str) -> FrameworkRelease | None:
        return next((r for r in self.releases(framework) if r.version == version), None)

    def requested_wheel(self, framework: str, version: str, cuda: str) -> Wheel | None:
        """As :meth:`envkit.catalog.Catalog.requested_wheel`."""
        releases = self.releases(framework)
        return requested_wheel_in(releases, version, cuda) if framework in self.families else None

    def impossible(self, framework: str, version: str, cuda: str, python: str) -> str | None:
        """As :meth:`envkit.catalog.Catalog.impossible`."""
        return impossible_in(framework, self.releases(framework), version, cuda, python)

    def knows_cuda(self, cuda: str) -> bool:
        return cuda in self.cuda_versions

    def has_runtime_image(self, cuda: str) -> bool:
        return cuda in self.runtime_cudas


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
