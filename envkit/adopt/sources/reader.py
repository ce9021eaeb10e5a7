"""The one signature of every reader of a source format: :data:`Reader`.

A reader takes the source as read from disk (:class:`SourceText`: its path, its text, the label
findings name, what ``envkit diff``'s sniffer says it is, ``--environment``) and returns a
:data:`Read`: the typed evidence (:class:`~envkit.adopt.evidence.Collected`, every pin with the
file and line, image tag or wheel it came from) and the inventory ``envkit diff`` reads of the same
file when it reads one (what ``init --from --lock`` compares the lock with). No reader sees the
catalog.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from envkit.adopt.evidence import AdoptError, Collected
from envkit.errors import InventoryError
from envkit.inventory import Inventory, parse_inventory

__all__ = ["Read", "Reader", "SourceText", "bounded", "diff_inventory"]


@dataclass(frozen=True)
class SourceText:
    """A source file as every reader takes it."""

    path: Path
    text: str
    label: str  # what findings name: the path as the user wrote it
    format: str | None = None  # what envkit diff's sniffer says it is (an inventory's format)
    environment: str | None = None  # --environment: which environment of a multi-environment source


Read = tuple[Collected, Inventory | None]
Reader = Callable[[SourceText], Read]


def bounded(source: SourceText, limit: int) -> None:
    """Refuse a source larger than its kind's limit."""
    if len(source.text) > limit:
        raise AdoptError(
            f"{source.label}: larger than {limit} bytes for its kind; nothing was written",
            hint="check the path",
        )


def diff_inventory(source: SourceText) -> Inventory | None:
    """The source as ``envkit diff`` reads it (None when it cannot: a hand-written range is no listing)."""
    try:
        return parse_inventory(source.text, path=source.label, label=Path(source.label).stem)
    except InventoryError:
        return None
