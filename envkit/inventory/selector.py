"""Per-input selectors: ``pixi.lock#cuda``, ``conda-lock.yml@win-64``, ``uv.lock#cu128@linux-64``.

``--platform`` and ``--environment`` apply to every input; a selector on one input chooses for
that input only, so two platforms of one lock (or two pixi environments) diff in one run:
``envkit diff conda-lock.yml@linux-64 conda-lock.yml@win-64``. The syntax is
``FILE[#ENVIRONMENT][@PLATFORM]``; it is read only when the name as given is not a file and
``FILE`` is, so a file whose name contains ``#`` or ``@`` is still taken as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Selected", "split_selector"]

_SELECTOR = re.compile(
    r"^(?P<path>.+?)(?:#(?P<env>[A-Za-z0-9_.,+=-]+))?(?:@(?P<platform>[a-z0-9]+-[a-z0-9_]+))?\Z"
)


@dataclass(frozen=True)
class Selected:
    """An input named with its selector (``FILE#ENVIRONMENT@PLATFORM``), split."""

    name: str  # the input without its selector
    platform: str | None = None
    environment: str | None = None

    @property
    def suffix(self) -> str:
        """``#cuda@win-64``: shown after the input's label."""
        return (f"#{self.environment}" if self.environment else "") + (
            f"@{self.platform}" if self.platform else ""
        )


def split_selector(name: str) -> Selected:
    """``name`` split into the file and its selector (none when ``name`` is a file itself)."""
    if Path(name).exists():
        return Selected(name)
    match = _SELECTOR.match(name)
    if match is None or not (match["env"] or match["platform"]) or not Path(match["path"]).is_file():
        return Selected(name)
    return Selected(match["path"], match["platform"], match["env"])
