"""The image's own NVIDIA Container Toolkit constraints, evaluated for each target as the toolkit will.

The payload reports the ``NVIDIA_REQUIRE_*`` variables of the image's environment; each target's
properties (its compute capability as ``arch``, its driver, the CUDA that driver supports as
``cuda``) are checked against them with :func:`envkit.catalog.require.satisfies`, the evaluation
the expressions ``envkit render`` writes are held to. A requirement that fails is the start-time
refusal a user meets (``requirement error: unsatisfied condition``); one the toolkit would reject
as invalid is a warning naming it.
"""

from __future__ import annotations

from envkit._safe import one_line
from envkit.catalog import Catalog
from envkit.catalog.require import driver_cuda, satisfies
from envkit.readiness.facts import ReadinessFacts
from envkit.readiness.rules import ReadinessFinding
from envkit.readiness.targets import Target

__all__ = ["requirement_findings"]


def requirement_findings(facts: ReadinessFacts, target: Target, catalog: Catalog) -> list[ReadinessFinding]:
    if target.cc is None and target.driver is None:
        return []
    arch = f"{target.cc[0]}.{target.cc[1]}" if target.cc else None
    cuda = driver_cuda(target.driver, catalog.cuda) if target.driver else None
    out = []
    for name, requirement in sorted(facts.nvidia_require.items()):
        shown = one_line(f"{name}={requirement}")
        try:
            ok = satisfies(requirement, arch=arch, driver=target.driver, cuda=cuda)
        except ValueError as e:
            out.append(
                ReadinessFinding("warning", "toolkit-requirement-invalid", f"the image's {shown}: {e}")
            )
            continue
        if not ok:
            out.append(
                ReadinessFinding(
                    "error",
                    "toolkit-requirement-unmet",
                    f"the image's {shown} is not met here: the NVIDIA Container Toolkit refuses to start "
                    "it ('requirement error: unsatisfied condition')",
                )
            )
    return out
