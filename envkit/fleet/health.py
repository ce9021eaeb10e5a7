"""``envkit health``: this node's latest verdict from the store, in the contract of each node checker.

The heavy probe runs as its own job; the fleet's history (:mod:`envkit.fleet.history`) writes every
node's verdict to ``STORE/.health/verdicts.json``. This module only reads that one file (bounded,
no framework, no comparison code imported: well under a second) and answers:

- **stay** (exit 0): stable or explained drift;
- **remove** (exit 1): a mercurial or suspect device on the node;
- **unknown** (exit 2): no verdict for the node, an unreadable one (or one others could have
  written: the file must not be group- or world-writable), a latest probe older than ``max_age``,
  or a node whose latest probe failed (a failed task says nothing about the numbers).

The contracts (NVIDIA Health Validation's exit codes, node-problem-detector's 0/1/2 and its
80-character message, Slurm's ``HealthCheckProgram`` that must drain the node itself, a Prolog whose
non-zero exit drains the node and requeues the job) are rendered by the CLI; draining is
:func:`drain_argv` run through :mod:`envkit._proc`.
"""

from __future__ import annotations

import os
import socket
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from envkit._safe import one_line
from envkit.errors import EnvkitError
from envkit.store.layout import HEALTH, HEALTH_FILE
from envkit.store.reads import read_store_json

__all__ = ["NPD_MESSAGE", "Health", "drain_argv", "node_name", "read_health"]

MAX_VERDICTS_BYTES = 64 << 20  # 10,000 nodes x a few devices: a few MB
NPD_MESSAGE = 80  # node-problem-detector's default max_output_length
REMOVE = frozenset({"mercurial", "suspect"})
STAY = frozenset({"stable", "explained drift"})
_EXIT = {"stay": 0, "remove": 1, "unknown": 2}


@dataclass(frozen=True)
class Health:
    """This node's answer: stay, remove or unknown, the verdict behind it and why."""

    node: str
    action: str  # stay | remove | unknown
    verdict: str | None
    reason: str
    probed: float | None = None  # when its latest probe ran (the run's creation time)
    last_run: str | None = None

    @property
    def exit_code(self) -> int:
        return _EXIT[self.action]

    def message(self, limit: int = NPD_MESSAGE) -> str:
        """One line of at most ``limit`` characters: ``envkit: <verdict>: <reason>``."""
        text = one_line(f"envkit: {self.verdict or 'no verdict'}: {self.reason}")
        return text if len(text) <= limit else text[: limit - 1] + "…"

    def to_json(self) -> dict[str, object]:
        return {"node": self.node, "action": self.action, "verdict": self.verdict, "reason": self.reason,
                "probed": self.probed, "last_run": self.last_run, "exit": self.exit_code}  # fmt: skip


def node_name(environ: Mapping[str, str] | None = None) -> str:
    """This node as the scheduler names it: ``SLURMD_NODENAME`` (Slurm's hooks), ``NODE_NAME``
    (a Kubernetes pod given it from ``spec.nodeName``), else the short host name."""
    env = os.environ if environ is None else environ
    return env.get("SLURMD_NODENAME") or env.get("NODE_NAME") or socket.gethostname().split(".")[0]


def _verdicts(path: Path) -> dict[str, object] | str:
    """The verdicts file's nodes, or why it cannot be used."""
    try:
        data = read_store_json(path, limit=MAX_VERDICTS_BYTES, what="verdicts file")
        mode = path.stat().st_mode
    except FileNotFoundError:
        return f"no verdicts in {path.parent.parent} (run `envkit fleet history STORE`)"
    except EnvkitError as e:
        return e.message
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{path} is writable by others (mode {stat.S_IMODE(mode):o}): not trusted"
    nodes = data.get("nodes")
    return nodes if isinstance(nodes, dict) else f"{path}: not a verdicts file (no nodes)"


def read_health(store: Path, node: str, *, max_age: float | None = None, now: float | None = None) -> Health:
    """The node's verdict as ``envkit fleet history`` last wrote it."""
    path = store / HEALTH / HEALTH_FILE
    nodes = _verdicts(path)
    if isinstance(nodes, str):
        return Health(node, "unknown", None, nodes)
    data = nodes.get(node)
    if not isinstance(data, dict):
        return Health(node, "unknown", None, f"no verdict for {one_line(node)[:80]} in {path}")
    verdict, reason = data.get("verdict"), data.get("reason")
    probed = data.get("probed") if isinstance(data.get("probed"), int | float) else None
    last_run = one_line(data["last_run"])[:200] if isinstance(data.get("last_run"), str) else None
    why = one_line(str(reason))[:500] if reason else ""
    if not isinstance(verdict, str) or verdict not in REMOVE | STAY | {"failed"}:
        return Health(node, "unknown", None, f"{path}: not a verdict ({one_line(str(verdict))[:40]})")
    age = (time.time() if now is None else now) - float(probed or 0)
    if max_age is not None and age > max_age:
        why = f"its latest probe is {age:.0f} s old (--max-age {max_age:.0f})"
        return Health(node, "unknown", verdict, why, probed, last_run)
    if verdict == "failed":
        return Health(node, "unknown", verdict, f"its latest probe failed: {why}", probed, last_run)
    action = "remove" if verdict in REMOVE else "stay"
    return Health(node, action, verdict, why, probed, last_run)


def drain_argv(health: Health) -> list[str]:
    """``scontrol update NodeName=… State=DRAIN Reason="envkit: …"`` for a node to remove."""
    reason = health.message(limit=200).replace('"', "'")
    return ["scontrol", "update", f"NodeName={health.node}", "State=DRAIN", f"Reason={reason}"]
