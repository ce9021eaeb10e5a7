"""Host facts compared across inventories: findings of kind ``host``.

collect_env, probe reports and snapshots carry the machine, not only its packages: NVIDIA
driver, GPU model, CUDA runtime, cuDNN, whether CUDA is usable, OS, C library, CPU. Each
source names them its own way; :func:`host_facts` reads them into one set of keys, and
:func:`host_findings` compares them (driver/GPU/CUDA runtime/cuDNN differences at warning or
above, OS/libc/CPU at info), with the values in the message.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from envkit.drift.diff import no_majority, spread
from envkit.drift.models import DriftFinding, DriftSeverity
from envkit.inventory.models import Inventory

__all__ = ["HOST_FACTS", "host_facts", "host_findings", "not_collected"]

# fact -> (label in messages, meta keys in order of preference: collect_env, probe report, snapshot)
HOST_FACTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "driver": ("NVIDIA driver", ("driver", "gpu_driver", "facts.driver")),
    "gpu": ("GPU", ("gpu", "facts.gpu")),
    "cuda_runtime": ("CUDA runtime", ("cuda_runtime", "torch.cuda_runtime", "paddle.cuda_runtime")),
    "cudnn": ("cuDNN", ("cudnn", "torch.cudnn", "paddle.cudnn")),
    "cuda_available": ("CUDA available", ("cuda_available", "torch.cuda_available")),
    "os": ("OS", ("os", "facts.os")),
    "libc": ("C library", ("libc", "platform.libc", "facts.libc")),
    "cpu": ("CPU", ("cpu", "cpu.model", "facts.cpu")),
    "loaded": ("CUDA libraries loaded", ("loaded",)),  # envkit check --json
    "gpu_code": ("GPU code (SASS | PTX)", ("gpu_code",)),
}
_LEADING = re.compile(r"^(\d+)(?:\.(\d+))?")


def _cudnn(value: str) -> str:
    """torch reports cuDNN as one integer: 8902 is 8.9.2, 90100 is 9.1.0."""
    if value.isdigit() and len(value) == 4:
        return f"{value[0]}.{int(value[1])}.{int(value[2:])}"
    if value.isdigit() and len(value) == 5:
        return f"{value[0]}.{int(value[1:3])}.{int(value[3:])}"
    return value


def _cuda_available(value: str) -> str:
    return {"true": "yes", "false": "no"}.get(value.lower(), value.lower())


def host_facts(inv: Inventory) -> dict[str, str]:
    """The host facts ``inv`` records (only those it has)."""
    facts: dict[str, str] = {}
    for fact, (_, keys) in HOST_FACTS.items():
        value = next((inv.meta[k] for k in keys if inv.meta.get(k) not in (None, "", "None")), None)
        if value is None:
            continue
        if fact == "cudnn":
            value = _cudnn(value)
        elif fact == "cuda_available":
            value = _cuda_available(value)
        facts[fact] = value
    return facts


def _part(value: str, parts: int) -> str:
    match = _LEADING.match(value)
    if not match:
        return value
    return match[1] if parts == 1 or match[2] is None else f"{match[1]}.{match[2]}"


def _severity(fact: str, values: Sequence[str]) -> DriftSeverity:
    if fact == "cuda_runtime":
        if len({_part(v, 1) for v in values}) > 1:
            return "critical"
        return "warning" if len({_part(v, 2) for v in values}) > 1 else "info"
    if fact in {"driver", "cudnn"}:
        return "warning" if len({_part(v, 1) for v in values}) > 1 else "info"
    if fact in {"gpu", "cuda_available", "loaded", "gpu_code"}:
        return "warning"
    return "info"


# GPU facts whose absence, in an input that records its host, means "none": a CPU box's collect_env
# says "Could not collect" for the driver and GPU, its snapshot has no /proc/driver/nvidia.
_ONE_SIDED: dict[str, tuple[str, DriftSeverity]] = {
    "gpu": ("no GPU", "warning"),
    "driver": ("none", "warning"),
    "cuda_runtime": ("none", "warning"),
    "cudnn": ("none", "info"),
}


def _gpu_shown(inv: Inventory, gpu: str) -> str:
    """``NVIDIA H200 ×8``: the GPU with its count when the input says it (collect_env's ``GPU 0:``
    lines, the one line per GPU a snapshot lists), else as recorded."""
    models = gpu.split(", ")
    count = inv.meta.get("gpu_count") or (str(len(models)) if inv.format == "snapshot" else None)
    return f"{models[0]} ×{count}" if count and len(set(models)) == 1 else gpu


def _uncollected(fact: str, known: dict[str, str], uncollected: list[str]) -> DriftFinding:
    """A fact some inputs record and others could not collect: ``580.159.04 (a) vs not collected (b)``,
    never dropped (it may be the difference that matters; the other side cannot say)."""
    label = HOST_FACTS[fact][0]
    value = next(iter(known.values()))
    names = ", ".join(list(known)[:10])
    message = f"{label}: {value} ({names}) vs not collected ({', '.join(uncollected[:10])})"
    values: dict[str, str | None] = {**known, **dict.fromkeys(uncollected)}
    return DriftFinding(fact, "host", "info", None, values, message)


def _one_sided(
    fact: str, known: dict[str, str], missing: list[str], uncollected: Sequence[str] = ()
) -> DriftFinding:
    """A GPU fact some hosts have and others (that record their host) lack: ``NVIDIA H200 ×1 vs no GPU``."""
    label = HOST_FACTS[fact][0]
    none, severity = _ONE_SIDED[fact]
    if len(known) == 1 and len(missing) == 1:
        ((have, value),) = known.items()
        message = f"{label}: {value} ({have}) vs {none} ({missing[0]})"
    else:
        groups: dict[str, list[str]] = {}
        for name, value in known.items():
            groups.setdefault(value, []).append(name)
        shown = "; ".join(f"{v} on {len(n)} ({', '.join(n[:5])})" for v, n in sorted(groups.items()))
        message = f"{label}: {shown}; {none} on {len(missing)} ({', '.join(missing[:10])})"
    if uncollected:
        message += f"; not collected ({', '.join(uncollected[:10])})"
    values: dict[str, str | None] = {**known, **dict.fromkeys(missing), **dict.fromkeys(uncollected)}
    return DriftFinding(fact, "host", severity, None, values, message)


_LISTS = {"loaded", "gpu_code"}  # "; "-joined items: only the items that differ are shown


def _list_change(a: tuple[str, str], b: tuple[str, str]) -> str:
    """``libnccl.so.2: sm_80 | no PTX (a) -> libnccl.so.2: sm_90 | no PTX (b); only in a: ...``."""
    (name_a, va), (name_b, vb) = a, b

    def items(text: str) -> dict[str, str]:
        return {item.split(maxsplit=1)[0].rstrip(":"): item for item in text.split("; ") if item}

    ia, ib = items(va), items(vb)
    parts = [
        f"{ia[k]} ({name_a}) -> {ib[k]} ({name_b})" for k in sorted(ia.keys() & ib.keys()) if ia[k] != ib[k]
    ]
    parts += [
        f"only in {name}: {', '.join(sorted(x.keys() - y.keys()))}"
        for name, x, y in ((name_a, ia, ib), (name_b, ib, ia))
        if x.keys() - y.keys()
    ]
    return "; ".join(parts)


def not_collected(inv: Inventory) -> frozenset[str]:
    """The host facts ``inv`` says it could not read (collect_env's "Could not collect", "N/A"): unknown,
    not absent (issue 34 class 10: a Jetson whose driver collect_env cannot read has a GPU)."""
    return frozenset(filter(None, inv.meta.get("not_collected", "").split(",")))


def host_findings(inventories: Sequence[Inventory]) -> list[DriftFinding]:
    """One ``host`` finding per fact that differs among the inputs that record it; a GPU fact that
    some record and others (recording their host) lack is reported too (``driver 580 vs none``).
    A fact an input could not collect is unknown there: neither a value nor "none"."""
    if len(inventories) < 2:
        return []
    tables = [(inv.label, host_facts(inv)) for inv in inventories]
    unknown = {inv.label: not_collected(inv) for inv in inventories}
    findings = []
    for fact, (label, _) in HOST_FACTS.items():
        known = {name: facts[fact] for name, facts in tables if fact in facts}
        missing = [
            name for name, facts in tables if facts and fact not in facts and fact not in unknown[name]
        ]
        uncollected = [name for name, facts in tables if fact not in facts and fact in unknown[name]]
        if fact in _ONE_SIDED and known and missing:
            if fact == "gpu":
                by_label = {inv.label: inv for inv in inventories}
                known = {name: _gpu_shown(by_label[name], value) for name, value in known.items()}
            findings.append(_one_sided(fact, known, missing, uncollected))
            continue
        if known and uncollected and len(set(known.values())) < 2:
            findings.append(_uncollected(fact, known, uncollected))  # known here, unknown there: shown
            continue
        if len(known) < 2 or len(set(known.values())) < 2:
            continue
        severity = _severity(fact, list(known.values()))
        if len(known) == 2 and fact in _LISTS:
            message = f"{label}: {_list_change(*known.items())}"
        elif len(known) == 2:
            (a, va), (b, vb) = known.items()
            message = f"{label}: {va} ({a}) -> {vb} ({b})"
        else:
            majority, outliers = spread(dict(known))
            shown = ", ".join(f"{o} {known[o]}" for o in outliers[:10])
            message = (
                f"{label}: majority {majority} ({len(known) - len(outliers)}/{len(known)}); outliers: {shown}"
                if len(known) - len(outliers) > 1
                else f"{label}: {no_majority(dict(known))}"
            )
        values: dict[str, str | None] = {name: known.get(name) for name, _ in tables}
        findings.append(DriftFinding(fact, "host", severity, None, values, message))
    return findings
