"""A planted fault for tests: ``ENVKIT_TEST_PERTURB`` makes one task's numbers wrong, on some runs only.

Test-only: nothing in envkit sets the variable, and a report it touched says so (``config.planted``).
The variable holds one or more plantings separated by ``;``, each ``key=value`` pairs joined by ``,``:

- ``p=0.3``: the share of runs on which the planting fires (default 1);
- ``seed=7``: with the run's key (``ENVKIT_FLEET_RUN``, the task and the ``--repeat`` rerun; a
  random key outside a fleet run) it decides, reproducibly, whether this run fires and at which step;
- ``task=NAME`` / ``node=NAME`` / ``gpu=ID``: only the task of that name (``ENVKIT_FLEET_TASK``), the
  node (``ENVKIT_NODE``, ``SLURMD_NODENAME``, else the host name) or the GPU (``CUDA_VISIBLE_DEVICES``);
- what it does: flip the lowest bit of one step's loss (the default: a mercurial device: same
  fingerprint, different bits), or ``threads=N``: run with N intra-op threads (an explained
  difference: the report records the thread count, so the fingerprint says why).

Standard library only (part of the payload).
"""

from __future__ import annotations

import hashlib
import os
import socket
import struct
from dataclasses import dataclass

ENV = "ENVKIT_TEST_PERTURB"
_KEYS = ("p", "seed", "task", "node", "gpu", "threads")


@dataclass(frozen=True)
class Plant:
    """One planting: how often, where, and what (a flipped loss bit, or a thread count)."""

    spec: str
    p: float = 1.0
    seed: int = 0
    task: str | None = None
    node: str | None = None
    gpu: str | None = None
    threads: int | None = None


def parse(text: str) -> list[Plant]:
    """The plantings of ``text``; a malformed one raises ``ValueError`` naming it."""
    out = []
    for spec in (s.strip() for s in text.split(";")):
        if not spec:
            continue
        fields: dict[str, str] = {}
        for item in spec.split(","):
            key, sep, value = item.strip().partition("=")
            if not sep or key not in _KEYS:
                raise ValueError(f"{ENV}: {item.strip()!r} in {spec!r}: expected one of {', '.join(_KEYS)}=…")
            fields[key] = value.strip()
        p = float(fields.get("p", "1"))
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"{ENV}: p={p} in {spec!r}: a share between 0 and 1")
        threads = int(fields["threads"]) if "threads" in fields else None
        out.append(Plant(spec, p, int(fields.get("seed", "0")), fields.get("task"), fields.get("node"),
                         fields.get("gpu"), threads))  # fmt: skip
    return out


def _node(environ: dict[str, str]) -> str:
    return environ.get("ENVKIT_NODE") or environ.get("SLURMD_NODENAME") or socket.gethostname()


def matches(plant: Plant, environ: dict[str, str]) -> bool:
    """Does ``plant`` apply to this task?"""
    return (
        (plant.task is None or plant.task == environ.get("ENVKIT_FLEET_TASK"))
        and (plant.node is None or plant.node == _node(environ))
        and (plant.gpu is None or plant.gpu == environ.get("CUDA_VISIBLE_DEVICES"))
    )


def _draw(plant: Plant, key: str, what: str) -> float:
    digest = hashlib.sha256(f"{plant.seed}:{key}:{what}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def run_key(environ: dict[str, str]) -> str:
    """This run's key: the fleet run and task, or a fresh random one outside a fleet run."""
    run = environ.get("ENVKIT_FLEET_RUN")
    task, rerun = environ.get("ENVKIT_FLEET_TASK"), environ.get("ENVKIT_FLEET_REPEAT", "0")
    return f"{run}/{task}/{rerun}" if run else os.urandom(8).hex()


@dataclass(frozen=True)
class Planted:
    """What the planting does to this run: the thread count, the step whose loss bit flips (or none)."""

    plant: Plant
    fired: bool
    step: int | None
    threads: int | None

    def to_json(self) -> dict[str, object]:
        return {"spec": self.plant.spec, "fired": self.fired, "step": self.step, "threads": self.threads}


def planted(environ: dict[str, str], steps: int) -> Planted | None:
    """The first planting that applies to this task, decided for this run; None without one."""
    text = environ.get(ENV, "")
    plant = next((p for p in parse(text) if matches(p, environ)), None) if text else None
    if plant is None:
        return None
    key = run_key(environ)
    fired = _draw(plant, key, "fire") < plant.p
    if plant.threads is not None:
        return Planted(plant, fired, None, plant.threads if fired else None)
    step = 1 + int(_draw(plant, key, "step") * steps) if fired else None
    return Planted(plant, fired, step, None)


def flip_low_bit(value: float, dtype: str) -> float:
    """``value`` with the lowest bit of its mantissa flipped (in the probe's dtype)."""
    fmt, ifmt = ("<d", "<q") if dtype == "float64" else ("<f", "<i")
    (bits,) = struct.unpack(ifmt, struct.pack(fmt, value))
    (out,) = struct.unpack(fmt, struct.pack(ifmt, bits ^ 1))
    return float(out)
