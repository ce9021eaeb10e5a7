"""``envkit probe``: run the numerical probe (host or image) and compare reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from envkit.cli import cli, fleet_cmd
from envkit.cli._app import command, parsed_into, project_root, services, working
from envkit.cli.probe_args import ProbeArgs, check_conflicts, mode_of
from envkit.comparison.bands import Bands
from envkit.errors import ExitCode
from envkit.probe.driver import driver_line
from envkit.probe.run import probe as run_probe
from envkit.probe.runner import FRAMEWORKS, WORKLOADS
from envkit.result import CommandResult
from envkit.store.layout import default_store


class _Seconds(click.ParamType[float]):
    """A duration: ``60``, ``60s``, ``1.5m``; more than 0 and at most a day."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, (int, float)):
            seconds = float(value)
        else:
            text = str(value).strip().lower()
            scale = 60.0 if text.endswith("m") else 1.0
            try:
                seconds = float(text.removesuffix("m").removesuffix("s")) * scale
            except ValueError:
                self.fail(f"{value!r} is not a duration (60, 60s, 1.5m)", param, ctx)
        if not 0 < seconds <= 86_400:
            self.fail(f"{value!r}: a duration above 0 and at most a day", param, ctx)
        return seconds


def _csv(allowed: tuple[str, ...]) -> Any:
    def convert(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
        items = tuple(dict.fromkeys(t.strip() for t in value.split(",") if t.strip()))
        bad = [t for t in items if t not in allowed]
        if bad or not items:
            raise click.BadParameter(f"choose from {', '.join(allowed)} (comma-separated)")
        return items

    return convert


@command(cli, "probe")
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Also write the report here."
)
@click.option(
    "--store",
    type=click.Path(file_okay=False, path_type=Path),
    help="Report store (default $ENVKIT_STORE or .envkit/reports); reports go to STORE/HOST/LABEL.json.",
)
@click.option("--no-store", is_flag=True, help="Do not write the report to the store.")
@click.option("--label", help="Name of the report in the store (default 'latest', or the image name).")
@click.option("--frameworks", default=",".join(FRAMEWORKS), show_default=True, callback=_csv(FRAMEWORKS))
@click.option("--workloads", default=",".join(WORKLOADS), show_default=True, callback=_csv(WORKLOADS))
@click.option("--steps", type=click.IntRange(1, 10000), default=10, show_default=True)
@click.option("--seed", type=click.IntRange(0), default=0, show_default=True)
@click.option(
    "--mode",
    type=click.Choice(["strict", "default"]),
    default="strict",
    show_default=True,
    help="strict: deterministic algorithms, TF32 off, cuDNN benchmark off; default: the framework's.",
)
@click.option("--dtype", type=click.Choice(["float32", "float64"]), default="float32", show_default=True)
@click.option(
    "--device",
    type=click.Choice(["auto", "cpu", "cuda"]),
    default="auto",
    show_default=True,
    help="auto: CUDA when the framework sees a GPU, else CPU; the report records the device used.",
)
@click.option("--tf32", is_flag=True, help="Allow TF32 matmul/convolution (GPU).")
@click.option("--autocast", type=click.Choice(["none", "bf16"]), default="none", show_default=True)
@click.option(
    "--threads", type=click.IntRange(0), default=0, help="Intra-op threads (sets OMP/MKL_NUM_THREADS)."
)
@click.option(
    "--budget",
    type=_Seconds(),
    metavar="DURATION",
    help="Fit the probe in this time (60s, 2m; the framework's import included): the steps that fit "
    "(at most --steps), saying how many ran. One framework.",
)
@click.option(
    "--nan-check", is_flag=True, help="Turn on the frameworks' op-level NaN/Inf checks to name the op."
)
@click.option(
    "--poison",
    type=click.Choice(["none", "input", "lr"]),
    default="none",
    show_default=True,
    help="Plant a NaN in one input (at --poison-step) or use a huge learning rate: proves NaN detection.",
)
@click.option("--poison-step", type=click.IntRange(1), default=2, show_default=True)
@click.option("--image", help="Run the payload inside this image (or envkit/NAME) instead of on the host.")
@click.option(
    "--python",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Probe on the host with this interpreter (a conda environment's bin/python, …), not envkit's.",
)
@click.option(
    "--compare",
    is_flag=True,
    help="Compare REPORTS: two (files or HOST[/LABEL] in the store), a fleet run (STORE/RUN), or many.",
)
@click.argument("refs", nargs=-1, metavar="[REPORTS]...")
@click.option(
    "--html",
    "html_out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="With --compare: write an HTML page.",
)
@click.option(
    "--equivalent-edge",
    type=float,
    default=Bands.equivalent,
    show_default=True,
    help="Largest max-relative-difference still 'equivalent'.",
)
@click.option(
    "--drift-edge",
    type=float,
    default=Bands.drift,
    show_default=True,
    help="Largest max-relative-difference still 'precision-drift'; beyond is 'diverged'.",
)
@fleet_cmd.fleet_options
@parsed_into(ProbeArgs)
def probe(args: ProbeArgs) -> CommandResult:
    """Run a seeded rnn and tiny-BERT training in torch and paddle and record the numbers.

    Inputs and initial weights come from a portable generator, so every framework and version starts
    from the same numbers. Each step records loss, global grad norm and NaN/Inf flags; the report holds
    a fingerprint of everything that moves the numbers (TF32, determinism, threads, CUDA stack, packages).

    With --compare A B: a verdict per framework × workload × metric (identical, equivalent,
    precision-drift, diverged, invalid) and the likely causes. Exit 0 for identical/equivalent, 1 otherwise.

    Fleet (--slurm): one task per node (sbatch --parsable, --exclusive; followed with squeue/sacct), each
    writing STORE/RUN/NODE.json into a store every node sees (--store on a shared filesystem); the run id
    is printed; tasks that fail or never run are listed per node (exit 1). With --image the nodes' Docker
    engines run the image by digest: pulled from the registry `envkit build NAME --push REGISTRY` pushed
    it to, or saved once into STORE/images and loaded on each node (checked by image id).
    """
    mode = mode_of(args)
    check_conflicts(args, mode)
    if mode == "k8s":
        opts = args.probe_options()
        return fleet_cmd.emit_k8s(args.k8s_args(), _store(args).resolve(), opts)
    if mode == "fleet":
        image = fleet_image(args.image, _store(args)) if args.image else None
        return fleet_cmd.run_fleet(args.fleet(), _store(args).resolve(), args.probe_options(), image)
    if mode == "compare":
        return _compare(args)
    return _run(args)


def _store(args: ProbeArgs) -> Path:
    """--store, or $ENVKIT_STORE, or the project's."""
    return Path(args.store or default_store(project_root()))


def fleet_image(image: str, store: Path) -> dict[str, str]:
    """How the image reaches the nodes: its registry digest, or a tar in the store (saved once)."""
    from envkit.fleet.images import image_for_fleet

    engine, image_store = services().engine_and_store("a fleet probe of a local image")
    return image_for_fleet(engine, image_store, image, store, project_root())


def _run(args: ProbeArgs) -> CommandResult:
    where = f"in {args.image}" if args.image else f"with {args.python}" if args.python else "on this host"
    opts = args.probe_options()
    with working(f"probing {','.join(opts.frameworks)} × {','.join(opts.workloads)} {where}"):
        run = run_probe(
            opts,
            store=None if args.no_store else _store(args),
            label=args.label,
            output=args.output,
            image=args.image,
            engine=services().engine() if args.image else None,
            python=args.python,
        )

    def text() -> str:
        lines = [
            f"{row.framework:<7}{row.workload:<6}{row.status:<8}loss {row.loss_first} -> "
            f"{row.loss_last}  {row.note}"
            for row in run.summary
        ]
        check = run.report.driver
        driver = [driver_line(check)] if check else []
        budget = run.budget_line()
        return "\n".join(
            [*lines, *driver, *([budget] if budget else []), *(f"report: {w}" for w in run.written)]
        )

    code = ExitCode.FINDINGS if run.nonfinite else ExitCode.OK
    return CommandResult("probe", run.to_json(), text, exit_code=code, warnings=run.warnings)


def _compare(args: ProbeArgs) -> CommandResult:
    from envkit.cli.compare_cmd import compare_command

    return compare_command(args.refs, _store(args), label=args.label, bands=args.bands(), html=args.html_out)


__all__ = ["probe"]
