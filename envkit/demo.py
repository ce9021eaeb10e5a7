"""``make demo``: envkit's main job end to end, on what this machine has.

Every step is a real envkit command (through ``envkit.cli.main``) and is
printed before it runs. Findings (exit 1) are expected in some steps, e.g.
the audit of an old export; any other failure stops the demo.

1. validate and render every shipped spec;
2. build the CPU demo image when a Docker engine is reachable (otherwise say
   so), probe inside it and on the host;
3. probe the host twice with 1 and 2 threads and compare (verdict, causes, HTML);
4. diff two inventories and audit one against the advisory data available.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from envkit.cli import main as envkit

__all__ = ["main"]

OUT = Path(".envkit/demo")
SHARED = Path(os.environ.get("ENVKIT_SHARED", "../shared"))


def step(title: str, argv: Sequence[str], *, ok: Sequence[int] = (0,)) -> int:
    print(f"\n\033[1m== {title}\033[0m\n$ envkit {' '.join(argv)}", flush=True)
    code = envkit(list(argv))
    if code not in ok:
        print(f"demo: `envkit {' '.join(argv)}` exited {code}", file=sys.stderr)
        raise SystemExit(code)
    return code


def note(text: str) -> None:
    print(f"\n\033[1m== {text}\033[0m", flush=True)


def specs_step() -> None:
    step("validate every shipped spec", ["validate"])
    for spec in sorted(Path("environments").glob("*.yaml")):
        step(f"render {spec.stem}", ["render", spec.stem])


def probe_step() -> list[str]:
    reports = OUT / "reports"
    common = ["--workloads", "rnn,bert", "--steps", "5", "--store", str(reports)]
    step("probe this host, 1 thread", ["probe", *common, "--label", "threads-1", "--threads", "1"])
    step("probe this host, 2 threads", ["probe", *common, "--label", "threads-2", "--threads", "2"])
    host = next(p.name for p in reports.iterdir() if p.is_dir())
    html = OUT / "compare-threads.html"
    step(
        "compare the two runs: verdict per framework, workload and metric, and the likely causes",
        [
            "probe",
            "--compare",
            f"{host}/threads-1",
            f"{host}/threads-2",
            "--store",
            str(reports),
            "--html",
            str(html),
        ],
        ok=(0, 1),
    )
    return [str(reports), str(html)]


def inventory_step() -> list[str]:
    snapshot = OUT / "snapshot.json"
    step("snapshot this environment", ["snapshot", "-o", str(snapshot), "--store", str(OUT / "snapshots")])
    inventories = SHARED / "inventories"
    old, new = inventories / "envexport-paris-444fb8e.yml", inventories / "envexport-paris-aec6a0f.yml"
    if old.is_file() and new.is_file():
        step(
            "diff two real exports of one project, taken a week apart",
            ["diff", str(old), str(new), "--min-severity", "warning"],
            ok=(0, 1),
        )
    else:
        note(f"{inventories} is absent: diffing this environment against itself")
        step("diff", ["diff", str(snapshot), str(snapshot)])
    database = SHARED / "advisory-db"
    if database.is_dir() and old.is_file():
        sarif = OUT / "audit.sarif"
        step(
            "audit the 2023 export against the PyPA advisory database (offline)",
            ["audit", str(old), "--db", str(database), "--fail-on", "high"],
            ok=(0, 1),
        )
        step(
            "the same audit as SARIF",
            ["audit", str(old), "--db", str(database), "--format", "sarif", "-o", str(sarif)],
            ok=(0, 1),
        )
        return [str(snapshot), str(sarif)]
    note(f"{database} is absent: `envkit audit --update-db` fetches the OSV PyPI export when online")
    return [str(snapshot)]


def main(steps: Sequence[Callable[[], list[str] | None]] | None = None) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    outputs: list[str] = []
    for run in steps or (specs_step, probe_step, inventory_step):
        outputs += run() or []
    print("\n\033[1mdemo: done.\033[0m Generated build contexts: images/. Reports:")
    for path in outputs:
        print(f"  {path}")


if __name__ == "__main__":
    main()
