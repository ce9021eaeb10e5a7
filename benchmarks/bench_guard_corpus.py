"""The guard corpus's row (issue 44): false alarms per 1,000 clean steps and crashes, per script.

Runs every case of ``tests/guard_corpus/`` (real public training scripts, guarded, each a process:
``make guard-corpus`` prints the grades) and prints per script the clean steps (healthy runs, and
fault runs before their fault), the incidents among them, their rate per 1,000, the crashes (the
process died of anything but ``GuardStopped``) and the healthy runs stopped. Goals (issue 44): 0
crashes, 0 healthy runs stopped, <= 1 false alarm per 1,000 clean steps per script. ``--smoke`` runs
one script's CI subset (seconds).
"""

from __future__ import annotations

import time
from collections import defaultdict

from benchmarks._goals import smoke
from tests.guard_corpus._record import ci_cases, load
from tests.guard_corpus.grade import Graded, run_all

FA_GOAL = 1.0  # false alarms per 1,000 clean steps, per script


def rows(graded: list[Graded]) -> list[str]:
    by_script: dict[str, list[Graded]] = defaultdict(list)
    for g in graded:
        by_script[g.case.script].append(g)
    cols = f"{'clean steps':>12}{'alarms':>8}{'per 1k':>8}{'crashes':>9}{'stopped':>9}"
    head = f"    {'script':<22}{cols}  verdict"
    lines = [head]
    for name, rows_ in sorted(by_script.items()):
        clean = sum(g.clean_steps for g in rows_)
        alarms = sum(g.false_alarms for g in rows_)
        rate = 1000.0 * alarms / clean if clean else 0.0
        crashes = sum(g.grade == "crash" for g in rows_)
        stopped = sum(g.case.expect is None and "stopped" in g.detail for g in rows_)
        ok = rate <= FA_GOAL and crashes == 0 and stopped == 0
        verdict = "ok" if ok else "MISSES"
        lines.append(f"    {name:<22}{clean:>12}{alarms:>8}{rate:>8.2f}{crashes:>9}{stopped:>9}  {verdict}")
    return lines


def main() -> None:
    scripts = load(ci_subset=smoke())
    if smoke():
        scripts = [ci_cases(s) for s in scripts if s.name == "paddle_amp"]
    start = time.perf_counter()
    graded = run_all(scripts)
    goals = f"0 crashes, 0 healthy runs stopped, <= {FA_GOAL:g} false alarm per 1,000 clean steps"
    print(f"guard corpus: {len(graded)} cases of {len(scripts)} scripts, as processes (goals: {goals})")
    for line in rows(graded):
        print(line, flush=True)
    print(f"    ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
