"""The fleet-scale commands as a user types them, each a process, beside the measured floor.

Every figure is the whole command line (``python -m envkit ...``: start-up, imports, reading,
comparing, writing the output), timed with ``wait4`` (wall, user + system CPU, peak RSS) in
``ROUNDS`` interleaved rounds; the median of each is kept. Beside each command, its floor, run in
the same rounds: Python's start-up (``python -c pass``) and, for the commands that read JSON
reports, a process that reads the same files and parses them with ``json.loads`` alone. The
ratio command / floor is printed for wall and CPU.

* ``envkit probe --compare FILE...``: 10,000 report files (bench_nway's run, given as files);
* ``envkit probe --compare RUN --store STORE``: a store run of 100,000 reports (peak RSS too);
* ``envkit diff FILE...``: 10,000 pip freezes x 400 packages (bench_diff10k's fleet);
* ``envkit audit INVENTORY --db DB --format sarif -o OUT``: 400 packages, warm (index built);
* ``envkit --help``.

Sizes: ``ENVKIT_BENCH_CLI_FILES``, ``ENVKIT_BENCH_CLI_RUN``, ``ENVKIT_BENCH_CLI_HOSTS``.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from benchmarks._goals import ROOT, Measured, record, run_cli, scaled, smoke

ROUNDS = scaled(3, 1)
PY = sys.executable
FLOOR_JSON = (
    "import json, sys\n"
    "from pathlib import Path\n"
    "given = [Path(a) for a in sys.argv[1:]]\n"
    "paths = [p for a in given for p in (sorted(a.glob('*.json')) if a.is_dir() else [a])]\n"
    "for p in paths:\n"
    "    json.loads(p.read_bytes())\n"
)


def _median(runs: list[Measured]) -> Measured:
    walls = sorted(runs, key=lambda m: m.wall)
    mid = walls[len(walls) // 2]
    cpu = statistics.median(m.cpu for m in runs)
    rss = max(m.rss_mib for m in runs)
    return Measured(mid.wall, cpu, rss, mid.load, mid.info)


def _rounds(cases: dict[str, Callable[[], Measured]]) -> dict[str, Measured]:
    """Each case ``ROUNDS`` times, interleaved (all see the same load); the median of each."""
    runs: dict[str, list[Measured]] = {k: [] for k in cases}
    for _ in range(ROUNDS):
        for key, case in cases.items():
            runs[key].append(case())
    return {k: _median(v) for k, v in runs.items()}


def _show(label: str, m: Measured, floor: Measured | None = None) -> None:
    ratio = f"; x{m.wall / floor.wall:.1f} wall, x{m.cpu / floor.cpu:.1f} CPU of the floor" if floor else ""
    print(f"   {label}: {m.line()}{ratio}")


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from benchmarks.bench_audit_fleet import SHARED, packages
    from benchmarks.bench_diff10k import write_fleet
    from benchmarks.bench_nway import write_run

    files = int(os.environ.get("ENVKIT_BENCH_CLI_FILES") or scaled(10_000, 20))
    run_size = int(os.environ.get("ENVKIT_BENCH_CLI_RUN") or scaled(100_000, 30))
    hosts = int(os.environ.get("ENVKIT_BENCH_CLI_HOSTS") or scaled(10_000, 20))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    envkit = [PY, "-m", "envkit"]
    with tempfile.TemporaryDirectory(prefix="envkit-bench-") as tmp:
        root = Path(tmp)
        store = root / "store"
        write_run(store / "run-files", files)
        reports = sorted(str(p) for p in (store / "run-files").glob("node*.json"))
        start = {"python -c pass": lambda: run_cli([PY, "-c", "pass"], env)}
        help_ = {"envkit --help": lambda: run_cli([*envkit, "--help"], env)}
        got = _rounds(start | help_)
        floor = got["python -c pass"]
        _show("python -c pass (the start-up floor)", floor)
        _show("envkit --help", got["envkit --help"], floor)
        record("help", got["envkit --help"].wall, f"{got['envkit --help'].cpu:.3f} s CPU")

        argv = [*envkit, "probe", "--compare", *reports, "--json"]
        got = _rounds(
            {
                "floor": lambda: run_cli([PY, "-c", FLOOR_JSON, *reports], env),
                "compare": lambda: run_cli(argv, env, ok=(0, 1)),
            }
        )
        _show(f"json.loads of the {files} report files (floor)", got["floor"])
        _show(f"envkit probe --compare of {files} report files", got["compare"], got["floor"])
        if files == 10_000:
            record("cli_compare_files", got["compare"].wall, _detail(got["compare"], got["floor"]))

        import shutil

        shutil.rmtree(store / "run-files")
        write_run(store / "run-big", run_size)
        argv = [*envkit, "probe", "--compare", "run-big", "--store", str(store), "--json"]
        got = _rounds(
            {
                "floor": lambda: run_cli([PY, "-c", FLOOR_JSON, str(store / "run-big")], env),
                "compare": lambda: run_cli(argv, env, ok=(0, 1)),
            }
        )
        _show(f"json.loads of the run's {run_size} reports (floor)", got["floor"])
        _show(f"envkit probe --compare of a store run of {run_size}", got["compare"], got["floor"])
        if run_size == 100_000:
            record("cli_compare_run", got["compare"].wall, _detail(got["compare"], got["floor"]))
            record("cli_compare_run_rss", got["compare"].rss_mib)
        shutil.rmtree(store / "run-big")

        if (SHARED / "inventories").is_dir():
            write_fleet(root / "fleet", hosts)
            listings = sorted(str(p) for p in (root / "fleet").iterdir())
            got = _rounds({"diff": lambda: run_cli([*envkit, "diff", *listings], env, ok=(0, 1))})
            _show(f"envkit diff of {hosts} pip freezes x 400 packages", got["diff"], floor)
            if hosts == 10_000:
                record("cli_diff", got["diff"].wall, _detail(got["diff"], floor))
        else:
            print(f"   diff skipped: {SHARED / 'inventories'} is absent")

        db = SHARED / "advisory-db"
        if db.is_dir():
            inventory = root / "inventory.txt"
            inventory.write_text("".join(f"{n}=={v}\n" for n, v in packages(db)), "utf-8")
            audit_env = {**env, "ENVKIT_ADVISORY_INDEX": str(root / "index")}
            argv = [*envkit, "audit", str(inventory), "--db", str(db), "--format", "sarif"]
            argv += ["-o", str(root / "out.sarif")]
            if not smoke():  # the first run builds the index: warm from here (the smoke run stays short)
                run_cli(argv, audit_env, ok=(0, 1))
            got = _rounds({"audit": lambda: run_cli(argv, audit_env, ok=(0, 1))})
            state = "cold: the smoke run builds the index" if smoke() else "warm"
            _show(f"envkit audit of 400 packages + SARIF, {state}", got["audit"], floor)
            record("cli_audit", got["audit"].wall, _detail(got["audit"], floor))
        else:
            print(f"   audit skipped: {db} is absent")
    print(f"   (medians of {ROUNDS} interleaved rounds)")


def _detail(m: Measured, floor: Measured) -> str:
    return (
        f"{m.cpu:.2f} s CPU, {m.rss_mib:.0f} MiB, load {m.load:.1f}; "
        f"floor {floor.wall:.2f} s wall / {floor.cpu:.2f} s CPU: x{m.wall / floor.wall:.1f} wall"
    )
