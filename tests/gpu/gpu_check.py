"""The probe's GPU bands and `envkit check`'s prediction on a real NVIDIA GPU: `make gpu-check` (< 10 min).

Needs only the standard library, torch with CUDA and this checkout (envkit.probe imports nothing
else), so it runs on a bare GPU machine with no network: `PYTHONPATH=. python3 tests/gpu/gpu_check.py`.
Prints every comparison's numbers, writes them as JSON (`--json FILE`), exits 1 when a verdict is
not the expected one. `tests/gpu/test_probe_gpu.py` runs the same checks under pytest.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from envkit.comparison.pairwise import compare_reports
from envkit.probe.model import ProbeReport
from envkit.probe.runner import ProbeOptions, run_on_host
from tests.gpu.history_gpu import gpu_count, history_row, row_lines
from tests.gpu.readiness_gpu import readiness_checks

# (name, side A, side B, expected verdict): the rows of docs/concepts/design.md's measured table.
RUNS: dict[str, dict[str, Any]] = {
    "cpu": {},
    "gpu": {"device": "cuda"},
    "gpu-again": {"device": "cuda"},
    "tf32": {"device": "cuda", "tf32": True},
    "bf16": {"device": "cuda", "autocast": "bf16"},
}
CHECKS = (
    ("strict vs strict", "gpu", "gpu-again", "identical"),
    ("TF32 vs strict", "gpu", "tf32", "precision-drift"),
    ("bf16 autocast vs strict", "gpu", "bf16", "precision-drift"),
    ("CPU fp32 vs GPU fp32", "cpu", "gpu", "equivalent"),
)


def prober(steps: int = 10) -> Callable[[str], ProbeReport]:
    cache: dict[str, ProbeReport] = {}

    def run(name: str) -> ProbeReport:
        if name not in cache:
            opts = ProbeOptions(frameworks=("torch",), steps=steps, **RUNS[name])
            cache[name] = run_on_host(opts, label=name)
            torch = cache[name].frameworks["torch"]
            if not torch.ok:
                raise RuntimeError(f"{name}: torch {torch.status}: {torch.reason}")
        return cache[name]  # frozen: shared safely

    return run


def check(run: Callable[[str], ProbeReport], a: str, b: str) -> tuple[str, list[dict[str, Any]]]:
    result = compare_reports(run(a), run(b))
    rows = [
        {"workload": c.workload, "metric": c.metric, "verdict": c.verdict, "max_rel_diff": c.max_rel_diff}
        for c in result.comparisons
    ]
    return result.verdict, rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the numbers here")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument(
        "--history-repeats",
        type=int,
        default=20,
        help="strict repeats per GPU for the history row (0: skip it)",
    )
    args = parser.parse_args(argv)
    if gpu_count() == 0:  # every row needs a device: say so instead of failing on the first probe
        row = history_row(args.history_repeats)
        print("\n".join(["--   no GPU (nvidia-smi lists none): the bands and readiness rows are not run",
                         *row_lines(row)]))  # fmt: skip
        if args.json:
            with open(args.json, "w", encoding="utf-8") as fh:
                json.dump({"gpu": None, "status": "no GPU", "history": row}, fh, indent=2, sort_keys=True)
        return 0
    run, summary, failed = prober(args.steps), [], 0
    for title, a, b, expected in CHECKS:
        verdict, rows = check(run, a, b)
        failed += verdict != expected
        print(f"{'ok  ' if verdict == expected else 'FAIL'} {title}: {verdict} (expected {expected})")
        for r in rows:
            print(f"       {r['workload']:<5} {r['metric']:<17} {r['verdict']:<16} {r['max_rel_diff']}")
        summary.append({"check": title, "expected": expected, "verdict": verdict, "comparisons": rows})
    gpu = run("gpu").fingerprint.get("gpu")
    print(f"gpu: {json.dumps(gpu)}")
    readiness = readiness_checks()  # envkit check's static prediction against the device
    for r in readiness:
        failed += not r["ok"]
        print(
            f"{'ok  ' if r['ok'] else 'FAIL'} {r['check']}: predicted {r['predicted']}, device {r['actual']}"
        )
    history = history_row(args.history_repeats) if args.history_repeats > 0 else None
    if history is not None:
        failed += not history["ok"]
        print("\n".join(row_lines(history)))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            data = {"gpu": gpu, "checks": summary, "readiness": readiness, "history": history}
            json.dump(data, fh, indent=2, sort_keys=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
