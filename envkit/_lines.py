"""Logical lines of a requirements file or a Dockerfile: backslash continuations joined (the one joiner).

Standard library only: the inventory readers, the audit's lock policy and ``init --from`` use it.
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["logical_lines"]


def logical_lines(text: str, *, drop_comments: bool = False) -> Iterator[tuple[int, str]]:
    """``(first line number, text)`` per logical line, stripped, continuation pieces joined by one space.

    A line ending in a backslash (after trailing blanks, any line ending) continues on the next; a comment
    line (``#`` first) never continues, as pip's requirements reader has it. With ``drop_comments``
    (Dockerfiles, and ``init --from``'s requirements), comment lines are dropped, also between
    continuation lines (Docker's parser), and so are blank lines outside a continuation; without it
    every line is yielded (blank ones empty), a comment line as it is.
    """
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        comment = line.lstrip().startswith("#")
        if drop_comments and (comment or (not pending and not line)):
            continue
        if not pending:
            start = number
        if line.endswith("\\") and not comment:
            pending.append(line[:-1])
            continue
        pending.append(line)
        yield start, " ".join(p.strip() for p in pending)
        pending = []
    if pending:
        yield start, " ".join(p.strip() for p in pending)
