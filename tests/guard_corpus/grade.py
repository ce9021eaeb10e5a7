"""Run each corpus case as a process and grade it against its record: right / partly / wrong / crash /
false alarm (``make guard-corpus``; ``python -m tests.guard_corpus [--ci] [--json] [NAME ...]``).

- **crash**: the process died of anything but the guard's own ``GuardStopped`` (the guard raised into
  the training it guards, or left no ``report.json``), unless the record expects the step to raise
  (``continues: false``) and the guard recorded it as raised there (the script's own error, re-raised);
- **wrong**: a planted fault with no incident at its step (missed);
- **false alarm**: an incident at a step where nothing was planted, or a healthy run stopped;
- **partly**: the fault found at its step, but the kind, action, place, cause, replay verdict or
  whether the run went on differ from the record (the detail says which);
- **right**: everything the record expects.

Clean steps (a healthy run's steps; a fault run's steps before its fault) and the incidents among
them give the false alarms per 1,000 clean steps (``benchmarks/bench_guard_corpus.py``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

from envkit.incident.show import load_run
from tests.guard_corpus._record import SCRIPTS, Case, Script

Grade = Literal["right", "partly", "wrong", "crash", "false alarm"]
GRADES: tuple[Grade, ...] = ("right", "partly", "false alarm", "wrong", "crash")
REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 900


@dataclasses.dataclass(frozen=True)
class Outcome:
    rc: int
    stdout: str
    stderr: str
    run: Path
    seconds: float


@dataclasses.dataclass(frozen=True)
class Graded:
    case: Case
    grade: Grade
    detail: str
    trained: int
    clean_steps: int
    false_alarms: int
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "case": self.case.label,
            "fault": self.case.fault,
            "grade": self.grade,
            "detail": self.detail,
            "trained": self.trained,
            "clean_steps": self.clean_steps,
            "false_alarms": self.false_alarms,
            "seconds": round(self.seconds, 1),
        }


def _env(case: Case, run: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env["ENVKIT_GC_RUN"] = str(run)
    env.pop("ENVKIT_GC_FAULT", None)
    if case.fault:
        env["ENVKIT_GC_FAULT"] = case.fault
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def execute(script: Script, case: Case, work: Path) -> Outcome:
    """Run one case as its own process (two with ``launch: torchrun``), in scripts/."""
    run = work / f"{script.name}-{case.name}"
    if script.launch == "torchrun":
        argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    else:
        argv = [sys.executable]
    argv += [str(script.path), *case.args]
    start = time.perf_counter()
    try:
        done = subprocess.run(
            argv, cwd=SCRIPTS, env=_env(case, run), capture_output=True, text=True, timeout=TIMEOUT_S
        )
        rc, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = 124, str(e.stdout or ""), f"timed out after {TIMEOUT_S} s"
    return Outcome(rc, out, err, run, time.perf_counter() - start)


def _trained(stdout: str) -> int:
    for line in reversed(stdout.splitlines()):
        if line.startswith('{"trained"'):
            return int(json.loads(line)["trained"])
    return 0


def _text(incident: dict[str, Any]) -> str:
    parts = [
        incident.get("message", ""),
        json.dumps(incident.get("localization")),
        json.dumps(incident.get("context")),
    ]
    return "\n".join(str(p) for p in parts)


def replay_verdict(script: Script, dump: Path) -> str:
    """``envkit guard replay DUMP --entry ENTRY --json``'s verdict (or why there is none)."""
    argv = [sys.executable, "-m", "envkit", "guard", "replay", str(dump), "--entry", script.entry, "--json"]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), str(SCRIPTS), env.get("PYTHONPATH", "")) if p)
    env.setdefault("OMP_NUM_THREADS", "1")  # the run's thread count (the scripts run on one thread)
    try:
        done = subprocess.run(argv, cwd=SCRIPTS, env=env, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return "replay timed out"
    out = done.stdout
    start = out.find("\n{") + 1 if not out.startswith("{") else 0  # the entry's own prints before it
    try:
        doc = json.loads(out[start:])
    except ValueError:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return f"no verdict (exit {done.returncode}: {tail[:120]})"
    result = doc.get("result") if isinstance(doc, dict) else None
    verdict = result.get("verdict") if isinstance(result, dict) else None
    if verdict:
        return str(verdict)
    errors = doc.get("errors") if isinstance(doc, dict) else None
    first = errors[0] if isinstance(errors, list) and errors and isinstance(errors[0], dict) else {}
    return f"refused: {str(first.get('message', out[:80]))[:140]}"


def _window(case: Case) -> range:
    if case.expect is None:
        return range(0)
    return range(case.expect.step, case.expect.step + case.expect.within + 1)


def _misses(script: Script, case: Case, found: dict[str, Any], run: Path, finished: bool) -> list[str]:
    """What the found incident gets wrong against the record (empty: right)."""
    e = case.expect
    assert e is not None
    text = _text(found)
    said = "\n".join(str(found.get(k)) for k in ("message", "localization"))
    misses = []
    if found.get("kind") not in e.kinds:
        misses.append(f"kind {found.get('kind')} (expected {'/'.join(e.kinds)})")
    if e.action and found.get("action") != e.action:
        misses.append(f"action {found.get('action')} (expected {e.action})")
    if e.place and not re.search(e.place, text, re.IGNORECASE):
        misses.append(f"place /{e.place}/ not named")
    if e.cause and not re.search(e.cause, text, re.IGNORECASE):
        misses.append(f"cause /{e.cause}/ not said")
    if e.not_says and re.search(e.not_says, said, re.IGNORECASE):
        misses.append(f"says /{e.not_says}/")
    if finished != e.continues:
        misses.append("the run went on" if finished else "the run stopped")
    if e.replay:
        dump = found.get("dump")
        verdict = replay_verdict(script, run / dump) if dump else "no dump"
        if verdict != e.replay:
            misses.append(f"replay {verdict} (expected {e.replay})")
    return misses


def _crash_line(stderr: str) -> str:
    lines = [re.sub(r"^\[rank\d+\]:\s*", "", ln) for ln in stderr.strip().splitlines() if ln.strip()]
    errors = [
        ln
        for ln in lines
        if re.match(r"^[\w.]*(Error|Exception|Stopped)\b", ln.strip()) and "ChildFailedError" not in ln
    ]
    return (errors or lines or ["no output"])[0 if errors else -1].strip()[:200]


def grade(script: Script, case: Case, out: Outcome) -> Graded:
    trained = _trained(out.stdout)
    stopped = "GuardStopped" in out.stderr
    try:
        summary = load_run(out.run)
    except Exception as e:  # noqa: BLE001 - a missing or broken report is graded, not raised
        incidents, recorded, report_error = [], 0, f"no report: {e}"
    else:
        incidents, recorded, report_error = list(summary["incidents"]), int(summary["steps"]), ""
    trained = trained or recorded  # a stopped run prints no summary: the steps its report holds
    window = _window(case)
    inside = [i for i in incidents if int(i.get("step", -1)) in window]
    # a fault's aftermath (incidents after its window) is not a false alarm: only steps before it are clean
    first = case.expect.step if case.expect else None
    outside = [i for i in incidents if first is None or int(i.get("step", -1)) < first]
    clean = min(first, trained) if first is not None else trained
    finished = out.rc == 0 and trained >= case.steps

    def done(g: Grade, detail: str) -> Graded:
        return Graded(case, g, detail, trained, clean, len(outside), out.seconds)

    alarms = ", ".join(f"{i.get('kind')}@{i.get('step')}" for i in outside[:6])
    raised_in_window = any(i.get("action") == "raised" for i in inside)
    expected_raise = case.expect is not None and not case.expect.continues and raised_in_window
    if out.rc != 0 and not stopped and not expected_raise:  # the script's own error, recorded: not a crash
        return done("crash", f"exit {out.rc}: {_crash_line(out.stderr)}")
    if report_error and out.rc == 0:
        return done("crash", report_error)
    if case.expect is None:
        if stopped:
            return done("false alarm", f"a healthy run stopped: {_crash_line(out.stderr)}; {alarms}")
        if outside:
            return done("false alarm", f"{len(outside)} incident(s) on a healthy run: {alarms}")
        return done("right", f"{trained} steps, no incident")
    if not inside and stopped and not any(int(i.get("step", -1)) >= case.expect.step for i in incidents):
        return done("false alarm", f"stopped before the fault: {_crash_line(out.stderr)}")
    if not inside:
        seen = f"; incidents: {alarms}" if outside else ""
        return done("wrong", f"missed: nothing at step {case.expect.step}{seen}")
    misses = _misses(script, case, inside[0], out.run, finished)
    if outside:
        return done("false alarm", f"also {alarms}" + (f"; {'; '.join(misses)}" if misses else ""))
    if misses:
        return done("partly", "; ".join(misses))
    return done("right", f"{inside[0].get('kind')}@{inside[0].get('step')} {inside[0].get('action')}")


def run_all(scripts: list[Script], *, work: Path | None = None, echo: bool = False) -> list[Graded]:
    graded = []
    with tempfile.TemporaryDirectory(prefix="guard-corpus-") as tmp:
        base = work or Path(tmp)
        for script in scripts:
            for case in script.cases:
                g = grade(script, case, execute(script, case, base))
                graded.append(g)
                if echo:
                    print(f"  {g.grade:<12}{case.label:<32}{g.seconds:6.1f} s  {g.detail[:110]}", flush=True)
    return graded
