"""Run every benchmark: `make bench` (or `python -m benchmarks [--smoke] [NAME ...]`).

Each ``benchmarks/bench_*.py`` module defines ``main() -> None`` that prints its figures; those
with a goal (issue 22's table, :mod:`benchmarks._goals`) record them, and the table closes the run.
``--smoke`` (``make bench-smoke``, run by CI) runs every benchmark at tiny sizes so that none can
rot unseen: the figures mean nothing there. A benchmark that raises is reported and the run goes
on; the exit status is 1 when any raised. Each benchmark's elapsed time is printed after it, the
run's total (and its longest three) at the end.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
import time
import traceback
from pathlib import Path

from benchmarks._goals import SMOKE_ENV, table


def main() -> int:
    args = sys.argv[1:]
    if "--smoke" in args:
        args.remove("--smoke")
        os.environ[SMOKE_ENV] = "1"  # the cases' own processes inherit it
    wanted = set(args)
    failed: list[str] = []
    took: dict[str, float] = {}
    names = sorted(
        m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if m.name.startswith("bench_")
    )
    for name in names:
        if wanted and name.removeprefix("bench_") not in wanted and name not in wanted:
            continue
        print(f"== {name}", flush=True)
        start = time.perf_counter()
        try:
            importlib.import_module(f"benchmarks.{name}").main()
        except Exception:  # noqa: BLE001 - one benchmark's failure is reported, the others still run
            traceback.print_exc()
            failed.append(name)
        took[name] = time.perf_counter() - start
        print(f"   ({name}: {took[name]:.1f} s)", flush=True)
    table()
    print(
        f"== {len(took)} benchmarks in {sum(took.values()):.1f} s; the longest: {_longest(took)}", flush=True
    )
    if failed:
        print(f"== FAILED: {', '.join(failed)}", flush=True)
    return 1 if failed else 0


def _longest(took: dict[str, float], count: int = 3) -> str:
    ranked = sorted(took.items(), key=lambda item: -item[1])[:count]
    return ", ".join(f"{name} {seconds:.1f} s" for name, seconds in ranked) or "none"


if __name__ == "__main__":
    sys.exit(main())
