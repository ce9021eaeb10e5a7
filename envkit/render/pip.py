"""The pip part of an environment: framework wheels (with their index) and the spec's requirements."""

from __future__ import annotations

from envkit.catalog import Catalog
from envkit.spec.models import Spec

__all__ = ["framework_requirements", "index_options", "pip_lines"]


def framework_requirements(spec: Spec, catalog: Catalog) -> list[str]:
    """``paddlepaddle-gpu==2.6.2``, ``torch==2.1.2+cu118``, … for the spec's CUDA."""
    lines = []
    for framework, version in spec.frameworks.items():
        wheel = catalog.requested_wheel(framework, version, spec.cuda)
        if wheel is not None:  # validation guarantees it for releases the catalog knows
            lines.append(wheel.requirement)
    return lines


def index_options(spec: Spec, catalog: Catalog) -> list[str]:
    """pip options for the spec's mirror and the framework indexes, sorted and deduplicated."""
    options: set[str] = set()
    for framework, version in spec.frameworks.items():
        wheel = catalog.requested_wheel(framework, version, spec.cuda)
        if wheel is not None and wheel.index and wheel.index_mode:
            mode = "find-links" if wheel.index_mode == "find-links" else "extra-index-url"
            options.add(f"--{mode} {wheel.index}")
    head = [f"--index-url {spec.mirrors.pypi}"] if spec.mirrors.pypi else []
    return head + sorted(options)


def pip_lines(spec: Spec, catalog: Catalog) -> list[str]:
    """Everything pip needs, in a stable order: options, frameworks, then the spec's own lines."""
    return index_options(spec, catalog) + framework_requirements(spec, catalog) + list(spec.pip)
