"""What ``envkit guard show`` and ``envkit guard replay`` print: a run's summary, a replay's verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envkit._safe import one_line
from envkit.incident.runread import read_run

__all__ = ["explain_incident", "load_run", "render_replay", "render_run"]

NONFINITE = ("nonfinite-loss", "nonfinite-grad")


def load_run(run: Path) -> dict[str, Any]:
    """The run's summary (:func:`envkit.incident.runread.read_run`): every field checked, as JSON."""
    return read_run(run).to_json()


def _t(value: Any, limit: int = 500) -> str:
    """A value from a file, shown on one line (line breaks and controls escaped), at most ``limit``."""
    text = one_line(value if isinstance(value, str) else str(value))
    return text if len(text) <= limit else text[:limit] + "…"


def _num(value: Any, spec: str = ".4g") -> str:
    if isinstance(value, float) or (
        isinstance(value, int) and not isinstance(value, bool) and abs(value) < 1 << 53
    ):
        return format(value, spec)
    return _t(value, 60)


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _batch_line(bad: dict[str, Any]) -> str:
    index = _list(bad.get("index"))
    return (
        f"the batch holds {_t(bad.get('value'), 40)} in {_t(bad.get('tensor'), 200)} at "
        f"[{_t(', '.join(map(str, index[:16])), 200)}] ({_t(bad.get('count'), 30)} of "
        f"{_t(bad.get('size'), 30)} values non-finite): the input, not the model"
    )


def _localization(raw: Any, input_blamed: bool = False) -> list[str]:
    """The localization's lines; when the input holds NaN/Inf (said here or in the message), no
    parameter is named: their non-finite gradients follow from the input (issue 44 item 7)."""
    loc = _obj(raw)
    lines = []
    rank = loc.get("rank")  # a DDP replay: the rank whose step went bad (this dump's rank's was finite)
    if isinstance(rank, int) and not isinstance(rank, bool):
        lines.append(f"on rank {rank} (its step went non-finite; this dump's rank's step did not):")
    bad = _obj(loc.get("nonfinite_batch"))
    if isinstance(bad.get("index"), list):
        lines.append(_batch_line(bad))
        input_blamed = True
    mod = _obj(loc.get("first_nonfinite_module"))
    if mod:
        lines.append(
            f"first non-finite output: {_t(mod.get('module'))} ({_t(mod.get('type'))}), its inputs finite "
            f"(|x| ≤ {_num(mod.get('inputs_absmax'))}); non-finite: {_t(mod.get('output'))}"
        )
        if mod.get("nonfinite_parameter") and not input_blamed:
            lines.append(f"  its parameter {_t(mod['nonfinite_parameter'])} is non-finite")
    back = _obj(loc.get("first_nonfinite_backward"))
    if back and not mod:
        lines.append(
            f"first non-finite gradient made in backward: {_t(back.get('module'))} ({_t(back.get('type'))}): "
            f"the gradients it received were finite, {_t(back.get('gradient'))} is not"
        )
    if loc.get("raised_in"):
        lines.append(f"raised in: {_t(loc['raised_in'])}: {_t(loc.get('error'))}")
    if loc.get("first_nonfinite_grad") and not input_blamed:
        lines.append(f"first non-finite gradient (backward order): {_t(loc['first_nonfinite_grad'])}")
    largest = _obj(loc.get("largest_grad"))
    if largest and not input_blamed:
        lines.append(f"largest gradient norm: {_t(largest.get('parameter'))} ({_t(largest.get('norm'), 40)})")
    lines += [f"hint: {_t(h)}" for h in _list(loc.get("hints"))[:20]]
    return lines


def _numbers(values: Any) -> str:
    if not isinstance(values, list):
        return "?"
    return ", ".join(_num(v, ".3g") for v in values[:64])


def _context(ctx: Any) -> list[str]:
    """The step's learning rate and update ratio per group, beside the largest before it."""
    if not isinstance(ctx, dict) or "lrs" not in ctx:
        return []
    before = _obj(ctx.get("largest_before"))
    line = f"lr {_numbers(ctx.get('lrs'))}"
    if before.get("lrs"):
        line += f" (largest before: {_numbers(before['lrs'])})"
    if "update_ratios" in ctx:
        line += f"; update lr·|grad|/|weight| {_numbers(ctx['update_ratios'])}"
        if before.get("update_ratios"):
            line += f" (largest before: {_numbers(before['update_ratios'])})"
    return [line]


def _not_reproduced(inc: dict[str, object]) -> list[str]:
    """A non-finite step whose in-loop replay (the localization) came out finite: say it did not recur."""
    loc = inc.get("localization")
    if inc.get("kind") not in NONFINITE or not isinstance(loc, dict) or loc.get("error"):
        return []
    replayed = _obj(loc.get("replayed"))
    if replayed:
        finite = all(isinstance(replayed.get(k), int | float) for k in ("loss", "grad_norm"))
    else:  # a record from before "replayed": nothing non-finite was found anywhere
        keys = (
            "nonfinite_batch",
            "first_nonfinite_module",
            "first_nonfinite_backward",
            "first_nonfinite_grad",
        )
        finite = "batch" in loc and not any(loc.get(k) for k in keys)
    if not finite:
        return []
    return [
        "did not reproduce: the guard's replay of this step (same weights, batch and generators, on a copy "
        "of the model) was finite — a one-off (the device, a race, a state the replay does not hold); "
        "replay the dump with `envkit guard replay` to check"
    ]


def explain_incident(inc: dict[str, object], run: str) -> list[str]:
    """What is known of an incident beyond its message: lr and update, the dump, the localization."""
    lines = _context(inc.get("context"))
    if inc.get("dump"):
        lines.append(f"dump: {_t(Path(run) / str(inc['dump']))}")
    loc = inc.get("localization")
    said = "the batch holds" in str(inc.get("message"))
    if isinstance(loc, dict) and said:
        loc = {k: v for k, v in loc.items() if k != "nonfinite_batch"}  # the message said it first
    return lines + _not_reproduced(inc) + _localization(loc, input_blamed=said)


def render_run(s: dict[str, Any]) -> str:
    share = f"{100 * s['clipped_share']:.1f} %"
    routine = " (the GradScaler's own back-offs)" if s["overflows"] else ""
    lines = [
        f"{_t(s['run'])}: {s['steps']} steps, {s['skipped']} skipped, {s['overflows']} loss-scale overflows"
        f"{routine}, {s['clipped_steps']} clipped ({share}), "
        f"{len(s['incidents'])} incidents ({s['spikes']} spikes)"
    ]
    if not s.get("closed", True):
        lines.append("  the run did not close")
    lines += [f"  note: {_t(n, 2000)}" for n in s.get("notes") or []]
    lines += [f"  skipped step {skip['step']}: {_t(skip['reason'])}" for skip in s["skips"][:200]]
    ledger = _obj(s["config"].get("ledger"))
    lines += [
        f"  ledger: step {_t(hit.get('step'), 30)}: {_t(hit.get('action'))} (its batch was skipped at step "
        f"{_t(hit.get('listed_step'), 30)} by {_t(hit.get('run') or 'a run')}: {_t(hit.get('kind'))}; "
        f"matched by {_t(hit.get('match'))})"
        for hit in (ledger.get("batches") or [])[:50]
        if isinstance(hit, dict)
    ]
    for inc in s["incidents"]:
        ranks = f" [ranks {', '.join(map(str, inc.get('ranks') or []))}]" if s["world_size"] > 1 else ""
        lines.append(
            f"incident at step {inc['step']}: {_t(inc['kind'])}: {_t(inc['message'])} "
            f"({_t(inc['action'])}){ranks}"
        )
        lines += [f"  {line}" for line in explain_incident(inc, s["run"])]
    if not s["incidents"]:
        lines.append("no incidents")
    if s.get("html"):
        lines.append(f"page: {_t(s['html'])}")
    return "\n".join(lines)


def render_replay(d: dict[str, Any]) -> str:
    rec = d["recorded"]
    lines = [f"{_t(d['dump'])}: step {d['step']}: {d['verdict']}"]
    loss, norm, kind = _t(rec["loss"], 40), _t(rec["grad_norm"], 40), _t(rec.get("kind"))
    lines.append(f"  recorded: loss {loss}, grad norm {norm} ({kind})")
    for i, r in enumerate(d["replays"], 1):
        err = f", raised {_t(r['error'])}" if r.get("error") else ""
        lines.append(f"  replay {i}: loss {r['loss']}, grad norm {r['grad_norm']}{err}")
    lines += [f"  {line}" for line in _localization(d.get("localization"))]
    for cause in d.get("causes") or []:
        lines.append(f"  cause: {_t(cause['message'], 1000)}")
    lines += [f"  note: {_t(n, 1000)}" for n in d.get("notes") or []]
    return "\n".join(lines)
