"""Run every benchmark: `make bench` (or `python -m benchmarks [NAME ...]`).

Each ``benchmarks/bench_*.py`` module defines ``main() -> None`` that prints its figures; those
with a goal (issue 22's table, :mod:`benchmarks._goals`) record them, and the table closes the run.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
from pathlib import Path

from benchmarks._goals import table


def main() -> None:
    wanted = set(sys.argv[1:])
    names = sorted(
        m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if m.name.startswith("bench_")
    )
    for name in names:
        if wanted and name.removeprefix("bench_") not in wanted and name not in wanted:
            continue
        print(f"== {name}", flush=True)
        start = time.perf_counter()
        importlib.import_module(f"benchmarks.{name}").main()
        print(f"   ({time.perf_counter() - start:.1f} s)", flush=True)
    table()


if __name__ == "__main__":
    main()
