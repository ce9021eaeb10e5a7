"""The pip part of an environment: framework wheels (with their index) and the spec's requirements.

The translation itself lives in :mod:`envkit.lock.inputs` (what the solvers see), so an unlocked
render and the lock agree by construction.
"""

from __future__ import annotations

from envkit.lock.inputs import cuda_runtime_requirements, framework_requirements, index_options
from envkit.spec.resolve import ResolvedSpec

__all__ = ["framework_requirements", "index_options", "pip_lines"]


def pip_lines(resolved: ResolvedSpec) -> list[str]:
    """Everything pip needs, in a stable order: options, frameworks, then the spec's own lines."""
    return (
        index_options(resolved)
        + framework_requirements(resolved)
        + cuda_runtime_requirements(resolved)
        + list(resolved.spec.pip)
    )
