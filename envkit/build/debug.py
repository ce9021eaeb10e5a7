"""``envkit build NAME --debug-image``: the runtime image, then a debug image FROM it (by image ID).

The runtime image is built (or found up to date) exactly as ``envkit build NAME`` does; the debug
image never rebuilds the environment: its base is that image's ID, and one layer adds gdb with the
Python debug symbols, py-spy, JupyterLab (its own prefix) and OpenSSH, every file pinned in
``images/NAME/debug.lock.json`` (:mod:`envkit.lock.debug_tools`) and fetched on the host, so the
build has no network. Tags: ``envkit/NAME:<hash12>-debug`` (the debug context's digest) and
``envkit/NAME:debug``; never a runtime tag.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from envkit import __version__, _proc
from envkit._atomic import state_dir, write_text_atomic
from envkit.build.bootstrap import debian_mirror
from envkit.build.builder import (
    CONTEXT_LABEL,
    NAME_LABEL,
    Builder,
    BuildOptions,
    BuildResult,
    image_repo,
)
from envkit.build.stream import BuildJob, EventSink, build_log, stream_build
from envkit.engine.protocol import ContainerEngine
from envkit.errors import BuildFailed, SbomNotCarried
from envkit.lock.debian import AptState, image_release
from envkit.lock.debug_tools import (
    DEBUG_LOCK,
    DEBUG_REQUIREMENTS,
    DebugLock,
    DebugRequest,
    image_python,
    read_debug_lock,
    resolve_debug_lock,
)
from envkit.lock.epoch import source_date_epoch
from envkit.lock.solver import PipResolver
from envkit.lock.virtual import python_platform
from envkit.offline.debug_fetch import fetch_debug_inputs
from envkit.render.context import ContextFiles
from envkit.render.debug import (
    DEBUG_PREFIX,
    DEBUG_VARIANT,
    LOCK_LABEL,
    RUNTIME_LABEL,
    VARIANT_LABEL,
    DebugInputs,
    debug_files,
    debug_user,
)
from envkit.render.dockerfile import LOCK_LABEL as RUNTIME_LOCK_LABEL
from envkit.render.dockerfile import SPEC_LABEL
from envkit.sbom.carried import carried_sbom
from envkit.sbom.cyclonedx import SBOM_LABEL, SBOM_NAME, SBOM_PATH, ImageRef, sbom_sha256
from envkit.sbom.debug import DebComponent, debug_sbom
from envkit.spec.load import LoadedSpec, image_dir

__all__ = ["DebugBuilder", "DebugResult", "debug_latest", "run_instructions"]


def debug_latest(name: str) -> str:
    return f"{image_repo(name)}:{DEBUG_VARIANT}"


def run_instructions(tag: str, gpu: bool) -> tuple[str, ...]:
    """How to start the debug image (SYS_PTRACE for py-spy and gdb; the key mounted, never baked)."""
    gpus = "--gpus all " if gpu else ""
    return (
        f"docker run --rm -it {gpus}--cap-add SYS_PTRACE -p 127.0.0.1:2222:2222 "
        f"-v ~/.ssh/id_ed25519.pub:/etc/envkit-debug/authorized_keys:ro {tag} envkit-sshd",
        "then: ssh -p 2222 -L 8888:127.0.0.1:8888 envkit@127.0.0.1 envkit-jupyter  (JupyterLab, tunnelled)",
        "in it: py-spy dump --pid PID; gdb -p PID -batch -ex py-bt (both need --cap-add SYS_PTRACE)",
    )


@dataclass(frozen=True)
class DebugResult:
    """A finished debug build: its tags, the runtime image it is FROM, the layer's size and pins."""

    name: str
    status: str  # "built" or "up-to-date"
    tag: str
    latest: str
    runtime_tag: str
    runtime_id: str
    image_id: str
    size: int
    layer_bytes: int  # size - the runtime image's size
    context_sha256: str
    lock: str  # "fresh", or "locked" when this build resolved images/NAME/debug.lock.json
    lock_path: str
    debs: int
    wheels: int
    seconds: float
    log_path: str | None
    notes: tuple[str, ...] = field(default_factory=tuple)
    run: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, object]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


class DebugBuilder:
    """Builds the runtime image through ``builder``, then the debug image FROM its ID."""

    def __init__(self, builder: Builder, resolver: PipResolver, *, run: _proc.Runner = _proc.run) -> None:
        self.builder = builder
        self.resolver = resolver
        self.run = run

    @property
    def engine(self) -> ContainerEngine:
        return self.builder.engine

    def build(
        self, loaded: LoadedSpec, options: BuildOptions | None = None, on_event: EventSink | None = None
    ) -> tuple[BuildResult, DebugResult]:
        options = options or BuildOptions()
        runtime = self.builder.build(loaded, options, on_event)
        start = time.monotonic()
        root, spec = self.builder.root, loaded.spec
        if on_event:
            from envkit.engine.protocol import BuildEvent

            on_event(BuildEvent(f"pinning the debug tools for {runtime.image_id[:19]}", step="debug-lock"))
        lock, status = self._lock(loaded, runtime)
        entries = fetch_debug_inputs(lock, self._apt(lock.suite), state_dir(root, "debug"), run=self.run)
        sbom = self._sbom(runtime, lock)
        epoch = source_date_epoch(lock.sha256)
        labels = {
            VARIANT_LABEL: DEBUG_VARIANT,
            RUNTIME_LABEL: runtime.image_id,
            LOCK_LABEL: lock.sha256,
            SBOM_LABEL: sbom_sha256(sbom),
        }
        inputs = DebugInputs(
            spec.name,
            runtime.image_id,
            tuple((d.name, d.version) for d in lock.debs),
            bool(lock.wheels),
            debug_user(runtime.user),
            labels,
            epoch,
        )
        header = (
            f"# generated by envkit {__version__}: the debug image of {spec.name} FROM {runtime.tag} "
            f"({runtime.image_id}); do not edit, regenerate with `envkit build {spec.name} --debug-image`\n"
        )
        files = debug_files(inputs, header)
        files |= {DEBUG_LOCK: lock.text().encode(), SBOM_NAME: sbom.encode()}
        if lock.wheels:
            files[DEBUG_REQUIREMENTS] = lock.requirements().encode()
        context = ContextFiles.build(files, entries)
        tag = f"{image_repo(spec.name)}:{context.digest[:12]}-{DEBUG_VARIANT}"
        existing = self.engine.inspect(tag)
        log_path: Path | None = None
        state = "up-to-date"
        if existing is None or options.nocache:
            log_path = state_dir(root, "logs") / f"{spec.name}-{context.digest[:12]}-debug.log"
            inherited = {k: v for k, v in runtime.labels.items() if k in (SPEC_LABEL, RUNTIME_LOCK_LABEL)}
            all_labels = {**inherited, **labels, NAME_LABEL: spec.name, CONTEXT_LABEL: context.digest}
            job = BuildJob(context, tag, all_labels, spec.name, nocache=options.nocache, existing=existing)
            with build_log(log_path, root, f"# envkit {__version__} debug build of {tag}\n") as log:
                stream_build(
                    self.engine, root, job, log, log_path, on_event
                )  # no network: every file is here
            state = "built"
        info = self.engine.inspect(tag)
        if info is None:
            raise BuildFailed(f"the engine reported success but {tag} does not exist", hint=f"see {log_path}")
        self.engine.tag(tag, debug_latest(spec.name))
        return runtime, DebugResult(
            name=spec.name,
            status=state,
            tag=tag,
            latest=debug_latest(spec.name),
            runtime_tag=runtime.tag,
            runtime_id=runtime.image_id,
            image_id=info.id,
            size=info.size,
            layer_bytes=max(0, info.size - runtime.size),
            context_sha256=context.digest,
            lock=status,
            lock_path=str(image_dir(root, spec.name) / DEBUG_LOCK),
            debs=len(lock.debs),
            wheels=len(lock.wheels),
            seconds=round(time.monotonic() - start, 3),
            log_path=str(log_path) if log_path else None,
            notes=lock.notes,
            run=run_instructions(tag, spec.is_gpu),
        )

    def _apt(self, suite: str) -> AptState:
        mirror = debian_mirror(suite)
        return AptState(
            state_dir(self.builder.root, "apt") / suite,
            suite,
            mirror=mirror,
            security=mirror.replace("/debian", "/debian-security"),
        )

    def _lock(self, loaded: LoadedSpec, runtime: BuildResult) -> tuple[DebugLock, str]:
        """images/NAME/debug.lock.json when it was resolved for this runtime image, else resolved now."""
        spec, root = loaded.spec, self.builder.root
        suite = image_release(self.engine, runtime.image_id)
        python = image_python(self.engine, runtime.image_id)
        platform = python_platform(loaded.resolved, "linux-64")
        request = DebugRequest(runtime.image_id, suite, python, platform, spec.is_gpu)
        path = image_dir(root, spec.name) / DEBUG_LOCK
        lock = read_debug_lock(path)
        if lock is not None and lock.request == request.key:
            return lock, "fresh"
        lock = resolve_debug_lock(
            self.engine, runtime.image_id, request, self._apt(suite), self.resolver, run=self.run
        )
        write_text_atomic(path, lock.text(), within=root)
        return lock, "locked"

    def _sbom(self, runtime: BuildResult, lock: DebugLock) -> str:
        """The runtime image's own SBOM (read from it, checked against its label) plus the debug layer."""
        try:
            text = carried_sbom(self.engine, runtime.image_id)
        except SbomNotCarried as e:
            raise BuildFailed(
                f"{runtime.tag} has no SBOM matching its {SBOM_LABEL} label at {SBOM_PATH} ({e.why})",
                hint=f"rebuild the runtime image: `envkit build {runtime.name} --no-cache`",
            ) from e
        debs = [DebComponent(d.name, d.version, d.arch, d.sha256) for d in lock.debs]
        return debug_sbom(
            text,
            runtime=ImageRef(runtime.tag, runtime.image_id),
            lock_sha256=lock.sha256,
            suite=lock.suite,
            debs=debs,
            wheels=lock.wheels,
            epoch=source_date_epoch(lock.sha256),
            prefix=f"{DEBUG_PREFIX}/tools",
        )
