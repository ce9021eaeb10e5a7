"""``envkit probe --slurm``: the fleet options of ``envkit probe`` and the fan-out's rendering.

The composition root for schedulers: ``--slurm`` builds :class:`SlurmScheduler`, ``--scheduler
local`` a :class:`LocalScheduler` (tasks as processes on this machine, to try a run without a cluster).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import ExitStack, redirect_stdout
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from envkit.cli._app import err_console, project_root, services, shown
from envkit.cli.probe_args import FleetArgs, K8sArgs
from envkit.errors import EnvkitError, ExitCode
from envkit.probe.runner import ProbeOptions
from envkit.result import CommandResult, Lines

if TYPE_CHECKING:  # the fleet machinery loads when a fleet run starts, not with `envkit probe`
    from envkit.fleet.fanout import FleetRun, Progress
    from envkit.fleet.ray_scheduler import RayScheduler

F = TypeVar("F", bound=Callable[..., object])

__all__ = ["emit_k8s", "fleet_options", "fleet_text", "run_fleet"]

_FLEET_OPTIONS = [
    click.option(
        "--slurm", is_flag=True, help="Fan out: one probe task per node through Slurm (sbatch); see below."
    ),
    click.option(
        "--scheduler",
        type=click.Choice(["slurm", "ray", "local"]),
        help="The fan-out's scheduler (--slurm is --scheduler slurm); local: tasks as processes here.",
    ),
    click.option(
        "--ray",
        is_flag=False,
        flag_value="auto",
        default=None,
        metavar="[ADDRESS]",
        help="Fan out on a Ray cluster (ADDRESS, or $RAY_ADDRESS / the local one): a task per alive node, "
        "or per GPU with --gpus-per-node; pinned by node id. Needs envkit-dl[ray].",
    ),
    click.option("--nodes", type=click.IntRange(1), help="Fleet: node count (default 1; on Ray every node)."),
    click.option("--nodelist", metavar="N1,N2", help="Fleet: these nodes (overrides --nodes)."),
    click.option(
        "--tasks-per-node",
        type=click.IntRange(1),
        default=1,
        show_default=True,
        help="Fleet: tasks per node (e.g. one per GPU); reports are NODE-K.json.",
    ),
    click.option("--partition", help="Fleet: Slurm partition."),
    click.option("--account", help="Fleet: Slurm account."),
    click.option("--time", "time_limit", metavar="LIMIT", help="Fleet: time limit (Slurm syntax, e.g. 30)."),
    click.option(
        "--sbatch-arg",
        "sbatch_args",
        multiple=True,
        metavar="ARG",
        help="Fleet: extra sbatch argument, as given (repeatable).",
    ),
    click.option(
        "--container",
        type=click.Choice(["docker", "pyxis"]),
        default="docker",
        show_default=True,
        help="Fleet with --image: the node's Docker engine, or pyxis (srun --container-image; by digest).",
    ),
    click.option("--run-id", help="Fleet: the run's name in the store (default run-DATE-TIME-XXXX)."),
    click.option(
        "--repeat",
        type=click.IntRange(1, 100),
        default=1,
        show_default=True,
        help="Fleet: run the probe N times per task; reruns that differ make the node 'suspect'.",
    ),
    click.option(
        "--k8s",
        is_flag=True,
        help="Kubernetes: write Job manifests (one per --nodelist node, pinned, GPU requests, the store as a "
        "volume) to --emit DIR. Running them needs a cluster: `kubectl apply -f DIR` (none runs here).",
    ),
    click.option("--emit", type=click.Path(file_okay=False, path_type=Path), help="With --k8s: the folder."),
    click.option("--namespace", default="default", show_default=True, help="With --k8s: the namespace."),
    click.option(
        "--store-claim",
        metavar="PVC",
        help="With --k8s: the store is this PersistentVolumeClaim "
        "(default: --store as a hostPath every node has).",
    ),
    click.option(
        "--gpus-per-node",
        type=click.IntRange(0),
        help="With --k8s: nvidia.com/gpu requested per Job (default 1). With --ray: one task per GPU.",
    ),
    click.option(
        "--wait-timeout",
        type=click.FloatRange(1),
        metavar="SECONDS",
        help="Fleet: cancel the job when it has not ended after this long.",
    ),
]


def fleet_options(fn: F) -> F:
    for option in reversed(_FLEET_OPTIONS):
        fn = option(fn)
    return fn


def run_fleet(
    fleet: FleetArgs, store: Path, probe: ProbeOptions, image: dict[str, str] | None = None
) -> CommandResult:
    """Fan the probe out through the scheduler and follow it; ``store`` is absolute (nodes write there)."""
    from envkit.fleet.fanout import FleetOptions, fan_out

    opts = FleetOptions(
        store=store,
        run_id=fleet.run_id,
        nodes=fleet.nodes,
        nodelist=fleet.nodelist,
        tasks_per_node=fleet.tasks_per_node,
        partition=fleet.partition,
        account=fleet.account,
        time_limit=fleet.time_limit,
        extra_args=fleet.sbatch_args,
        image=image,
        container=fleet.container,
        repeat=fleet.repeat,
        timeout_s=fleet.wait_timeout,
        gpus_per_task=fleet.gpus_per_task,
    )
    scheduler = services().scheduler(fleet.scheduler, fleet.address)

    def submitted(run_id: str, run_dir: Path, job_id: str) -> None:
        err_console.print(f"run {run_id}: {scheduler.name} job {job_id}; reports in {run_dir}", markup=False)

    last: list[str] = []

    def progress(p: Progress) -> None:
        line = p.line()
        if not last or line.split(" (")[0] != last[-1].split(" (")[0]:
            err_console.print(shown(line), markup=False, highlight=False)
        last.append(line)

    with ExitStack() as stack:
        ray = _ray_scheduler() if fleet.scheduler == "ray" else None
        if ray is not None and isinstance(scheduler, ray):
            # Ray's driver prints its raylets' errors (a node that died) to stdout, from a thread of its
            # own: stdout stays envkit's result (--json), and the driver is shut down before it is printed
            stack.enter_context(redirect_stdout(sys.stderr))
            stack.callback(scheduler.close)
        run = fan_out(scheduler, opts, probe, on_submit=submitted, on_progress=progress)
    data = {**run.to_json(), "health": _refresh_health(store)}
    code = ExitCode.OK if run.ok else ExitCode.FINDINGS
    return CommandResult(
        "probe", data, lambda: [*fleet_text(run), *_health_text(data["health"])], exit_code=code
    )


def _refresh_health(store: Path) -> dict[str, object]:
    """Every node's verdict judged again with this run in (what `envkit health` reads); a store that
    cannot be judged is said, and the run's own result stands."""
    from envkit.fleet.history import refresh_health
    from envkit.store.layout import HEALTH, HEALTH_FILE

    try:
        verdicts = refresh_health(store)
    except (EnvkitError, OSError) as e:
        message = e.message if isinstance(e, EnvkitError) else f"{type(e).__name__}: {e}"
        return {"file": None, "verdicts": {}, "error": message}
    return {"file": str(store / HEALTH / HEALTH_FILE), "verdicts": verdicts, "error": None}


def _health_text(health: object) -> Lines:
    if not isinstance(health, dict):
        return []
    if health.get("error"):
        return [f"node verdicts not refreshed: {health['error']}"]
    verdicts = health.get("verdicts") or {}
    counts: dict[str, int] = {}
    for verdict in verdicts.values():
        counts[verdict] = counts.get(verdict, 0) + 1
    said = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
    return [f"node verdicts refreshed for `envkit health` ({said or 'none'}): {health['file']}"]


def _ray_scheduler() -> type[RayScheduler]:
    from envkit.fleet.ray_scheduler import RayScheduler

    return RayScheduler


def emit_k8s(k8s: K8sArgs, store: Path, probe: ProbeOptions) -> CommandResult:
    """Write the ConfigMap and Job manifests, and the run's manifest into the store."""
    from envkit.fleet.k8s import emit_run

    emitted = emit_run(
        project_root(), store, probe, image=k8s.image, nodes=k8s.nodes, emit=k8s.emit, run_id=k8s.run_id,
        namespace=k8s.namespace, gpus_per_node=k8s.gpus_per_node, store_claim=k8s.store_claim,
    )  # fmt: skip
    run_id, paths, run_dir = emitted.run_id, emitted.paths, emitted.run_dir
    data = {"run": run_id, "manifests": [str(p) for p in paths], "store": str(run_dir)}

    def text() -> str:
        return "\n".join(
            [f"run {run_id}: {len(k8s.nodes)} Job(s) and the payload ConfigMap in {k8s.emit}",
             *(f"  {p}" for p in paths),
             f"run them: kubectl apply -f {k8s.emit}  (needs a cluster)",
             f"then: envkit probe --compare {run_dir}"]
        )  # fmt: skip

    return CommandResult("probe", data, text)


def fleet_text(run: FleetRun) -> Lines:
    lines = [f"run {run.run_id} ({run.scheduler} job {run.job_id}, {run.job_state.value}): {run.run_dir}"]
    width = max((len(t.task) for t in run.tasks), default=4) + 2
    for t in run.tasks:
        what = t.report if t.state == "ok" else t.error or ""
        lines.append(f"  {t.task:<{width}}{t.state:<10}{what}")
    ok = sum(t.state == "ok" for t in run.tasks)
    lines.append(f"{ok} of {len(run.tasks)} tasks wrote a report")
    if ok >= 2:
        lines.append(f"compare them: envkit probe --compare {run.run_dir}")
    return lines
