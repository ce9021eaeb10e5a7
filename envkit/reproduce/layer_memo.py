"""What normalizing learned: the engine's raw layer (its diff_id) -> the normalized layer's diff_id.

:func:`envkit.reproduce.layers.normalize_layer` is a function of the raw layer's bytes (and the fixed
:data:`~envkit.lock.epoch.LAYER_EPOCH`), and a raw diff_id is the sha256 of those bytes: so the pair
is a fact, valid on any engine and for any image, and a layer the engine's cache reused in a rebuild
need not be rewritten again. Kept for the machine in ``$XDG_CACHE_HOME/envkit/normalized-layers.json``
(default ``~/.cache``: a fresh clone on a CI runner knows what the runner's engine built before), a
JSON object ``raw -> [normalized, size]``, merged with what other builds wrote meanwhile. A file that
is unreadable or not of that shape is ignored (the layers are rewritten, as without it). The
normalizer checks a remembered pair whenever it rewrites the layer anyway
(:func:`envkit.reproduce.normalize.normalize_image`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from envkit._atomic import write_text_atomic

__all__ = ["LayerMemo", "chain_ids", "memo_path"]

_DIGEST = re.compile(r"\Asha256:[0-9a-f]{64}\Z")
_MAX_BYTES = 16 << 20


def memo_path(environ: Mapping[str, str] = os.environ) -> Path:
    """``$XDG_CACHE_HOME/envkit/normalized-layers.json`` (``~/.cache`` by default)."""
    cache = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "envkit" / "normalized-layers.json"


def chain_ids(diff_ids: Sequence[str], parent: str = "") -> list[str]:
    """The OCI chain IDs of ``diff_ids`` stacked on the chain ``parent`` ("" for none): what an engine
    keys a layer by (``docker load`` does not read a layer whose chain ID it has)."""
    out: list[str] = []
    chain = parent
    for diff_id in diff_ids:
        chain = (
            diff_id if not chain else "sha256:" + hashlib.sha256(f"{chain} {diff_id}".encode()).hexdigest()
        )
        out.append(chain)
    return out


class LayerMemo:
    """raw diff_id -> (normalized diff_id, size), read from and saved to ``path``."""

    def __init__(self, path: Path, *, within: Path | None = None) -> None:
        self.path, self.within = path, within
        self._pairs: dict[str, tuple[str, int]] = {}
        self._dirty = False
        try:
            if path.stat().st_size <= _MAX_BYTES:
                self._pairs = _parse(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            self._pairs = {}

    def __len__(self) -> int:
        return len(self._pairs)

    def get(self, raw: str) -> tuple[str, int] | None:
        return self._pairs.get(raw)

    def put(self, raw: str, normalized: str, size: int) -> None:
        if self._pairs.get(raw) != (normalized, size):
            self._pairs[raw] = (normalized, size)
            self._dirty = True

    def save(self) -> None:
        """Write the pairs (sorted: byte-stable) when they changed; best effort (a memo, not a record)."""
        if not self._dirty:
            return
        try:
            merged = {**_parse(json.loads(self.path.read_text(encoding="utf-8"))), **self._pairs}
        except (OSError, ValueError):
            merged = dict(self._pairs)
        text = json.dumps({k: [v, n] for k, (v, n) in sorted(merged.items())}, indent=0) + "\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(self.path, text, within=self.within)
        except OSError:
            return
        self._dirty = False


def _parse(data: object) -> dict[str, tuple[str, int]]:
    if not isinstance(data, dict):
        return {}
    pairs: dict[str, tuple[str, int]] = {}
    for raw, value in data.items():
        if (
            isinstance(raw, str)
            and _DIGEST.match(raw)
            and isinstance(value, list)
            and len(value) == 2
            and isinstance(value[0], str)
            and _DIGEST.match(value[0])
            and isinstance(value[1], int)
            and not isinstance(value[1], bool)
            and value[1] >= 0
        ):
            pairs[raw] = (value[0], value[1])
    return pairs
