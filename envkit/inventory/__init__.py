"""Environment listings from conda, pip, locks, probe reports and snapshots -> one Inventory.

Stable API (used by the audit stage): :func:`read_inventory` and
:func:`envkit.inventory.names.project_of`.
"""

from __future__ import annotations

from envkit.inventory._collect import Collector
from envkit.inventory.models import Inventory, Package
from envkit.inventory.names import project_of
from envkit.inventory.read import FORMATS, detect_format, parse_inventory, read_inventory

__all__ = [
    "FORMATS",
    "Collector",
    "Inventory",
    "Package",
    "detect_format",
    "parse_inventory",
    "project_of",
    "read_inventory",
]
