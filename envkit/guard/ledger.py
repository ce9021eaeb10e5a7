"""The bad-batch ledger: the batches incidents skipped, honoured by a run resumed from a checkpoint.

``RUN/ledger.jsonl`` gets one line per step the guard skipped, stopped at or saw raise: the step,
the kind of incident, and a sha256 of the batch (its tensors' dtype, shape and bytes, in order).
It is appended to, never rewritten (a resumed run writing to the same RUN keeps it). A run resumed
from a checkpoint asks ``guard.skip_batch(step, batch)`` before it trains on a batch: with
``RunlogOptions(ledger="skip")`` (the default) a listed batch is skipped again — found at its step (a
resumed run sees the same data order: Megatron's ``iterations_to_skip`` matches by iteration too),
or by its digest at any other step (a reshuffled loader); the answer says which, and whether the
tensors at the listed step were bitwise those skipped (a batch that carries state, such as an
LSTM's hidden state, or another data order, differs); with
``ledger="replay"`` it is trained on on purpose (after a fix), and said so; ``"off"`` ignores the
ledger. Megatron (``iterations_to_skip``), OLMo and levanter users asked for this (see
``docs/guides/guard.md``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envkit._io import NotRegular, TooLarge, open_regular, read_limited
from envkit.errors import GuardError
from envkit.guard.adapter import Adapter, walk
from envkit.guard.files import append_text

__all__ = ["MODES", "Ledger", "LedgerEntry", "batch_digest"]

MODES = ("skip", "replay", "off")
MAX_LEDGER_BYTES = 64 << 20


def batch_digest(adapter: Adapter, batch: Any) -> str | None:
    """sha256 over the batch's tensors (path, dtype, shape, bytes); None for a batch without one."""
    digest = hashlib.sha256()
    found = False
    for path, t in walk(batch, adapter.is_tensor):
        arr = adapter.to_numpy(t)
        digest.update(f"{path}|{arr.dtype.str}|{list(arr.shape)}\0".encode())
        digest.update(arr.tobytes(order="C"))
        found = True
    return digest.hexdigest() if found else None


@dataclass(frozen=True)
class LedgerEntry:
    """One skipped batch: where, why, and what it held."""

    step: int
    kind: str
    digest: str | None
    run: str  # which run skipped it (the RUN folder's name then)


class Ledger:
    """``RUN/ledger.jsonl``: read once when the guard starts, appended to at each skipped incident."""

    def __init__(self, path: Path, mode: str = "skip") -> None:
        if mode not in MODES:
            raise GuardError(f"ledger={mode!r}: choose skip, replay or off", hint="see docs/guides/guard.md")
        self.path, self.mode = path, mode
        self.entries: list[LedgerEntry] = [] if mode == "off" else _read(path)
        self.by_digest = {e.digest: e for e in self.entries if e.digest}
        self.by_step = {e.step: e for e in self.entries}

    def add(self, entry: LedgerEntry) -> None:
        self.entries.append(entry)
        # O_NOFOLLOW, never blocking, a regular file only: as steps.jsonl (envkit.guard.files)
        append_text(self.path, json.dumps(entry.__dict__, sort_keys=True) + "\n")

    def find(self, step: int, digest: Any) -> tuple[LedgerEntry, str] | None:
        """The entry for this batch and how it matched (``digest()`` is called only when the ledger
        has entries): ``step and digest``, ``step`` (other tensors) or ``digest`` (another step)."""
        if self.mode == "off" or not self.by_step:
            return None
        mine = digest()
        at_step = self.by_step.get(step)
        if at_step is not None:
            same = at_step.digest is not None and at_step.digest == mine
            return at_step, "step and digest" if same else "step"
        found = self.by_digest.get(mine) if mine else None
        return None if found is None else (found, "digest")


def _read(path: Path) -> list[LedgerEntry]:
    """The entries of the regular file ``path`` (never through a link, never waiting on a FIFO)."""
    try:
        with open_regular(path) as fh:
            text = read_limited(fh, MAX_LEDGER_BYTES, path).decode("utf-8")
    except FileNotFoundError:
        return []
    except NotRegular as e:
        raise GuardError(
            f"{path}: not read: {e.strerror} (the bad-batch ledger is a regular file the guard wrote)",
            hint="remove it (or give Guard another run=), or RunlogOptions(ledger='off')",
        ) from e
    except TooLarge as e:
        raise GuardError(
            f"{path}: larger than {MAX_LEDGER_BYTES} bytes", hint="not a ledger the guard wrote"
        ) from e
    except (OSError, UnicodeDecodeError) as e:
        raise GuardError(f"{path}: cannot read the bad-batch ledger: {e}", hint="check the file") from e
    lines = text.splitlines()
    out = []
    for n, line in enumerate(lines, 1):
        try:
            row = json.loads(line)
            entry = LedgerEntry(row["step"], row["kind"], row.get("digest"), row.get("run", ""))
            if isinstance(entry.step, bool) or not isinstance(entry.step, int):
                raise TypeError("step")
            if not (isinstance(entry.kind, str) and isinstance(entry.run, str)):
                raise TypeError("kind, run")
        except (ValueError, KeyError, TypeError, RecursionError) as e:
            if n == len(lines):
                break  # a run killed while it appended: the last line is torn
            raise GuardError(
                f"{path}:{n}: not a ledger entry", hint="the ledger was edited: fix or remove that line"
            ) from e
        if entry.digest is not None and not isinstance(entry.digest, str):
            raise GuardError(f"{path}:{n}: digest is not a string", hint="the ledger was edited")
        out.append(entry)
    return out
