"""What the adoption planner knows of the catalog: one typed value, read once.

:func:`envkit.adopt.releases.read_releases` is the one place the ``init --from`` walk asks the
catalog (as :func:`envkit.spec.resolve.resolve_spec` is for builds); the planner
(:mod:`envkit.init.adopt`, :mod:`~envkit.init.detect`, :mod:`~envkit.init.python_of`,
:mod:`~envkit.init.refusals`, :mod:`~envkit.init.decide`) takes this :class:`Releases` and never
the catalog. The value type lives here, below :mod:`envkit.adopt`, because the planner still does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from envkit.catalog import BaseImage, Catalog, FrameworkRelease, Wheel, impossible_in, requested_wheel_in
from envkit.catalog.ngc import NgcImage

__all__ = ["Releases"]


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
