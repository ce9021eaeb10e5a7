"""What pip says when it finds no distribution for a requirement: read on the host (``pip download``
for a wheelhouse) and in a build's log (``pip install`` inside the image). Standard library only.
"""

from __future__ import annotations

import re

__all__ = ["PIP_NO_MATCH"]

# pip names the requirement it found nothing for
PIP_NO_MATCH = re.compile(
    r"(?:No matching distribution found for|Could not find a version that satisfies the requirement)\s+(\S+)"
)
