"""The SBOM an image carries: read from the image once, under one size limit, checked against its label.

envkit writes the lock's SBOM into the image at :data:`~envkit.sbom.cyclonedx.SBOM_PATH` and its
sha256 into the :data:`~envkit.sbom.cyclonedx.SBOM_LABEL` label; whoever reads it back (``envkit check
--sbom``, the debug image's SBOM) takes it only when the two agree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from envkit.errors import SbomNotCarried
from envkit.sbom.cyclonedx import SBOM_LABEL, SBOM_PATH, sbom_sha256

if TYPE_CHECKING:
    from envkit.engine.protocol import ContainerEngine

__all__ = ["MAX_SBOM_BYTES", "carried_sbom"]

MAX_SBOM_BYTES = (
    32 << 20
)  # every SBOM envkit reads (an image's, images/NAME's): a 400-package lock's is ~0.5 MB
_HINT = "rebuild it: `envkit build NAME`"


def carried_sbom(engine: ContainerEngine, image: str) -> str:
    """The SBOM ``image`` carries, when it is the one its label names (else :class:`SbomNotCarried`)."""
    info = engine.inspect(image)
    label = info.labels.get(SBOM_LABEL) if info is not None else None
    if info is None or not label:
        missing = f"no {SBOM_LABEL} label" if info is not None else "no such image"
        raise SbomNotCarried(
            f"{image} carries no SBOM ({missing})",
            hint="images of a locked spec carry one: `envkit lock NAME`, then `envkit build NAME`",
            why=missing,
            labelled=False,
        )
    result = engine.run(image, ["cat", SBOM_PATH], gpus=False)
    text = result.stdout
    why: str | None = None
    if result.exit_code != 0:
        why = "unreadable"
    elif len(text.encode("utf-8")) > MAX_SBOM_BYTES:
        why = f"larger than {MAX_SBOM_BYTES} bytes: not the SBOM envkit wrote"
    elif sbom_sha256(text) != label:
        why = f"not the one its {SBOM_LABEL} label names"
    if why is not None:
        raise SbomNotCarried(
            f"the SBOM in {image} ({SBOM_PATH}) is {why}", hint=_HINT, why=why, labelled=True
        )
    return text
