"""``envkit build`` and ``envkit images``: the composition root for the Docker engine."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import click
from rich.markup import escape

from envkit.build.bootstrap import DEFAULT_PACKAGES, bootstrap_image
from envkit.build.builder import Builder, BuildOptions, BuildResult
from envkit.build.debug import DebugResult
from envkit.build.image_list import list_images
from envkit.catalog import load_catalog
from envkit.cli import cli
from envkit.cli._app import command, err_console, project_root, services, shown
from envkit.cli.build_debug import debug_builder, debug_text
from envkit.engine.protocol import BuildEvent, ContainerEngine
from envkit.engine.push import check_registry, push_image
from envkit.errors import BuildFailed, ProbeError, UsageError
from envkit.probe.run import probe
from envkit.probe.runner import FRAMEWORKS, ProbeOptions
from envkit.result import CommandResult
from envkit.spec.load import LoadedSpec, load_spec, resolve_spec_path
from envkit.spec.models import NAME_RE
from envkit.store.layout import default_store

__all__ = [
    "base_image",
    "build",
    "find_links_from_env",
    "images",
]


def find_links_from_env() -> tuple[str, ...]:
    env = os.environ.get("ENVKIT_FIND_LINKS", "")
    return tuple(p for p in env.split(os.pathsep) if p)


def _find_links(given: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(given) + find_links_from_env()


@contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[BuildEvent], None] | None]:
    """A spinner with the current step; each step is also printed once (to stderr)."""
    if not enabled:
        yield None
        return
    with err_console.status("starting the build") as status:

        def show(event: BuildEvent) -> None:
            if event.step:
                err_console.print(f"[cyan]step[/] {escape(shown(event.step))}", highlight=False)
                status.update(f"[bold]{escape(shown(event.step))}")
            elif event.message.strip():
                status.update(f"{escape(shown(event.message.strip().splitlines()[-1][:100]))}")

        yield show


@command(cli, "build")
@click.argument("name", metavar="NAME|PATH")
@click.option(
    "--offline", is_flag=True, help="Fill a wheelhouse on the host; the image builds with no network."
)
@click.option("--frozen", is_flag=True, help="Refuse to build unless a fresh lock exists (never lock).")
@click.option("--no-cache", "no_cache", is_flag=True, help="Rebuild every step, even when the image exists.")
@click.option(
    "--probe",
    is_flag=True,
    help="After building, run the numerical probe inside the image (as `envkit probe --image`) and store "
    "its report; exit 3 when a framework of the spec does not run there.",
)
@click.option(
    "--push",
    "registry",
    metavar="REGISTRY",
    help="Then tag and push REGISTRY/envkit/NAME:<hash12> and record the pushed digest "
    "(.envkit/pushed/NAME.json), which `envkit probe --slurm --image NAME` runs by digest.",
)
@click.option(
    "--find-links", "find_links", multiple=True, metavar="DIR",
    help="Local wheel directory for the wheelhouse (repeatable; also $ENVKIT_FIND_LINKS, ':'-separated).",
)  # fmt: skip
@click.option(
    "--pack", "pack", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
    help="Build a conda environment from a pack made by `envkit pack` (implies --offline).",
)  # fmt: skip
@click.option(
    "--debug-image", "debug_image", is_flag=True,
    help="Then build envkit/NAME:debug FROM the runtime image (by ID): gdb with Python symbols, py-spy, "
    "JupyterLab (own prefix, loopback, token) and sshd (key only), pinned in images/NAME/debug.lock.json. "
    "py-spy and gdb need `docker run --cap-add SYS_PTRACE`. Never pushed (refused with --push).",
)  # fmt: skip
def build(
    name: str,
    offline: bool,
    frozen: bool,
    no_cache: bool,
    probe: bool,
    registry: str | None,
    find_links: tuple[str, ...],
    pack: Path | None,
    debug_image: bool,
) -> CommandResult:
    """Build the image for environment NAME through the Docker engine.

    The image installs from the lock in images/NAME/: a missing or stale lock is
    solved first, as `envkit lock NAME` would (py-rattler for conda, uv for pip);
    --frozen refuses instead. If the channels cannot be reached, the build exits 3:
    set mirrors in the spec, or commit a lock and build with --frozen.

    Tags: envkit/NAME:<hash12> (digest of the build context, its wheels named by the
    hashed lock they come from) and envkit/NAME:latest. When that image exists the
    build is skipped ("up to date") before any wheel is fetched. The full log is
    written to .envkit/logs/NAME-<hash12>.log; a failed or interrupted build prints
    the last lines, leaves no tag and exits 3.

    Offline (--offline or `offline: true` in the spec): wheels are fetched on the host
    (pip download, hashes checked against requirements.lock) into the
    context and installed with --no-index --require-hashes; the build has no network.
    Conda environments get the lock's packages as a local channel in the context, from a
    pack (--pack FILE, verified against the lock first: another lock or a changed file exits
    2) or downloaded on the host now (sha256-checked); py-rattler, from the pack, installs the
    explicit lock in the builder stage (needs python3 >= 3.10 there).
    """
    root = project_root()
    if debug_image and registry is not None:
        raise UsageError(
            "--debug-image with --push: the debug image is never pushed (and never under the runtime tag)",
            hint=f"push the runtime image: `envkit build {name} --push {registry}`, then build --debug-image",
        )
    if registry is not None:
        check_registry(registry)
    catalog = load_catalog()
    loaded = load_spec(resolve_spec_path(name, root), catalog)
    options = BuildOptions(
        offline=offline or pack is not None, frozen=frozen, nocache=no_cache,
        find_links=_find_links(find_links), pack=pack.resolve() if pack else None,
    )  # fmt: skip
    builder = services().builder(root)
    result, debug = _run_build(builder, loaded, options, debug_image=debug_image)
    data = result.to_json()
    warnings = list(loaded.warnings) + list(result.warnings)
    if debug is not None:
        data["debug"] = debug.to_json()
    if probe:
        data["probe"] = _probe(builder.engine, result, loaded, root)
    if registry is not None:
        data["pushed"] = _push(root, result, registry)
    return CommandResult(
        "build", data, lambda: _build_text(result, data) + debug_text(debug), warnings=warnings
    )


def _run_build(
    builder: Builder, loaded: LoadedSpec, options: BuildOptions, *, debug_image: bool
) -> tuple[BuildResult, DebugResult | None]:
    """The build (and the debug image's, with ``debug_image``), with progress; a failure's last lines."""
    show_progress = err_console.is_terminal or bool(os.environ.get("ENVKIT_PROGRESS"))
    try:
        with _progress(show_progress) as on_event:
            if debug_image:
                return debug_builder(builder).build(loaded, options, on_event)
            return builder.build(loaded, options, on_event), None
    except BuildFailed as e:
        if e.log_tail:
            err_console.print("[bold]last lines of the build:[/]")
            for line in e.log_tail[-15:]:
                err_console.print(f"  {escape(shown(line))}", highlight=False)
        raise


def _push(root: Path, result: BuildResult, registry: str) -> dict[str, object]:
    """``--push``: the built image to ``registry``; what was sent, for the JSON."""
    _, store = services().engine_and_store("envkit build --push")
    pushed, record = push_image(store, root, result.name, result.tag, result.image_id, registry)
    return {"ref": pushed.ref, "digest": pushed.digest, "record": str(record),
            "layers_sent": pushed.layers_sent, "layers_present": pushed.layers_present,
            "bytes_sent": pushed.bytes_sent}  # fmt: skip


def _probe(engine: ContainerEngine, result: BuildResult, loaded: LoadedSpec, root: Path) -> dict[str, object]:
    """The numerical probe in the new image; every framework of the spec must run ("ok")."""
    declared = tuple(fw for fw, _ in loaded.spec.frameworks.items())
    opts = ProbeOptions(frameworks=declared or FRAMEWORKS)
    # require_framework=False: the check below names each framework of the spec that did not run
    run = probe(opts, store=default_store(root), image=result.tag, engine=engine, require_framework=False)
    path = run.written[-1]
    frameworks = {fw: entry.status.value for fw, entry in run.report.frameworks.items()}
    lines = list(run.warnings) + [
        f"{r.framework} {r.workload}: {r.status}, loss {r.loss_first} -> {r.loss_last}" for r in run.summary
    ]
    broken = [fw for fw in declared if frameworks.get(fw) != "ok"]
    if broken:
        raise ProbeError(
            f"the probe in {result.tag} could not run {', '.join(broken)}: " + "; ".join(lines),
            hint=f"the image builds but a framework does not work there; report: {path}",
        )
    return {"report": path, "frameworks": frameworks, "lines": lines}


def _build_text(result: BuildResult, data: dict[str, object]) -> str:
    size = f"{result.size / 1e6:.0f} MB"
    if result.status == "up-to-date":
        head = f"{result.name}: up to date ({result.tag}, {size}, {result.seconds:.2f} s)"
    else:
        head = f"{result.name}: built {result.tag} ({size}, {result.seconds:.1f} s; log {result.log_path})"
    lines = [
        head,
        f"  also tagged {result.latest}; lock: {result.lock}; offline: {str(result.offline).lower()}",
    ]
    if result.pack:
        lines.append(f"  conda packages: {result.pack_files} files from {result.pack}")
    if result.pruned_bytes:
        lines.append(f"  removed the builder stage's untagged image ({result.pruned_bytes / 1e6:.0f} MB)")
    pushed = data.get("pushed")
    if isinstance(pushed, dict):
        lines.append(
            f"  pushed {pushed['ref']} (recorded in {pushed['record']}): {pushed.get('layers_sent', 0)} "
            f"layers sent ({int(pushed.get('bytes_sent') or 0):,} bytes), {pushed.get('layers_present', 0)} "
            "already in the registry"
        )
    probe = data.get("probe")
    if isinstance(probe, dict):
        lines += [f"  probe: {line}" for line in probe["lines"]] + [f"  probe report: {probe['report']}"]
    return "\n".join(lines)


@command(cli, "images")
@click.argument("names", nargs=-1, metavar="[NAME]...")
def images(names: tuple[str, ...]) -> CommandResult:
    """List images built by envkit, per environment: tags, context hash, size, staleness.

    An image is stale when the spec or the lock changed since it was built. A debug image
    (`envkit build NAME --debug-image`) is listed beside the runtime image it was built FROM.
    """
    root = project_root()
    bad = [n for n in names if not NAME_RE.match(n)]
    if bad:
        raise UsageError(
            f"{', '.join(repr(n) for n in bad)}: not an environment name",
            hint="names match [a-z0-9][a-z0-9._-]*",
        )
    rows = [r for r in list_images(services().engine(), root, load_catalog()) if not names or r.name in names]

    def text() -> str:
        if not rows:
            return "no envkit images (build one with `envkit build NAME`)"
        out = []
        for r in rows:
            tags = ", ".join(t.split(":", 1)[1] for t in r.tags) or "<untagged>"
            state = f"stale: {r.reason}" if r.stale else "current"
            kind = r.variant if r.runtime_id is None else f"{r.variant} FROM {r.runtime_id[7:19]}"
            size = f"{r.size / 1e6:>7.0f} MB"
            shared = (
                f"  {r.shared_layers}/{r.layers} layers shared with {', '.join(r.shared_with)}"
                if r.shared_with
                else ""
            )
            out.append(
                f"{r.name:<24} {kind:<20} {tags:<24} {r.context_sha256[:12]:<12} {size}  {state}{shared}"
            )
        return "\n".join(out)

    return CommandResult("images", {"images": [r.to_json() for r in rows]}, text)


@command(cli, "base-image")
@click.argument("tag", default="envkit/debian-python:bookworm", metavar="[TAG]")
@click.option("--suite", default="bookworm", show_default=True, help="Debian suite to bootstrap.")
@click.option("--mirror", metavar="URL", help="Debian mirror [default: $ENVKIT_DEBIAN_MIRROR or apt's].")
@click.option(
    "--include",
    "packages",
    multiple=True,
    metavar="PKG",
    help=f"Debian packages to install [default: {', '.join(DEFAULT_PACKAGES)} and the OS libraries "
    "the framework wheels need, e.g. libgomp1 for Paddle] (repeatable).",
)
@click.option("--force", is_flag=True, help="Recreate the image even when it exists.")
def base_image(
    tag: str, suite: str, mirror: str | None, packages: tuple[str, ...], force: bool
) -> CommandResult:
    """Make a base image without a registry: debootstrap a minimal Debian, import it into the engine.

    For air-gapped machines that cannot pull python or nvidia/cuda images: the result (Debian with
    python3, venv, pip and the OS libraries the framework wheels need, e.g. libgomp1) serves as
    `base_image` of an `installer: venv` spec. Needs root and debootstrap; takes a few minutes;
    does nothing when TAG exists with those packages (unless --force).
    """
    result = bootstrap_image(
        services().engine(),
        tag,
        suite=suite,
        mirror=mirror,
        packages=packages or None,
        force=force,
    )
    data = {
        "tag": tag,
        "id": result.image.id,
        "created": result.created,
        "suite": suite,
        "mirror": result.mirror,
        "size": result.image.size,
    }
    state = f"created from {result.mirror}" if result.created else "exists"
    return CommandResult("base-image", data, f"{tag}: {state} ({result.image.size / 1e6:.0f} MB)")
