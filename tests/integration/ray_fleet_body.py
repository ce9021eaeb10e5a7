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
import resource
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
    asked = time.monotonic()
    deadline = asked + 120
    running: list[str] = []
    while time.monotonic() < deadline and len(running) < 2:
        time.sleep(0.2)
        records = runs.read_tasks(store / "killed") if (store / "killed").is_dir() else {}
        running = [r.task for r in records.values() if r.node == victim_name and r.state == "running"]
    killed_at = time.monotonic()
    cluster.remove_node(victim, allow_graceful=False)  # kills that node's raylet (and its workers)
    worker.join(timeout=240)
    code, data, err = result[0] if result else (-1, {}, "the fan-out did not end")
    return {
        "code": code,
        "data": data,
        "stderr": err[-3000:],
        "running_before_kill": running,
        "running_after_s": killed_at - asked,
        "ended_after_kill_s": time.monotonic() - killed_at,
    }


# How fast this test cluster notices a dead node (Ray's defaults: a health check every 3 s, 5 misses;
# and up to 60 s for a lost task's death cause). A real cluster keeps its own settings; envkit reads
# whatever error Ray gives, so only the wait shrinks, not what is checked.
DEATH_DETECTION = {
    "health_check_initial_delay_ms": 1000,
    "health_check_period_ms": 1000,
    "health_check_failure_threshold": 3,
    "timeout_ms_task_wait_for_death_info": 10000,
}
NODE_ARGS = {"num_cpus": 2, "num_gpus": 2}


def _cluster(make: Any) -> tuple[Any, list[Any]]:
    """A head and two worker nodes, 2 CPUs and 2 fake GPUs each, started at once (the workers do not
    wait for each other: ``wait=False``, then one wait for all three). ``add_node`` waits 30 s for a
    raylet, hard-coded; the one wait here is longer, and a start that still fails is tried again
    (a loaded 2-core machine)."""
    for attempt in range(3):
        cluster = None
        try:
            cluster = make(initialize_head=False)
            cluster.add_node(wait=False, include_dashboard=False, _system_config=DEATH_DETECTION, **NODE_ARGS)
            workers = [cluster.add_node(wait=False, **NODE_ARGS) for _ in range(2)]
            cluster.wait_for_nodes(timeout=90)
            return cluster, workers
        except Exception:  # noqa: BLE001 - "timed out during startup": try again
            print(f"ray cluster start {attempt + 1} failed:\n{traceback.format_exc()}", file=sys.stderr)
            if cluster is not None:
                cluster.shutdown()
    raise RuntimeError("the Ray cluster did not start in 3 tries")


def _subreaper() -> None:
    """Orphans (Ray's workers and the probes, once their raylet is gone) become this process's, so
    that their CPU time is counted when they are reaped (:func:`_reap`)."""
    import ctypes

    ctypes.CDLL(None).prctl(36, 1)  # PR_SET_CHILD_SUBREAPER


def _reap() -> None:
    deadline = time.monotonic() + 2  # the workers die with their raylet: at once
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.1)


def main(out: Path) -> None:
    _subreaper()
    import importlib

    ray: Any = importlib.import_module("ray")
    cluster_utils: Any = importlib.import_module("ray.cluster_utils")

    from envkit.fleet.ray_scheduler import node_names

    started = time.monotonic()
    load_at_start = os.getloadavg()[0]
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
    phase = time.monotonic()
    code, run, err = _cli("probe", "--ray", cluster.address, "--gpus-per-node", "2", "--store", str(store),
                          "--run-id", "planted", "--steps", "3", *PROBE, env=plant)  # fmt: skip
    reports = {
        p.stem: json.loads(p.read_text()) for p in (store / "planted").glob("*.json") if p.name != "run.json"
    }
    visible = {name: r["fingerprint"]["env"].get("CUDA_VISIBLE_DEVICES") for name, r in reports.items()}
    planted_s = time.monotonic() - phase
    phase = time.monotonic()
    compare = _cli("probe", "--compare", str(store / "planted"))
    compare_s = time.monotonic() - phase
    phase = time.monotonic()
    killed = _kill_run(cluster, workers[1], victim_name, store, cluster.address)
    killed_s = time.monotonic() - phase
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
        "phases_s": {
            "cluster up": up,
            "planted run": planted_s,
            "compare": compare_s,
            "killed run": killed_s,
            "victim running after": killed["running_after_s"],
            "run ended after the kill": killed["ended_after_kill_s"],
        },
        "body_s": time.monotonic() - started,
    }
    ray.shutdown()
    cluster.shutdown()
    _reap()
    used = resource.getrusage(resource.RUSAGE_CHILDREN)  # the cluster's processes and the CLIs, reaped
    result["cpu_s"] = used.ru_utime + used.ru_stime + time.process_time()
    result["load"] = {"start": load_at_start, "end": os.getloadavg()[0]}
    (out / "result.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
