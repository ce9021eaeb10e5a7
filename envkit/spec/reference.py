"""The spec reference in docs/reference/spec.md, generated from the models.

``make check-readme`` keeps it true.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from envkit.spec.models import Spec

__all__ = ["spec_reference"]


def _default(info: FieldInfo) -> str:
    if info.default_factory is not None:
        return "`{}`"
    if info.default is PydanticUndefined:
        return "required"
    value: Any = info.default
    if hasattr(value, "model_dump"):
        value = {k: v for k, v in value.model_dump(mode="json").items() if v not in (None, [], ())}
    elif hasattr(value, "value"):
        value = value.value
    if value in ("", None, (), {}):
        return "—"
    return f"`{json.dumps(value) if not isinstance(value, str) else value}`"


def spec_reference() -> str:
    """A markdown table: key, default, meaning; one row per field of :class:`Spec`."""
    rows = ["| key | default | meaning |", "|---|---|---|"]
    for name, info in Spec.model_fields.items():
        rows.append(f"| `{name}` | {_default(info)} | {info.description or ''} |")
    return "\n".join(rows) + "\n"
