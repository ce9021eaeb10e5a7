"""What ``envkit guard show`` and ``envkit guard replay`` print: a run's summary, a replay's verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envkit.errors import ReportError
from envkit.guard.localize import describe_nonfinite
from envkit.probe.report import load_report

__all__ = ["explain_incident", "load_run", "render_replay", "render_run"]


def load_run(run: Path) -> dict[str, Any]:
    """RUN/report.json, checked as a probe report, and the guard's part of it, summarized."""
    path = run / "report.json" if run.is_dir() or not run.name.endswith(".json") else run
    report = load_report(path)
    guard = report.document.get("guard")
    if not isinstance(guard, dict) or not isinstance(guard.get("steps"), list):
        raise ReportError(
            f"{path}: a probe report without a 'guard' part: not written by envkit.guard",
            hint="give the RUN directory a Guard(run=...) wrote (probe reports: `envkit probe --compare`)",
        )
    for key in ("incidents", "skips"):
        if not isinstance(guard.get(key), list) or not all(isinstance(i, dict) for i in guard[key]):
            raise ReportError(
                f"{path}: guard.{key}: expected a list of objects", hint="the report was edited"
            )
    steps = guard["steps"]
    incidents = guard["incidents"]
    spikes = [i for i in incidents if str(i.get("kind", "")).endswith("-spike")]
    overflows = sum(1 for s in steps if isinstance(s, dict) and s.get("overflow"))
    clipped = guard.get("clipped_steps") or 0
    return {
        "run": str(path.parent),
        "steps": len(steps),
        "skipped": len(guard["skips"]),
        "skips": guard["skips"],
        "overflows": overflows,
        "clipped_steps": clipped,
        "clipped_share": clipped / len(steps) if steps else 0.0,
        "incidents": incidents,
        "spikes": len(spikes),
        "config": guard.get("config") or {},
        "rank": guard.get("rank", 0),
        "world_size": guard.get("world_size", 1),
    }


def _localization(loc: dict[str, Any] | None) -> list[str]:
    if not loc:
        return []
    lines = []
    bad = loc.get("nonfinite_batch")
    if isinstance(bad, dict) and isinstance(bad.get("index"), list):
        lines.append(describe_nonfinite(bad))
    mod = loc.get("first_nonfinite_module")
    if mod:
        absmax = mod.get("inputs_absmax")
        size = f"{absmax:.4g}" if isinstance(absmax, int | float) else absmax
        lines.append(
            f"first non-finite output: {mod.get('module')} ({mod.get('type')}), its inputs finite "
            f"(|x| ≤ {size}); non-finite: {mod.get('output')}"
        )
        if mod.get("nonfinite_parameter"):
            lines.append(f"  its parameter {mod['nonfinite_parameter']} is non-finite")
    back = loc.get("first_nonfinite_backward")
    if isinstance(back, dict) and not mod:
        lines.append(
            f"first non-finite gradient made in backward: {back.get('module')} ({back.get('type')}): "
            f"the gradients it received were finite, {back.get('gradient')} is not"
        )
    if loc.get("raised_in"):
        lines.append(f"raised in: {loc['raised_in']}: {loc.get('error')}")
    if loc.get("first_nonfinite_grad"):
        lines.append(f"first non-finite gradient (backward order): {loc['first_nonfinite_grad']}")
    largest = loc.get("largest_grad")
    if largest:
        lines.append(f"largest gradient norm: {largest.get('parameter')} ({largest.get('norm')})")
    lines += [f"hint: {h}" for h in loc.get("hints") or []]
    return lines


def _numbers(values: Any) -> str:
    if not isinstance(values, list):
        return "?"
    return ", ".join(f"{v:.3g}" if isinstance(v, int | float) else str(v) for v in values)


def _context(ctx: Any) -> list[str]:
    """The step's learning rate and update ratio per group, beside the largest before it."""
    if not isinstance(ctx, dict) or "lrs" not in ctx:
        return []
    raw = ctx.get("largest_before")
    before: dict[str, Any] = raw if isinstance(raw, dict) else {}
    line = f"lr {_numbers(ctx.get('lrs'))}"
    if before.get("lrs"):
        line += f" (largest before: {_numbers(before['lrs'])})"
    if "update_ratios" in ctx:
        line += f"; update lr·|grad|/|weight| {_numbers(ctx['update_ratios'])}"
        if before.get("update_ratios"):
            line += f" (largest before: {_numbers(before['update_ratios'])})"
    return [line]


def explain_incident(inc: dict[str, Any], run: str) -> list[str]:
    """What is known of an incident beyond its message: lr and update, the dump, the localization."""
    lines = _context(inc.get("context"))
    if inc.get("dump"):
        lines.append(f"dump: {Path(run) / inc['dump']}")
    loc = inc.get("localization")
    if isinstance(loc, dict) and "the batch holds" in str(inc.get("message")):
        loc = {k: v for k, v in loc.items() if k != "nonfinite_batch"}  # the message said it first
    return lines + _localization(loc)


def render_run(s: dict[str, Any]) -> str:
    share = f"{100 * s['clipped_share']:.1f} %"
    lines = [
        f"{s['run']}: {s['steps']} steps, {s['skipped']} skipped, {s['overflows']} loss-scale overflows, "
        f"{s['clipped_steps']} clipped ({share}), {len(s['incidents'])} incidents ({s['spikes']} spikes)"
    ]
    lines += [f"  skipped step {skip.get('step')}: {skip.get('reason')}" for skip in s["skips"]]
    ledger = s["config"].get("ledger") if isinstance(s["config"].get("ledger"), dict) else {}
    lines += [
        f"  ledger: step {hit.get('step')}: {hit.get('action')} (its batch was skipped at step "
        f"{hit.get('listed_step')} by {hit.get('run') or 'a run'}: {hit.get('kind')}; matched by "
        f"{hit.get('match')})"
        for hit in (ledger.get("batches") or [])[:50]
        if isinstance(hit, dict)
    ]
    for inc in s["incidents"]:
        ranks = f" [ranks {', '.join(map(str, inc.get('ranks') or []))}]" if s["world_size"] > 1 else ""
        lines.append(
            f"incident at step {inc.get('step')}: {inc.get('kind')}: {inc.get('message')} "
            f"({inc.get('action')}){ranks}"
        )
        lines += [f"  {line}" for line in explain_incident(inc, s["run"])]
    if not s["incidents"]:
        lines.append("no incidents")
    if s.get("html"):
        lines.append(f"page: {s['html']}")
    return "\n".join(lines)


def render_replay(d: dict[str, Any]) -> str:
    rec = d["recorded"]
    lines = [f"{d['dump']}: step {d['step']}: {d['verdict']}"]
    lines.append(f"  recorded: loss {rec['loss']}, grad norm {rec['grad_norm']} ({rec.get('kind')})")
    for i, r in enumerate(d["replays"], 1):
        err = f", raised {r['error']}" if r.get("error") else ""
        lines.append(f"  replay {i}: loss {r['loss']}, grad norm {r['grad_norm']}{err}")
    lines += [f"  {line}" for line in _localization(d.get("localization"))]
    for cause in d.get("causes") or []:
        lines.append(f"  cause: {cause['message']}")
    lines += [f"  note: {n}" for n in d.get("notes") or []]
    return "\n".join(lines)
