"""Run every benchmark: `make bench` (or `python -m benchmarks [--smoke] [NAME ...]`).

Each ``benchmarks/bench_*.py`` module defines ``main() -> None`` that prints its figures; those
with a goal (issue 22's table, :mod:`benchmarks._goals`) record them, and the table closes the run.
``--smoke`` (``make bench-smoke``, run by CI) runs every benchmark at tiny sizes so that none can
rot unseen: the figures mean nothing there. A benchmark that raises is reported and the run goes
on; the exit status is 1 when any raised.
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
        print(f"   ({time.perf_counter() - start:.1f} s)", flush=True)
    table()
    if failed:
        print(f"== FAILED: {', '.join(failed)}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
