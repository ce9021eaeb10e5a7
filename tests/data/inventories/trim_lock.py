"""How the lock samples here were trimmed: keep some ``[[package]]`` blocks, at most 2 wheels each.

    python3 trim_lock.py SRC DST "[[package]]" name1,name2,...    (uv.lock, poetry.lock)
    python3 trim_lock.py SRC DST "[[packages]]" name1,name2,...   (pylock.toml)
    python3 trim_lock.py SRC DST "[[package]]" ALL per-platform    (poetry.lock, every package:
        of each package's files one sdist or pure wheel and one wheel for each of linux x86_64,
        macOS arm64 and Windows x64, so which platforms a package installs on stays as it was)

A text edit: the kept blocks are byte-for-byte the original's, in the original order.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

_CLASSES = (
    ("any", re.compile(r'file = "[^"]*(-none-any\.whl|\.tar\.gz|\.zip)"')),
    ("linux", re.compile(r'file = "[^"]*linux[^"]*_x86_64[^"]*\.whl"')),
    ("macos", re.compile(r'file = "[^"]*macosx_[^"]*(arm64|universal2)[^"]*\.whl"')),
    ("windows", re.compile(r'file = "[^"]*win_amd64\.whl"')),
)


def keep_per_platform(line: str, seen: set[str]) -> bool:
    for name, pattern in _CLASSES:
        if pattern.search(line) and name not in seen:
            seen.add(name)
            return True
    return False


def trim_block(block: str, per_platform: bool = False) -> str:
    kept: list[str] = []
    seen: set[str] = set()
    in_wheels, count = False, 0
    for line in block.split("\n"):
        if line.startswith(("wheels = [", "files = [")) and not line.endswith("]"):
            in_wheels, count = True, 0
            seen = set()
            kept.append(line)
        elif in_wheels and line == "]":
            in_wheels = False
            kept.append(line)
        elif in_wheels and per_platform:
            if keep_per_platform(line, seen):
                kept.append(line)
        elif in_wheels:
            count += 1
            if count <= 2:
                kept.append(line)
        else:
            kept.append(line)
    return "\n".join(kept)


def main(src: str, dst: str, marker: str, names: str, mode: str = "") -> None:
    keep = set(names.split(","))
    head, *blocks = Path(src).read_text("utf-8").split(f"\n{marker}\n")
    out = [head]
    for block in blocks:
        name = re.search(r'^name = "([^"]+)"', block, re.MULTILINE)
        if name and (names == "ALL" or name[1] in keep):
            out.append(trim_block(block, per_platform=mode == "per-platform"))
    Path(dst).write_text(f"\n{marker}\n".join(out), "utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:6])
