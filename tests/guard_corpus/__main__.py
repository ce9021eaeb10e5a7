"""``python -m tests.guard_corpus [--ci] [--json] [--keep DIR] [NAME ...]`` (``make guard-corpus``).

Runs every case of every script (or the named scripts; ``--ci`` the pytest subset at its CI sizes),
prints one line per case as it finishes, then the table per script and the totals; ``--json`` prints
the graded cases as one JSON document instead. Exit 1 when any case is not right.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from tests.guard_corpus._record import ci_cases, load
from tests.guard_corpus.grade import GRADES, Graded, run_all


def table(graded: list[Graded]) -> list[str]:
    head = (
        f"{'script':<22}{'cases':>6}"
        + "".join(f"{g:>13}" for g in GRADES)
        + f"{'clean steps':>13}{'FA/1k':>7}"
    )
    lines = [head]
    scripts = sorted({g.case.script for g in graded})
    for name in [*scripts, "total"]:
        rows = [g for g in graded if name in ("total", g.case.script)]
        counts = Counter(g.grade for g in rows)
        clean = sum(g.clean_steps for g in rows)
        alarms = sum(g.false_alarms for g in rows)
        rate = 1000.0 * alarms / clean if clean else 0.0
        cells = "".join(f"{counts[g]:>13}" for g in GRADES)
        lines.append(f"{name:<22}{len(rows):>6}{cells}{clean:>13}{rate:>7.2f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.guard_corpus", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="scripts to run (default: all)")
    parser.add_argument("--ci", action="store_true", help="only the CI subset, at its sizes")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", type=Path, help="keep the run folders here")
    args = parser.parse_args(argv)
    scripts = [s for s in load(ci_subset=args.ci) if not args.names or s.name in args.names]
    if args.ci:
        scripts = [ci_cases(s) for s in scripts]
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    graded = run_all(scripts, work=args.keep, echo=not args.json)
    if args.json:
        print(json.dumps([g.to_json() for g in graded], indent=1))
    else:
        print("\n".join(table(graded)))
    return 0 if all(g.grade == "right" for g in graded) else 1


if __name__ == "__main__":
    sys.exit(main())
