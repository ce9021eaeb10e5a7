"""The body of tests/integration/test_fleet_ray.py, run as a process in a loopback-only network namespace.

``python ray_fleet_body.py OUT``: a real 3-node Ray cluster (``ray.cluster_utils.Cluster``, 2 fake
GPUs per node), ``envkit probe --ray ADDRESS --gpus-per-node 2`` with one planted suspect
(``ENVKIT_TEST_PERTURB``, task ``<node>-1`` of the second node), ``envkit probe --compare`` of the
run, then a second run during which one worker node's raylet is killed. Writes ``OUT/result.json``
for the test to judge (no assertion here: the test says what failed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

PROBE = ["--frameworks", "torch", "--workloads", "rnn", "--threads", "1"]


def _cli(*argv: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any], str]:
    """``envkit ARGV --json`` as a process (a driver of its own, as a user runs it)."""
    done = subprocess.run([sys.executable, "-m", "envkit", *argv, "--json"], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, check=False)  # fmt: skip
    try:
        data = json.loads(done.stdout)
    except ValueError:
        data = {"stdout": done.stdout[-3000:]}
    return done.returncode, data, done.stderr


def _kill_run(cluster: Any, victim: Any, victim_name: str, store: Path, address: str) -> dict[str, Any]:
    """A second run; once the victim node's tasks are running, its raylet is killed."""
    from envkit.store import runs

    result: list[tuple[int, dict[str, Any], str]] = []
    argv = ["probe", "--ray", address, "--gpus-per-node", "2", "--store", str(store), "--run-id", "killed",
            "--steps", "500", *PROBE]  # fmt: skip

    def fan_out() -> None:
        try:
            result.append(_cli(*argv))
        except BaseException:  # noqa: BLE001 - the test shows it
            result.append((-2, {}, traceback.format_exc()))

    worker = threading.Thread(target=fan_out)
    worker.start()
    deadline = time.monotonic() + 120
    running: list[str] = []
    while time.monotonic() < deadline and len(running) < 2:
        time.sleep(0.2)
        records = runs.read_tasks(store / "killed") if (store / "killed").is_dir() else {}
        running = [r.task for r in records.values() if r.node == victim_name and r.state == "running"]
    killed_at = time.monotonic()
    cluster.remove_node(victim, allow_graceful=False)  # kills that node's raylet (and its workers)
    worker.join(timeout=240)
    code, data, err = result[0] if result else (-1, {}, "the fan-out did not end")
    return {"code": code, "data": data, "stderr": err[-3000:], "running_before_kill": running,
            "ended_after_kill_s": time.monotonic() - killed_at}  # fmt: skip


def _cluster(make: Any) -> tuple[Any, list[Any]]:
    """A head and two worker nodes, 2 CPUs and 2 fake GPUs each. Ray waits 30 s for a raylet to
    register, hard-coded: on a loaded machine (2 cores shared) a start can time out, so try 3 times."""
    for attempt in range(3):
        cluster = None
        try:
            cluster = make(
                initialize_head=True,
                head_node_args={"num_cpus": 2, "num_gpus": 2, "include_dashboard": False},
            )
            workers = [cluster.add_node(num_cpus=2, num_gpus=2) for _ in range(2)]
            cluster.wait_for_nodes()
            return cluster, workers
        except Exception:  # noqa: BLE001 - "timed out during startup": try again
            print(f"ray cluster start {attempt + 1} failed:\n{traceback.format_exc()}", file=sys.stderr)
            if cluster is not None:
                cluster.shutdown()
    raise RuntimeError("the Ray cluster did not start in 3 tries")


def main(out: Path) -> None:
    import importlib

    ray: Any = importlib.import_module("ray")
    cluster_utils: Any = importlib.import_module("ray.cluster_utils")

    from envkit.fleet.ray_scheduler import node_names

    started = time.monotonic()
    store = out / "store"
    store.mkdir()
    cluster, workers = _cluster(cluster_utils.Cluster)
    ray.init(address=cluster.address, logging_level=40, log_to_driver=False)
    names = node_names(ray.nodes())
    addresses = sorted({str(n["NodeManagerAddress"]) for n in ray.nodes()})
    planted_node = names[workers[0].node_id]
    victim_name = names[workers[1].node_id]
    plant = {"ENVKIT_TEST_PERTURB": f"p=1,seed=3,task={planted_node}-1"}
    up = time.monotonic() - started
    code, run, err = _cli("probe", "--ray", cluster.address, "--gpus-per-node", "2", "--store", str(store),
                          "--run-id", "planted", "--steps", "3", *PROBE, env=plant)  # fmt: skip
    reports = {
        p.stem: json.loads(p.read_text()) for p in (store / "planted").glob("*.json") if p.name != "run.json"
    }
    visible = {name: r["fingerprint"]["env"].get("CUDA_VISIBLE_DEVICES") for name, r in reports.items()}
    compare = _cli("probe", "--compare", str(store / "planted"))
    killed = _kill_run(cluster, workers[1], victim_name, store, cluster.address)
    result = {
        "nodes": sorted(names.values()),
        "addresses": addresses,
        "planted_task": f"{planted_node}-1",
        "victim": victim_name,
        "run": {"code": code, "data": run, "stderr": err[-3000:]},
        "visible": visible,
        "compare": {"code": compare[0], "data": compare[1]},
        "killed": killed,
        "cluster_up_s": up,
        "body_s": time.monotonic() - started,
    }
    (out / "result.json").write_text(json.dumps(result, indent=1))
    ray.shutdown()
    cluster.shutdown()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
