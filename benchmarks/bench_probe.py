"""Overhead of `envkit probe` (both frameworks, both workloads, 10 steps) over a bare framework import.

Prints both wall times, measured in the same run, and their ratio. Needs torch and paddle.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
import time


def _time(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("paddle") is None:
        print("skipped: torch and paddle are needed")
        return
    bare = min(_time([sys.executable, "-c", "import torch, paddle"]) for _ in range(2))
    with tempfile.TemporaryDirectory() as store:
        probe = min(
            _time([sys.executable, "-m", "envkit", "probe", "--no-store", "--store", store, "--steps", "10"])
            for _ in range(2)
        )
    print(f"   bare `import torch, paddle`: {bare:.2f} s")
    print(f"   envkit probe (torch+paddle, rnn+bert, 10 steps): {probe:.2f} s")
    print(f"   ratio: {probe / bare:.2f}x")
