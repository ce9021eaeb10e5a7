"""``envkit check``: will this image run on that GPU and driver? Checked without a GPU (composition root)."""

from __future__ import annotations

from pathlib import Path

import click

from envkit._atomic import write_text_atomic
from envkit._safe import one_line
from envkit.catalog import load_catalog
from envkit.cli import cli
from envkit.cli._app import command, services, working
from envkit.cli.check_text import check_text, verdict_lines
from envkit.errors import ExitCode, UsageError
from envkit.readiness.check import check, facts_in_image, facts_on_host, readiness_sbom
from envkit.readiness.lockcheck import lock_verdicts, read_gpu_code
from envkit.readiness.targets import Target, gpu_target, host_targets, parse_driver
from envkit.result import CommandResult

__all__ = ["check_cmd"]


@command(cli, "check")
@click.argument("image", required=False)
@click.option(
    "--site",
    "sites",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Check a site-packages directory on this host instead of an image (repeatable). Opening "
    "DIR's CUDA libraries runs their constructors on this host: each opens in a child with an emptied "
    "environment, a scratch directory and no network (unshare) where the platform allows.",
)
@click.option(
    "--gpu",
    "gpus",
    multiple=True,
    metavar="NAME|sm_XX",
    help="A target GPU: H100, A100, B200, RTX5090 ... or a capability (sm_90, 12.0). Repeatable.",
)
@click.option(
    "--driver",
    "drivers",
    multiple=True,
    metavar="VERSION",
    help="A target host driver (535.104.05). With --gpu: that GPU on that driver. Repeatable.",
)
@click.option(
    "--host",
    "hosts",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="REPORT",
    help="A target host's report: nvidia-smi output, collect_env, a snapshot or a probe report.",
)
@click.option(
    "--lock",
    "lock_path",
    type=click.Path(path_type=Path),
    metavar="PATH",
    help="Check a lock's wheels instead: images/NAME (or its gpu-code.json, written by `envkit lock` "
    "when the spec names `gpus:`); targets default to the spec's GPUs.",
)
@click.option(
    "--cache",
    "caches",
    multiple=True,
    metavar="DIR",
    help="A JIT cache to read too (~/.cache/torch_extensions): on this host with --site, inside IMAGE "
    "otherwise. Repeatable.",
)
@click.option("--all", "show_all", is_flag=True, help="Show every note (loaded versions, host libraries).")
@click.option(
    "--sbom",
    "sbom_out",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Write IMAGE's SBOM with these facts (loaded CUDA libraries, GPU code, driver floors) to FILE.",
)
def check_cmd(
    image: str | None,
    sites: tuple[Path, ...],
    gpus: tuple[str, ...],
    drivers: tuple[str, ...],
    hosts: tuple[Path, ...],
    lock_path: Path | None,
    caches: tuple[str, ...],
    show_all: bool,
    sbom_out: Path | None,
) -> CommandResult:
    """Check, with no GPU, that IMAGE's framework will run on a GPU and driver.

    Inside the image (the payload mounted read-only, no GPU, no network) envkit walks every
    shared library torch/paddle links (DT_NEEDED, with the image's own loader paths) and opens at
    run time, loads the CUDA libraries in child processes for the versions they report, and reads
    the SASS/PTX architectures of every fatbin of every shared object in the environment (and
    --cache DIR), each named by the package that installed it. Each target (--gpu, --driver,
    --host) gets a verdict: ready, or will-fail with the error the framework or package would
    raise there; several targets print as one table. --lock checks a lock's wheels instead (from
    its gpu-code.json). Exit 1 when a target will fail.

    The verdict is as honest as the image: what the payload prints there is parsed (shape-checked,
    never run), so an image can claim code it does not carry. --site DIR opens DIR's libraries, which
    runs their constructors on this host: each opens in a child with an emptied environment
    (LD_LIBRARY_PATH kept), a scratch working directory and no network (`unshare -n`; `unshare -rn`
    when not root); where unshare is refused the output says the network was not isolated.
    """
    if sum((image is not None, bool(sites), lock_path is not None)) != 1:
        raise UsageError(
            "give one of IMAGE, --site DIR or --lock PATH", hint="envkit check envkit/cuda11.8-paddle2.6"
        )
    if lock_path is not None:
        return _check_lock(lock_path, gpus, drivers, hosts)
    if sbom_out is not None and image is None:
        raise UsageError(
            "--sbom needs an IMAGE (the SBOM is the image's)", hint="envkit check IMAGE --sbom FILE"
        )
    catalog = load_catalog()
    targets = _targets(gpus, drivers, hosts)
    if image is not None:
        with working(f"checking {image}"):
            facts = facts_in_image(services().engine(), image, catalog, caches)
        where = image
    else:
        facts = facts_on_host(
            [str(s) for s in sites], catalog, caches=[str(Path(c).expanduser()) for c in caches]
        )
        where = ", ".join(str(s) for s in sites)
    result = check(facts, targets, catalog, where=where)
    data = result.to_json()
    if sbom_out is not None and image is not None:
        write_text_atomic(sbom_out, readiness_sbom(services().engine(), image, facts, catalog))
        data["sbom"] = str(sbom_out)
    code = ExitCode.OK if result.ok else ExitCode.FINDINGS
    return CommandResult("check", data, lambda: check_text(result, show_all, sbom_out), code)


def _check_lock(
    path: Path, gpus: tuple[str, ...], drivers: tuple[str, ...], hosts: tuple[Path, ...]
) -> CommandResult:
    code = read_gpu_code(path)
    targets = _targets(gpus, drivers, hosts) or [gpu_target(g, load_catalog()) for g in code.gpus]
    if not any(t.cc for t in targets):
        raise UsageError(f"{path}: name a GPU to check the lock for", hint="--gpu H100")
    verdicts = lock_verdicts(code, targets, load_catalog())
    data = {
        "where": str(path),
        "wheels_read": len(code.wheels),
        "wheels_not_read": [f"{n} {v}" for n, v, _ in code.not_scanned],
        "verdicts": [v.to_json() for v in verdicts],
    }

    def text() -> str:
        lines = [f"{path}: {len(code.wheels)} wheels read, {len(code.not_scanned)} not at hand when locked"]
        lines += verdict_lines(verdicts)
        return "\n".join(one_line(line) for line in lines)

    ok = all(v.status == "ready" for v in verdicts)
    return CommandResult("check", data, text, ExitCode.OK if ok else ExitCode.FINDINGS)


def _targets(gpus: tuple[str, ...], drivers: tuple[str, ...], hosts: tuple[Path, ...]) -> list[Target]:
    catalog = load_catalog()
    parsed = [parse_driver(d) for d in drivers]
    out: list[Target] = []
    for name in gpus:
        if parsed:
            out.extend(gpu_target(name, catalog, d) for d in parsed)
        else:
            out.append(gpu_target(name, catalog))
    if not gpus:
        out.extend(Target(f"driver {d}", driver=d) for d in parsed)
    for host in hosts:
        out.extend(host_targets(host, catalog))
    return out
