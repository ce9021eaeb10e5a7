"""``envkit probe``'s options as one frozen value, its five modes, and the conflicts between them.

Click parses the command line into :class:`ProbeArgs` (one field per option, see
:func:`envkit.cli._app.parsed_into`); :func:`mode_of` picks the mode (``k8s`` > ``fleet`` >
``compare`` > ``run``, the host or ``--image``); :data:`CONFLICTS` declares once which options a
mode refuses, checked by :func:`check_conflicts` before anything runs. Each mode then reads its own
typed value (:meth:`ProbeArgs.probe_options`, :meth:`ProbeArgs.bands`, :meth:`ProbeArgs.fleet`, …).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from envkit.comparison.bands import Bands
from envkit.errors import UsageError
from envkit.probe.runner import ProbeOptions

__all__ = ["CONFLICTS", "Conflict", "FleetArgs", "K8sArgs", "Mode", "ProbeArgs", "check_conflicts", "mode_of"]

Mode = Literal["run", "compare", "fleet", "k8s"]


@dataclass(frozen=True)
class FleetArgs:
    """The fan-out's options (``--slurm`` / ``--scheduler``): what :class:`~envkit.fleet.fanout.FleetOptions`
    needs besides the store and the image."""

    scheduler: str
    run_id: str | None
    nodes: int
    nodelist: tuple[str, ...]
    tasks_per_node: int
    partition: str | None
    account: str | None
    time_limit: str | None
    sbatch_args: tuple[str, ...]
    container: str
    repeat: int
    wait_timeout: float | None
    address: str | None = None  # --ray ADDRESS (auto: $RAY_ADDRESS or the local cluster)
    gpus_per_task: int = 0


@dataclass(frozen=True)
class K8sArgs:
    """``--k8s``: where the Job manifests go and how the pods reach the store."""

    emit: Path
    image: str
    nodes: tuple[str, ...]
    run_id: str | None
    namespace: str
    store_claim: str | None
    gpus_per_node: int


@dataclass(frozen=True)
class ProbeArgs:
    """Every option of ``envkit probe``, as click parsed it."""

    output: Path | None
    store: Path | None
    no_store: bool
    label: str | None
    frameworks: tuple[str, ...]
    workloads: tuple[str, ...]
    steps: int
    seed: int
    mode: str
    dtype: str
    device: str
    tf32: bool
    autocast: str
    threads: int
    budget: float | None
    nan_check: bool
    poison: str
    poison_step: int
    image: str | None
    python: Path | None
    compare: bool
    refs: tuple[str, ...]
    html_out: Path | None
    equivalent_edge: float
    drift_edge: float
    slurm: bool
    scheduler: str | None
    ray: str | None
    nodes: int | None
    nodelist: str | None
    tasks_per_node: int
    partition: str | None
    account: str | None
    time_limit: str | None
    sbatch_args: tuple[str, ...]
    container: str
    run_id: str | None
    repeat: int
    k8s: bool
    emit: Path | None
    namespace: str
    store_claim: str | None
    gpus_per_node: int | None
    wait_timeout: float | None

    def probe_options(self) -> ProbeOptions:
        return ProbeOptions(
            frameworks=self.frameworks,
            workloads=self.workloads,
            steps=self.steps,
            seed=self.seed,
            mode=self.mode,
            dtype=self.dtype,
            device=self.device,
            tf32=self.tf32,
            autocast=self.autocast,
            poison=self.poison,
            poison_step=self.poison_step,
            nan_check=self.nan_check,
            threads=self.threads,
            budget_s=self.budget or 0.0,
        )

    def bands(self) -> Bands:
        try:
            return Bands(self.equivalent_edge, self.drift_edge)
        except ValueError as e:
            raise UsageError(str(e), hint="e.g. --equivalent-edge 2e-6 --drift-edge 5e-3") from e

    def node_names(self) -> tuple[str, ...]:
        """--nodelist N1,N2 as node names (empty entries dropped)."""
        return tuple(n.strip() for n in (self.nodelist or "").split(",") if n.strip())

    def fleet(self) -> FleetArgs:
        """The fan-out's options; on Ray every alive node unless --nodes/--nodelist, one task per GPU
        with --gpus-per-node G (each with its own GPU)."""
        nodelist = self.node_names()
        ray = self.ray is not None or self.scheduler == "ray"
        per_gpu = ray and bool(self.gpus_per_node)
        return FleetArgs(
            scheduler="ray" if ray else self.scheduler or "slurm",
            run_id=self.run_id,
            nodes=len(nodelist) or self.nodes or (0 if ray else 1),
            nodelist=nodelist,
            tasks_per_node=self.gpus_per_node or 1 if per_gpu else self.tasks_per_node,
            partition=self.partition,
            account=self.account,
            time_limit=self.time_limit,
            sbatch_args=tuple(self.sbatch_args),
            container=self.container,
            repeat=self.repeat,
            wait_timeout=self.wait_timeout,
            address=None if self.ray in (None, "auto") else self.ray,
            gpus_per_task=1 if per_gpu else 0,
        )

    def k8s_args(self) -> K8sArgs:
        assert self.emit is not None and self.image is not None  # CONFLICTS refused the rest
        return K8sArgs(
            emit=self.emit,
            image=str(self.image),
            nodes=self.node_names(),
            run_id=self.run_id,
            namespace=self.namespace,
            store_claim=self.store_claim,
            gpus_per_node=1 if self.gpus_per_node is None else self.gpus_per_node,
        )


def mode_of(args: ProbeArgs) -> Mode:
    if args.k8s:
        return "k8s"
    if args.slurm or args.scheduler or args.ray is not None:
        return "fleet"
    return "compare" if args.compare else "run"


@dataclass(frozen=True)
class Conflict:
    """In ``mode``, ``given(args)`` is a usage error: ``message(args)`` with ``hint``."""

    mode: Mode
    given: Callable[[ProbeArgs], bool]
    message: Callable[[ProbeArgs], str]
    hint: str


def _python_refused(mode: Mode) -> Conflict:
    """``--python`` picks the host probe's interpreter: in ``mode`` it has no meaning."""
    return Conflict(
        mode,
        lambda a: a.python is not None,
        lambda a: f"--python does not apply to a {mode} probe",
        "--python PATH runs one probe on this host: envkit probe --python PATH",
    )


# In the order they are checked; the first that holds is the error.
CONFLICTS: tuple[Conflict, ...] = (
    Conflict(
        "fleet",
        lambda a: a.compare,
        lambda a: "--compare does not fan out",
        "run the fleet probe, then --compare STORE/RUN",
    ),
    Conflict(
        "fleet",
        lambda a: bool(a.output or a.no_store),
        lambda a: "a fleet run writes into the store",
        "drop -o/--no-store; use --store DIR",
    ),
    Conflict(
        "k8s",
        lambda a: not a.emit,
        lambda a: "--k8s writes manifests",
        "give --emit DIR, then `kubectl apply -f DIR`",
    ),
    Conflict(
        "k8s",
        lambda a: not a.image,
        lambda a: "--k8s runs an image",
        "--image REGISTRY/REPO@sha256:… (see build --push)",
    ),
    Conflict(
        "run",
        lambda a: bool(a.image and a.python),
        lambda a: "--python probes on the host; --image runs the image's own python",
        "give one of --python PATH and --image NAME",
    ),
    *(_python_refused(mode) for mode in ("compare", "fleet", "k8s")),
    *(
        Conflict(
            mode,
            lambda a: bool(a.budget) and len(a.frameworks) != 1,
            lambda a: f"--budget plans the steps of one framework, not {len(a.frameworks)}",
            "give --frameworks torch (or paddle) with --budget",
        )
        for mode in ("run", "fleet", "k8s")
    ),
    Conflict(
        "compare",
        lambda a: a.budget is not None,
        lambda a: "--budget applies to a probe that runs, not to --compare",
        "drop --budget; the reports say how many steps their budget let run",
    ),
    Conflict(
        "run",
        lambda a: bool(a.refs),
        lambda a: f"unexpected argument {a.refs[0]!r}",
        "to compare reports: --compare A B",
    ),
    Conflict(
        "compare",
        lambda a: not a.refs,
        lambda a: "--compare needs reports",
        "--compare A B, --compare STORE/RUN or --compare A B C …",
    ),
    Conflict(
        "run",
        lambda a: a.html_out is not None,
        lambda a: "--html needs --compare A B",
        "envkit probe --compare A B --html out.html",
    ),
)


def check_conflicts(args: ProbeArgs, mode: Mode) -> None:
    for conflict in CONFLICTS:
        if conflict.mode == mode and conflict.given(args):
            raise UsageError(conflict.message(args), hint=conflict.hint)
