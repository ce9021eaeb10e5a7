"""``envkit probe --slurm``: the fleet options of ``envkit probe`` and the fan-out's rendering.

The composition root for schedulers: ``--slurm`` builds :class:`SlurmScheduler`, ``--scheduler
local`` a :class:`LocalScheduler` (tasks as processes on this machine, to try a run without a cluster).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from envkit.cli._app import err_console, project_root, services, shown
from envkit.errors import ExitCode, UsageError
from envkit.probe.report import default_store
from envkit.probe.runner import ProbeOptions
from envkit.result import CommandResult

if TYPE_CHECKING:  # the fleet machinery loads when a fleet run starts, not with `envkit probe`
    from envkit.fleet.fanout import FleetOptions, FleetRun, Progress

__all__ = ["fleet_options", "run_fleet"]

_FLEET_OPTIONS = [
    click.option(
        "--slurm", is_flag=True, help="Fan out: one probe task per node through Slurm (sbatch); see below."
    ),
    click.option(
        "--scheduler",
        type=click.Choice(["slurm", "local"]),
        help="The fan-out's scheduler (--slurm is --scheduler slurm); local: tasks as processes here.",
    ),
    click.option("--nodes", type=click.IntRange(1), default=1, show_default=True, help="Fleet: node count."),
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
        default=1,
        show_default=True,
        help="With --k8s: nvidia.com/gpu requested per Job.",
    ),
    click.option(
        "--wait-timeout",
        type=click.FloatRange(1),
        metavar="SECONDS",
        help="Fleet: cancel the job when it has not ended after this long.",
    ),
]


def fleet_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(_FLEET_OPTIONS):
        fn = option(fn)
    return fn


def _nodelist(kw: dict[str, Any]) -> tuple[str, ...]:
    """--nodelist N1,N2 as node names (empty entries dropped)."""
    return tuple(n.strip() for n in (kw["nodelist"] or "").split(",") if n.strip())


def _store(kw: dict[str, Any]) -> Path:
    """--store (default $ENVKIT_STORE or the project's), absolute: tasks on other nodes write there."""
    return Path(kw["store"] or default_store(project_root())).resolve()


def _fleet_options(kw: dict[str, Any], store: Path, image: dict[str, Any] | None) -> FleetOptions:
    nodelist = _nodelist(kw)
    from envkit.fleet.fanout import FleetOptions

    return FleetOptions(
        store=store,
        run_id=kw["run_id"],
        nodes=len(nodelist) or kw["nodes"],
        nodelist=nodelist,
        tasks_per_node=kw["tasks_per_node"],
        partition=kw["partition"],
        account=kw["account"],
        time_limit=kw["time_limit"],
        extra_args=tuple(kw["sbatch_args"]),
        image=image,
        container=kw["container"],
        repeat=kw["repeat"],
        timeout_s=kw["wait_timeout"],
    )


def run_fleet(kw: dict[str, Any], probe: ProbeOptions, image: dict[str, Any] | None = None) -> CommandResult:
    if kw["output"] or kw["no_store"]:
        raise UsageError("a fleet run writes into the store", hint="drop -o/--no-store; use --store DIR")
    opts = _fleet_options(kw, _store(kw), image)
    scheduler = services().scheduler(kw["scheduler"] or "slurm")

    def submitted(run_id: str, run_dir: Path, job_id: str) -> None:
        err_console.print(f"run {run_id}: {scheduler.name} job {job_id}; reports in {run_dir}", markup=False)

    last: list[str] = []

    def progress(p: Progress) -> None:
        line = p.line()
        if not last or line.split(" (")[0] != last[-1].split(" (")[0]:
            err_console.print(shown(line), markup=False, highlight=False)
        last.append(line)

    from envkit.fleet.fanout import fan_out

    run = fan_out(scheduler, opts, probe, on_submit=submitted, on_progress=progress)
    code = ExitCode.OK if run.ok else ExitCode.FINDINGS
    return CommandResult("probe", run.to_json(), lambda: fleet_text(run), exit_code=code)


def emit_k8s(kw: dict[str, Any], probe: ProbeOptions, payload_args: list[str]) -> CommandResult:
    """Write the ConfigMap and Job manifests, and the run's manifest into the store."""
    from envkit.fleet import store as fleet_store
    from envkit.fleet.k8s import K8sOptions, job_manifests, write_manifests
    from envkit.fleet.manifest import options_to_json

    if not kw["emit"]:
        raise UsageError("--k8s writes manifests", hint="give --emit DIR, then `kubectl apply -f DIR`")
    if not kw["image"]:
        raise UsageError("--k8s runs an image", hint="--image REGISTRY/REPO@sha256:… (see build --push)")
    image = str(kw["image"])
    if "@sha256:" not in image:
        from envkit.build.push import read_pushed

        pushed = read_pushed(project_root(), image.removeprefix("envkit/").split(":", 1)[0])
        if pushed is None:
            raise UsageError(
                f"Kubernetes nodes pull {image} from a registry, by digest",
                hint=f"push it first: envkit build {image} --push REGISTRY (or give REPO@sha256:…)",
            )
        image = str(pushed["ref"])
    nodes = _nodelist(kw)
    store = _store(kw)
    run_id = fleet_store.check_run_id(kw["run_id"] or fleet_store.new_run_id())
    opts = K8sOptions(
        run_id=run_id, nodes=nodes, image=image, payload_args=tuple(payload_args),
        namespace=kw["namespace"], gpus_per_node=kw["gpus_per_node"], store_claim=kw["store_claim"],
        store_host_path=None if kw["store_claim"] else str(store),
    )  # fmt: skip
    run_dir = fleet_store.create_run_dir(store, run_id)  # exclusively: an existing run id is refused
    paths = write_manifests(job_manifests(opts), kw["emit"])
    fleet_store.write_json(
        run_dir / fleet_store.MANIFEST,
        {"run": run_id, "scheduler": "kubernetes", "image": {"ref": image}, "tasks_per_node": 1,
         "requested": {"nodes": len(nodes), "nodelist": list(nodes)}, "options": options_to_json(probe)},
        within=run_dir,
    )  # fmt: skip
    data = {"run": run_id, "manifests": [str(p) for p in paths], "store": str(store / run_id)}

    def text() -> str:
        return "\n".join(
            [f"run {run_id}: {len(nodes)} Job(s) and the payload ConfigMap in {kw['emit']}",
             *(f"  {p}" for p in paths),
             f"run them: kubectl apply -f {kw['emit']}  (needs a cluster)",
             f"then: envkit probe --compare {store / run_id}"]
        )  # fmt: skip

    return CommandResult("probe", data, text)


def fleet_text(run: FleetRun) -> str:
    lines = [f"run {run.run_id} ({run.scheduler} job {run.job_id}, {run.job_state.value}): {run.run_dir}"]
    width = max((len(t.task) for t in run.tasks), default=4) + 2
    for t in run.tasks:
        what = t.report if t.state == "ok" else t.error or ""
        lines.append(f"  {t.task:<{width}}{t.state:<10}{what}")
    ok = sum(t.state == "ok" for t in run.tasks)
    lines.append(f"{ok} of {len(run.tasks)} tasks wrote a report")
    if ok >= 2:
        lines.append(f"compare them: envkit probe --compare {run.run_dir}")
    return "\n".join(lines)
