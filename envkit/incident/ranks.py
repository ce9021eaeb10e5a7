"""The dumps of one data-parallel step: every rank's, found beside the one a replay was given.

In a process group (DDP, FSDP's no-shard path, Paddle's DataParallel) the guard records each rank's
own loss, but the gradient norm it records is of the gradients *after the all-reduce*: the mean of
every rank's. One rank's dump replayed alone therefore gives its own loss bitwise and another
gradient norm (its local one), and a NaN that came from another rank's batch is not in it at all:
before, every such replay said ``transient … suspect the device``. Every rank writes its dump of the
step (the decision is taken on gathered values), rank 0 under ``RUN/incidents/step-N-rank-0`` and rank
k under ``RUN/rank-k/incidents/step-N-rank-k``; a replay finds the others there (or beside the given
dump, when the dumps were copied into one folder), checks that each is the same step of the same run
(its rank, world size, step, and its loss equal to what the given dump's record says that rank's
loss was), and replays them all (:mod:`envkit.incident.replay`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envkit.errors import DumpError
from envkit.guard.dump import Dump, read_dump
from envkit.guard.records import read_float

__all__ = ["RankDumps", "rank_dumps", "recorded_rank_losses"]

MAX_RANKS = 64  # a replay runs every rank's step in one process: past this, the given rank alone


@dataclass(frozen=True)
class RankDumps:
    """The given dump's rank and world size, and every rank's dump found (``dumps[rank]``)."""

    rank: int
    world: int
    dumps: dict[int, Dump]
    missing: list[str] = field(default_factory=list)  # why a rank's dump is not there (one per rank)

    @property
    def complete(self) -> bool:
        return len(self.dumps) == self.world


def _int(dump: Dump, name: str, default: int) -> int:
    value = dump.manifest.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DumpError(f"{dump.file('manifest.json')}: {name} {value!r}: expected an integer", hint="edited")
    return value


def recorded_rank_losses(dump: Dump) -> list[float] | None:
    """Each rank's loss at the dump's step, as the guard gathered it (``records.json``), or None."""
    records = dump.json_parts.get("records.json")
    mine = [r for r in records if isinstance(r, dict) and r.get("step") == dump.step] if records else []
    raw = mine[-1].get("rank_losses") if mine else None
    if not isinstance(raw, list):
        return None
    try:
        return [read_float(v) for v in raw]
    except (TypeError, ValueError) as e:
        raise DumpError(f"{dump.file('records.json')}: rank_losses: expected numbers", hint="edited") from e


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a.hex() == b.hex()


def _candidates(dump: Dump, rank: int, other: int) -> list[Path]:
    name = f"step-{dump.step}-rank-{other}"
    here = dump.path.parent  # RUN/incidents or RUN/rank-K/incidents
    root = here.parent.parent if here.parent.name == f"rank-{rank}" else here.parent
    beside_run = root / "incidents" / name if other == 0 else root / f"rank-{other}" / "incidents" / name
    return [beside_run, here / name]


def _outcome_loss(dump: Dump) -> float | None:
    outcome = dump.manifest.get("outcome")
    try:
        return read_float(outcome.get("loss")) if isinstance(outcome, dict) else None
    except (TypeError, ValueError):
        return None


def rank_dumps(dump: Dump) -> RankDumps:
    """The given dump and its step's dumps of the other ranks that can be found and check out."""
    rank, world = _int(dump, "rank", 0), _int(dump, "world_size", 1)
    if world <= 1 or world > MAX_RANKS or rank >= world:
        return RankDumps(rank, max(world, 1), {rank: dump}, [] if world <= 1 else [f"{world} ranks"])
    losses = recorded_rank_losses(dump)
    found: dict[int, Dump] = {rank: dump}
    missing: list[str] = []
    for other in range(world):
        if other == rank:
            continue
        paths = [p for p in _candidates(dump, rank, other) if p.is_dir()]
        if not paths:
            missing.append(f"rank {other}: no {_candidates(dump, rank, other)[0]}")
            continue
        try:
            sibling = read_dump(paths[0])
        except DumpError as e:
            missing.append(f"rank {other}: {e.message}")
            continue
        why = _mismatch(dump, sibling, other, world, losses)
        if why:
            missing.append(f"rank {other}: {sibling.path}: {why}")
            continue
        found[other] = sibling
    return RankDumps(rank, world, found, missing)


def _mismatch(dump: Dump, sibling: Dump, other: int, world: int, losses: list[float] | None) -> str:
    """Why ``sibling`` is not rank ``other``'s dump of ``dump``'s step ('' when it is)."""
    if sibling.framework != dump.framework or sibling.step != dump.step:
        return f"a {sibling.framework} dump of step {sibling.step}, not of this step"
    if _int(sibling, "rank", -1) != other or _int(sibling, "world_size", 1) != world:
        return "its manifest names another rank or world size"
    theirs: Any = _outcome_loss(sibling)
    if losses is not None and len(losses) == world and (theirs is None or not _same(theirs, losses[other])):
        return f"its loss {theirs} is not rank {other}'s recorded {losses[other]}: another run's dump"
    return ""
