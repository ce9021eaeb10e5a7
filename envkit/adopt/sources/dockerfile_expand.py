"""A Dockerfile's ``$VAR`` expansion, as the shell and BuildKit do it, bounded: :func:`expand`.

``$VAR``, ``${VAR}``, ``${VAR:-default}``, ``${VAR:+alt}`` and the shell's ``${VAR%.*}``/``${VAR#v}``
(``%%``, ``##``) from ``ARG`` and ``ENV`` values; unknown variables stay, a secret's name is never
expanded, and each result and the Dockerfile's total are bounded (:class:`Budget`).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass

from envkit._safe import sensitive_name
from envkit.adopt.evidence import AdoptError

__all__ = ["MAX_EXPANDED", "MAX_EXPANDED_TOTAL", "VAR", "Budget", "expand"]

VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-+]|%%?|##?)([^{}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")
MAX_EXPANDED = 64 * 1024  # characters one instruction or value may expand to (real ones: < 2 KB)
MAX_EXPANDED_TOTAL = 8 * 1024 * 1024  # characters all expansions of one Dockerfile may produce


@dataclass
class Budget:
    """What expanding ``$VAR`` may still produce in one Dockerfile: each result and the total are
    bounded, so 40 doubling ``ARG`` lines (2^40 characters) are refused, not allocated."""

    left: int = MAX_EXPANDED_TOTAL
    where: str = ""


def expand(text: str, values: Mapping[str, str], budget: Budget | None = None) -> str:
    """``$X``, ``${X}``, ``${X:-d}``, ``${X-d}``, ``${X:+a}``, ``${X+a}``, ``${X%p}``, ``${X%%p}``,
    ``${X#p}``, ``${X##p}`` (``p`` a shell pattern); unknown variables stay.

    :class:`AdoptError` when the result would exceed :data:`MAX_EXPANDED` characters or the
    ``budget`` left (checked while substituting, before anything large is built)."""
    budget = budget if budget is not None else Budget()
    for _ in range(8):  # innermost first: ${A:+==${B}}
        size = len(text)

        def one(match: re.Match[str]) -> str:
            nonlocal size
            value = _one(match, values)
            size += len(value) - len(match[0])
            if size > MAX_EXPANDED or size > budget.left:
                raise _too_long(budget)
            return value

        changed = VAR.sub(one, text)
        if changed == text:
            break
        text = changed
    budget.left -= len(text)
    if budget.left < 0:
        raise _too_long(budget)
    return text


def _too_long(budget: Budget) -> AdoptError:
    return AdoptError(
        f"{budget.where}: ARG/ENV variables expand to more than {MAX_EXPANDED} characters here "
        f"(or {MAX_EXPANDED_TOTAL} in all): not a Dockerfile envkit reads; nothing was written",
        hint="variables that double each other (ARG B=$A$A) expand without limit: fix those lines",
    )


def _one(match: re.Match[str], values: Mapping[str, str]) -> str:
    name = match[1] or match[4]
    if sensitive_name(name):  # HF_TOKEN, PIP_PASSWORD, ...: a secret never becomes text envkit shows
        return match[0]
    value = values.get(name)
    op, word = match[2], match[3] or ""
    if op and op[0] in "%#":
        return match[0] if value is None else _strip_pattern(value, op, word)
    if op in (":-", "-"):
        return value if value or (op == "-" and value is not None) else word
    if op in (":+", "+"):
        return word if value or (op == "+" and value is not None) else ""
    return value if value is not None else match[0]


def _strip_pattern(value: str, op: str, pattern: str) -> str:
    """The shell's ``${X%p}`` (shortest suffix matching ``p`` removed), ``%%`` (longest), ``#`` (shortest
    prefix), ``##`` (longest): ``${CUDA_VER%.*}`` of 11.8.0 is 11.8."""
    cuts = range(len(value), -1, -1) if op in ("%", "##") else range(len(value) + 1)
    for cut in cuts:
        part = value[cut:] if op[0] == "%" else value[:cut]
        if fnmatch.fnmatchcase(part, pattern):
            return value[:cut] if op[0] == "%" else value[cut:]
    return value
