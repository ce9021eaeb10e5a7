"""``envkit probe``: run the numerical probe (host or image) and compare reports."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import click

from envkit._atomic import write_text_atomic
from envkit.build.engine import ContainerEngine
from envkit.cli import cli
from envkit.cli._app import command, project_root
from envkit.errors import ExitCode, UsageError
from envkit.probe.compare import Bands, Comparison, compare_reports, fmt_rel
from envkit.probe.html import render_html
from envkit.probe.report import (
    default_store,
    dump_report,
    load_report,
    resolve_report,
    safe_name,
    save_to_store,
)
from envkit.probe.runner import FRAMEWORKS, WORKLOADS, ProbeOptions, run_in_image, run_on_host
from envkit.result import CommandResult


def _csv(allowed: tuple[str, ...]) -> Any:
    def convert(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
        items = tuple(dict.fromkeys(t.strip() for t in value.split(",") if t.strip()))
        bad = [t for t in items if t not in allowed]
        if bad or not items:
            raise click.BadParameter(f"choose from {', '.join(allowed)} (comma-separated)")
        return items

    return convert


def make_engine(name: str) -> ContainerEngine:
    """The composition root for engines: chosen by name, imported lazily."""
    if name == "fake":
        from envkit.build.fake import FakeEngine

        return FakeEngine()
    from envkit.build import docker_api  # type: ignore[attr-defined,unused-ignore]

    engine: ContainerEngine = docker_api.DockerEngine()
    return engine


def resolve_image(engine: ContainerEngine, ref: str) -> str:
    """An image reference, or an environment name built as ``envkit/NAME``."""
    if engine.inspect(ref) is not None or ":" in ref or "/" in ref:
        return ref
    for candidate in (f"envkit/{ref}:latest", f"envkit/{ref}"):
        if engine.inspect(candidate) is not None:
            return candidate
    return ref


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
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True)
@click.option("--tf32", is_flag=True, help="Allow TF32 matmul/convolution (GPU).")
@click.option("--autocast", type=click.Choice(["none", "bf16"]), default="none", show_default=True)
@click.option(
    "--threads", type=click.IntRange(0), default=0, help="Intra-op threads (sets OMP/MKL_NUM_THREADS)."
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
@click.option("--engine", "engine_name", type=click.Choice(["docker", "fake"]), default="docker", hidden=True)
@click.option(
    "--compare", nargs=2, metavar="A B", help="Compare two reports (files or HOST[/LABEL] in the store)."
)
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
def probe(**kw: Any) -> CommandResult:
    """Run a seeded rnn and tiny-BERT training in torch and paddle and record the numbers.

    Inputs and initial weights come from a portable generator, so every framework and version starts
    from the same numbers. Each step records loss, global grad norm and NaN/Inf flags; the report holds
    a fingerprint of everything that moves the numbers (TF32, determinism, threads, CUDA stack, packages).

    With --compare A B: a verdict per framework × workload × metric (identical, equivalent,
    precision-drift, diverged, invalid) and the likely causes. Exit 0 for identical/equivalent, 1 otherwise.
    """
    if kw["compare"]:
        return _compare(kw)
    if kw["html_out"]:
        raise UsageError("--html needs --compare A B", hint="envkit probe --compare A B --html out.html")
    return _run(kw)


def _options(kw: dict[str, Any]) -> ProbeOptions:
    return ProbeOptions(
        frameworks=kw["frameworks"],
        workloads=kw["workloads"],
        steps=kw["steps"],
        seed=kw["seed"],
        mode=kw["mode"],
        dtype=kw["dtype"],
        device=kw["device"],
        tf32=kw["tf32"],
        autocast=kw["autocast"],
        poison=kw["poison"],
        poison_step=kw["poison_step"],
        nan_check=kw["nan_check"],
        threads=kw["threads"],
    )


def _run(kw: dict[str, Any]) -> CommandResult:
    opts = _options(kw)
    host = socket.gethostname()
    if kw["image"]:
        engine = make_engine(kw["engine_name"])
        image = resolve_image(engine, kw["image"])
        label = kw["label"] or f"image-{safe_name(image)}"
        report = run_in_image(engine, image, opts, label=label, host=host)
    else:
        label = kw["label"] or "latest"
        report = run_on_host(opts, label=label)
    written = []
    if kw["output"]:
        write_text_atomic(kw["output"], dump_report(report))
        written.append(str(kw["output"]))
    if not kw["no_store"]:
        written.append(str(save_to_store(report, kw["store"] or default_store(project_root()), label)))
    summary = _summary(report)
    warnings = [
        f"{fw}: {e['status']}: {e.get('reason')}"
        for fw, e in report["frameworks"].items()
        if e["status"] != "ok"
    ]
    nonfinite = any(
        r.get("nonfinite") for e in report["frameworks"].values() for r in e.get("workloads", {}).values()
    )

    def text() -> str:
        lines = [
            f"{row['framework']:<7}{row['workload']:<6}{row['status']:<8}loss {row['loss_first']} -> "
            f"{row['loss_last']}  {row['note']}"
            for row in summary
        ]
        return "\n".join([*lines, *(f"report: {w}" for w in written)])

    data = {"label": label, "written": written, "summary": summary, "report": report}
    return CommandResult(
        "probe", data, text, exit_code=ExitCode.FINDINGS if nonfinite else ExitCode.OK, warnings=warnings
    )


def _summary(report: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for fw, entry in report["frameworks"].items():
        for wl, res in entry.get("workloads", {}).items():
            steps = res.get("steps") or [{}]
            bad = res.get("nonfinite")
            note = res.get("reason") or ""
            if bad:
                note = f"NaN/Inf at step {bad['step']} ({bad['what']}" + (
                    f", first parameter {bad['parameter']})"
                    if bad.get("parameter")
                    else f": {bad.get('op_error')})"
                )
            rows.append(
                {
                    "framework": fw,
                    "workload": wl,
                    "status": "nan/inf" if bad and res["status"] == "ok" else res["status"],
                    "loss_first": steps[0].get("loss"),
                    "loss_last": steps[-1].get("loss"),
                    "sha256": res.get("final_params_sha256"),
                    "note": note,
                }
            )
    return rows


def _compare(kw: dict[str, Any]) -> CommandResult:
    store = kw["store"] or default_store(project_root())
    try:
        bands = Bands(kw["equivalent_edge"], kw["drift_edge"])
    except ValueError as e:
        raise UsageError(str(e), hint="e.g. --equivalent-edge 2e-6 --drift-edge 5e-3") from e
    path_a, path_b = (resolve_report(ref, store, kw["label"]) for ref in kw["compare"])
    a, b = load_report(path_a), load_report(path_b)
    result = compare_reports(a, b, bands)
    if kw["html_out"]:
        write_text_atomic(kw["html_out"], render_html(a, b, result))
    data = {**result.to_json(), "a": str(path_a), "b": str(path_b)}
    if kw["html_out"]:
        data["html"] = str(kw["html_out"])
    ok = result.verdict in ("identical", "equivalent")
    return CommandResult(
        "probe", data, lambda: _compare_text(result), exit_code=ExitCode.OK if ok else ExitCode.FINDINGS
    )


def _compare_text(result: Comparison) -> str:
    lines = [f"verdict: {result.verdict}  ({result.names[0]} vs {result.names[1]})"]
    for c in result.comparisons:
        step = f"from step {c.first_diff_step}" if c.first_diff_step else ""
        lines.append(
            f"  {c.framework:<7}{c.workload:<6}{c.metric:<17}{c.verdict:<16}"
            f"{fmt_rel(c.max_rel_diff):<9}{step}"
            + (f"  {c.detail}" if c.detail and c.verdict != "identical" else "")
        )
    lines += [f"  note: {n}" for n in result.notes]
    if result.causes:
        head = (
            "likely causes:"
            if result.verdict != "identical"
            else "environment differences (no numeric effect):"
        )
        lines.append(head)
        lines += [f"  {i}. {c.message}" for i, c in enumerate(result.causes[:12], 1)]
        if len(result.causes) > 12:
            lines.append(f"  … {len(result.causes) - 12} more (--json)")
    return "\n".join(lines)


__all__ = ["make_engine", "probe", "resolve_image"]
