"""The in-image half of ``envkit guard replay DUMP --image NAME``: replay twice, print one JSON.

Run as ``python -m envkit.incident.image_side DUMP ENTRY`` with envkit's source mounted read-only
(nothing is installed in the image). Without safetensors in the image the tensors are read by
:mod:`envkit.incident.st_reader`. The output: the two replays (floats as ``float.hex``, bitwise),
the first one's localization, and this side's fingerprint and framework info; an EnvkitError goes
to stderr with exit 3.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from envkit.errors import EnvkitError

KIND = "envkit-guard-image-replay"
SCHEMA = 1


def replay_document(path: Path, entry: str) -> dict[str, object]:
    """The dump at ``path`` replayed twice here with ``entry``: this side's JSON (EnvkitError otherwise)."""
    if importlib.util.find_spec("safetensors") is None:
        from envkit.incident import st_reader

        st_reader.install()
    from envkit.guard.dump import read_dump
    from envkit.guard.records import json_clean
    from envkit.guard.runlog import fingerprint
    from envkit.incident.replay import here_info, load_entry, replay_runs

    dump = read_dump(path)
    runs = replay_runs(dump, load_entry(entry))
    return {
        "kind": KIND,
        "schema": SCHEMA,
        "replays": [{"loss": r.loss.hex(), "grad_norm": r.grad_norm.hex(), "error": r.error} for r in runs],
        "localization": json_clean(runs[0].localization),
        "fingerprint": json_clean(fingerprint()),
        "info": json_clean(here_info(dump.framework)),
    }


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m envkit.incident.image_side DUMP ENTRY", file=sys.stderr)
        return 2
    try:
        out = replay_document(Path(argv[0]), argv[1])
    except EnvkitError as e:
        print(f"{e.message}\nhint: {e.hint}", file=sys.stderr)
        return 3
    except OSError as e:
        print(f"{e.filename or argv[0]}: cannot read: {e.strerror or e}", file=sys.stderr)
        return 3
    print(json.dumps(out, allow_nan=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
