"""``make demo``: envkit's main job, end to end, on what this machine has.

Each step is a real envkit command run through ``envkit.cli.main``; the demo
prints what it runs, and stops at the first step that fails.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from envkit.cli import main as envkit

__all__ = ["main"]


def step(title: str, argv: Sequence[str], *, ok: Sequence[int] = (0,)) -> int:
    print(f"\n\033[1m== {title}\033[0m\n$ envkit {' '.join(argv)}", flush=True)
    code = envkit(list(argv))
    if code not in ok:
        print(f"demo: `envkit {' '.join(argv)}` exited {code}", file=sys.stderr)
        raise SystemExit(code)
    return code


def main() -> None:
    step("validate every shipped spec", ["validate"])
    for name in ("cuda11.8-paddle2.6", "cuda12.1-torch2.1", "cuda12.4-torch2.5", "cuda12.6-paddle3.0", "cpu-torch"):
        step(f"render {name}", ["render", name])
    print("\ndemo: done; generated build contexts are in images/")


if __name__ == "__main__":
    main()
