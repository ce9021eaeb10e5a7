"""How the lock samples here were trimmed: keep some ``[[package]]`` blocks, at most 2 wheels each.

    python3 trim_lock.py SRC DST "[[package]]" name1,name2,...    (uv.lock, poetry.lock)
    python3 trim_lock.py SRC DST "[[packages]]" name1,name2,...   (pylock.toml)

A text edit: the kept blocks are byte-for-byte the original's, in the original order.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def trim_block(block: str) -> str:
    kept: list[str] = []
    in_wheels, count = False, 0
    for line in block.split("\n"):
        if line.startswith(("wheels = [", "files = [")) and not line.endswith("]"):
            in_wheels, count = True, 0
            kept.append(line)
        elif in_wheels and line == "]":
            in_wheels = False
            kept.append(line)
        elif in_wheels:
            count += 1
            if count <= 2:
                kept.append(line)
        else:
            kept.append(line)
    return "\n".join(kept)


def main(src: str, dst: str, marker: str, names: str) -> None:
    keep = set(names.split(","))
    head, *blocks = Path(src).read_text("utf-8").split(f"\n{marker}\n")
    out = [head]
    for block in blocks:
        name = re.search(r'^name = "([^"]+)"', block, re.MULTILINE)
        if name and name[1] in keep:
            out.append(trim_block(block))
    Path(dst).write_text(f"\n{marker}\n".join(out), "utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:5])
