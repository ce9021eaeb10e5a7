"""``envkit probe --ray`` on a real 3-node Ray cluster, inside a loopback-only network namespace.

The body (``tests/integration/ray_fleet_body.py``) runs as a process under ``unshare -n`` with only
``lo`` up, so Ray can only advertise 127.0.0.1 (outside a namespace it advertises the machine's
external address, which tests must never use); skipped when ``unshare`` is not permitted or Ray is
not installed (``pip install 'envkit-dl[ray]'``). Three nodes with 2 fake GPUs each: 6 reports, one
planted suspect named by ``probe --compare``; then a node's raylet killed mid-run: exactly its two
tasks ``failed`` with Ray's reason, the other four reports intact.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.frameworks, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
BODY = Path(__file__).with_name("ray_fleet_body.py")


def _namespace_argv() -> list[str]:
    if importlib.util.find_spec("ray") is None:
        pytest.skip("Ray is not installed (pip install 'envkit-dl[ray]')")
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("needs unshare and ip (util-linux, iproute2)")
    probe = subprocess.run(["unshare", "-n", "ip", "link", "set", "lo", "up"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"unshare -n is not permitted here: {probe.stderr.strip()}")
    return ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"]


def test_ray_fan_out_names_the_suspect_and_a_dead_node(tmp_path: Path) -> None:
    argv = [*_namespace_argv(), sys.executable, str(BODY), str(tmp_path)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    started = time.monotonic()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=420, check=False)
    wall = time.monotonic() - started
    assert done.returncode == 0 and (tmp_path / "result.json").exists(), done.stderr[-5000:]
    result = json.loads((tmp_path / "result.json").read_text())
    phases = ", ".join(f"{k} {v:.1f} s" for k, v in result["phases_s"].items())
    print(f"ray test: {wall:.1f} s wall, {result['cpu_s']:.0f} s CPU, load {result['load']['start']:.1f}"
          f" -> {result['load']['end']:.1f}; {phases}", file=sys.stderr)  # fmt: skip
    assert result["addresses"] == ["127.0.0.1"]  # never the machine's external address
    assert len(result["nodes"]) == 3

    run = result["run"]
    assert run["code"] == 0, run["stderr"]
    tasks = run["data"]["result"]["tasks"]
    assert run["data"]["result"]["scheduler"] == "ray" and [t["state"] for t in tasks] == ["ok"] * 6
    assert sorted(t["task"] for t in tasks) == sorted(f"{n}-{k}" for n in result["nodes"] for k in (0, 1))
    assert all(v in ("0", "1") for v in result["visible"].values()), result["visible"]  # one fake GPU each
    assert "job" in run["stderr"] and "running" in run["stderr"]  # progress lines while it ran

    compare = result["compare"]
    outliers = compare["data"]["result"]["outliers"]
    assert compare["code"] == 1 and [(o["name"], o["verdict"]) for o in outliers] == [
        (result["planted_task"], "suspect")
    ]

    killed = result["killed"]
    assert killed["code"] == 1 and "result" in killed["data"], (killed["data"], killed["stderr"][-3000:])
    outcome = {t["task"]: t for t in killed["data"]["result"]["tasks"]}
    victims = {f"{result['victim']}-{k}" for k in (0, 1)}
    assert {n for n, t in outcome.items() if t["state"] == "failed"} == victims, outcome
    assert all("lost" in str(outcome[v]["error"]) for v in victims), outcome
    intact = [t for n, t in outcome.items() if n not in victims]
    assert len(intact) == 4 and all(t["state"] == "ok" for t in intact)
    for t in intact:  # every other report is there and whole
        report = json.loads((tmp_path / "store" / "killed" / t["report"]).read_text())
        assert report["fleet"]["task"] == t["task"]
