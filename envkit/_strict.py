"""The base of every model parsed from YAML (specs, the catalog): one module both import.

It sits below ``envkit.spec`` and ``envkit.catalog`` so that neither imports the other for it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["StrictModel"]


class StrictModel(BaseModel):
    """Base for everything parsed from YAML: unknown keys are errors, values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)
