"""``Builder(engine, root, locker=...).build(...)``: spec -> lock -> render -> context -> image.

The image is tagged ``envkit/NAME:<hash12>`` (the build context's digest) and
``envkit/NAME:latest``. When the image for that digest exists, nothing is
built ("up to date"). A failed or interrupted build leaves no tag behind; its
full log is in ``.envkit/logs/NAME-<hash12>.log``. The builder stage's image
(left untagged by the legacy builder) is removed after every build.

The image always installs from a fresh lock (``images/NAME/``, see
:mod:`envkit.lock.fresh`): a missing or stale lock is solved first, or refused
with ``--frozen``.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from envkit import __version__, _proc
from envkit._atomic import state_dir, write_text_atomic
from envkit.build.attest import write_build_provenance
from envkit.build.stream import BuildJob, EventSink, build_log, context_file, drop_tag, stream_build
from envkit.engine.protocol import LAYER_LABEL, BuildEvent, ContainerEngine, ImageInfo
from envkit.errors import BuildFailed, EngineError, UsageError
from envkit.lock import LockState
from envkit.lock.fresh import Locker, ensure_fresh_lock
from envkit.offline.collect import INSTALLER, PackProgress
from envkit.offline.fetch import Fetcher, UrlFetcher
from envkit.offline.packed import PackedContext, packed_context
from envkit.offline.request import pack_request
from envkit.offline.wheelhouse import Wheelhouse, WheelhouseRequest, fill_wheelhouse
from envkit.render import render_image
from envkit.render.context import ContextEntry, ContextFiles
from envkit.render.dockerfile import LOCK_LABEL, SPEC_LABEL, DockerfileInputs, LayerRecipe, top_copies
from envkit.render.layers import LayerGroup, reuse_stages
from envkit.sbom.cyclonedx import SBOM_LABEL, SBOM_NAME, ImageRef, check_sbom, sbom_sha256, spec_sbom
from envkit.spec.load import LoadedSpec, image_dir

if TYPE_CHECKING:
    from envkit.engine.store import ImageStore
    from envkit.reproduce.normalize import TopLayer

__all__ = [
    "CACHE_TAG",
    "BuildOptions",
    "BuildPlan",
    "BuildResult",
    "Builder",
    "context_file",
    "disk_needed",
    "image_repo",
    "rebuild_disk_needed",
    "sent_context",
]

WHEELS = "wheels"
CACHE_TAG = "build-cache"  # envkit/NAME:build-cache: the engine's original of the last build (its cache)
NAME_LABEL = "io.envkit.name"
CONTEXT_LABEL = "io.envkit.context-sha256"


def disk_needed(wheels: int, installed: int) -> int:
    """The engine's disk a build of ``wheels`` bytes of wheels installing to ``installed`` bytes needs at
    its peak (the host's spooled context counted too: ``.envkit`` is on that disk here).

    Building: the spooled context, the engine's copy of it and the layer stages' copies of their
    wheels (3 x wheels), the layer stages' installs and the runtime image's copies (2 x installed).
    Normalizing: the layer stages (kept as the next build's cache: wheels + installed), the built
    image, its saved archive and the load archive (3 x installed). The larger of the two.
    """
    return max(3 * wheels + 2 * installed, wheels + 4 * installed)


def rebuild_disk_needed(wheels: int, installed: int, image: int) -> int:
    """A rebuild whose unchanged groups come from kept stages: the changed groups' ``wheels`` and
    ``installed`` as in :func:`disk_needed`, and normalizing's save of the whole image (the engine's
    temporary copy and the host's archive: 2 x ``image``)."""
    return max(3 * wheels + 2 * installed, wheels + 2 * installed + 2 * image)


def image_repo(name: str) -> str:
    return f"envkit/{name}"


@dataclass(frozen=True)
class BuildOptions:
    """How ``envkit build`` builds: offline, frozen lock, no cache, local wheels, a pack."""

    offline: bool = False
    frozen: bool = False
    nocache: bool = False
    find_links: tuple[str, ...] = ()  # local wheel directories for the wheelhouse
    pack: Path | None = None  # a pack from `envkit pack` (implies offline; conda specs)
    tag: str | None = None  # build under this tag only, moving no other (envkit verify's rebuild)


@dataclass(frozen=True)
class BuildPlan:
    """Everything decided before the engine is called: the context and its digest, computed once."""

    name: str
    context: ContextFiles
    labels: dict[str, str]
    offline: bool
    lock: LockState
    wheelhouse: Wheelhouse | None
    warnings: tuple[str, ...] = ()
    relocked: bool = False  # this build solved the lock
    packed: PackedContext | None = None  # offline conda builds: the packed local channel
    sbom: str | None = None  # the lock's CycloneDX SBOM: in the context, the image and beside the lock
    only_tag: str | None = None  # BuildOptions.tag: the one tag this build sets (no :latest)
    request: WheelhouseRequest | None = None  # the wheelhouse the context needs (filled: `wheelhouse`)
    layers: tuple[LayerGroup, ...] = ()  # the image's package layers: wheels/<group>/ each
    key: str = field(init=False, compare=False)  # the image's name: see Builder.plan

    def __post_init__(self) -> None:
        key = self.context.digest
        if self.request is not None:  # the wheels are the request's: named before they are fetched
            ours = ContextFiles(tuple(e for e in self.context.entries if not e.path.startswith(f"{WHEELS}/")))
            key = hashlib.sha256(f"{ours.digest}\n{self.request.digest}\n".encode()).hexdigest()
        object.__setattr__(self, "key", key)

    @property
    def digest(self) -> str:
        return self.context.digest  # computed when the context was built

    @property
    def build_labels(self) -> dict[str, str]:
        """The labels the engine sets: :attr:`labels` and the context's digest (known once filled)."""
        return {**self.labels, CONTEXT_LABEL: self.digest}

    @property
    def tag(self) -> str:
        return self.only_tag or f"{image_repo(self.name)}:{self.key[:12]}"

    @property
    def latest(self) -> str:
        return f"{image_repo(self.name)}:latest"


@dataclass(frozen=True)
class BuildResult:
    """A finished build: tags, context digest, image id and size, the lock and offline inputs used."""

    name: str
    status: str  # "built" or "up-to-date"
    tag: str
    latest: str
    context_sha256: str
    image_id: str
    size: int
    user: str
    labels: dict[str, str]
    log_path: str | None
    offline: bool
    lock: str  # "fresh", or "locked" when this build solved it
    wheels: int
    seconds: float
    warnings: tuple[str, ...] = field(default_factory=tuple)
    pruned_bytes: int = 0  # the builder stage's untagged image(s), removed after the build
    pack: str | None = None  # offline conda builds: the pack file, or "collected" (gathered on the host)
    pack_files: int = 0
    provenance: str | None = None  # .envkit/provenance/NAME-<id12>.intoto.json (envkit.sbom.provenance)
    normalized: dict[str, object] | None = (
        None  # envkit.reproduce.normalize.NormalizeResult (reproducible layers)
    )
    key: str = ""  # BuildPlan.key: what the tag names (the context, its wheels by their request)
    context_bytes: int = 0  # the context sent to the engine (kept layer stages' wheels are not)

    def to_json(self) -> dict[str, object]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


def sent_context(plan: BuildPlan, cached: Mapping[str, str]) -> ContextFiles:
    """What the engine is sent: ``plan``'s context, where each group in ``cached`` (group -> a kept
    layer stage's image ID) starts its stage from that image and its wheels stay home. The plan's
    own context (its digest is the image's label and name) is unchanged: the image is the same."""
    if not cached:
        return plan.context
    dockerfile = next(e for e in plan.context.entries if e.path == "Dockerfile")
    text = reuse_stages((dockerfile.data or b"").decode("utf-8"), cached)
    skipped = tuple(f"{WHEELS}/{group}/" for group in cached)
    entries = [e for e in plan.context.entries if e.path != "Dockerfile" and not e.path.startswith(skipped)]
    return ContextFiles.build({"Dockerfile": text.encode("utf-8")}, entries)


class Builder:
    """``envkit build``: spec → fresh lock → render → offline inputs → context → the engine builds the
    image.
    """

    def __init__(
        self,
        engine: ContainerEngine,
        root: Path,
        *,
        locker: Locker,
        pip_runner: _proc.Runner = _proc.run,
        fetcher: Fetcher | None = None,
        store: ImageStore | None = None,
    ) -> None:
        self.engine = engine
        self.store = store  # save/load for normalizing the built image (None: left as built)
        self.root = root
        self.locker = locker
        self.pip_runner = pip_runner
        self.fetcher = fetcher if fetcher is not None else UrlFetcher()

    @property
    def log_dir(self) -> Path:
        return state_dir(self.root, "logs")

    # -- preparation (no engine calls) -------------------------------------------------------

    def prepare(
        self, loaded: LoadedSpec, options: BuildOptions, on_event: EventSink | None = None
    ) -> BuildPlan:
        """The whole plan: :meth:`plan` with its wheelhouse filled (:meth:`fill`)."""
        return self.fill(self.plan(loaded, options, on_event), on_event)

    def plan(self, loaded: LoadedSpec, options: BuildOptions, on_event: EventSink | None = None) -> BuildPlan:
        """Everything but the wheelhouse's files: enough to name the image (:attr:`BuildPlan.key`).

        A wheelhouse is a function of its request (the hashed lock, the Python, the platforms, the
        find-links): pip keeps only files whose sha256 the lock lists. So the tag is known before a
        single wheel is fetched or hashed, and an up-to-date image in a fresh clone costs no
        wheelhouse (a 2.4 GB one took 21 s to refill from pip's cache just to name the image).
        """
        spec = loaded.spec
        warnings: list[str] = []
        state_dir(self.root)  # .envkit (logs, caches) never leads out of the project

        def solving(stale: LockState) -> None:
            if on_event:
                on_event(BuildEvent(f"locking {spec.name} (the lock is {stale.status})", step="lock"))

        lock, was = ensure_fresh_lock(
            self.root, loaded, self.locker, frozen=options.frozen, verb="build", on_solve=solving
        )
        if was is not None:
            warnings.append(f"{spec.name}: the lock was {was.status}; locked it now (images/{spec.name}/)")
        offline = options.offline or spec.offline or options.pack is not None
        # the bytes the lock was verified from: never a second read of images/NAME/
        lock_files = lock.lock.install_files if lock.lock is not None else {}
        extra: list[ContextEntry] = []
        request = None
        packed = None
        if options.pack is not None and not spec.installer.uses_conda:
            raise UsageError(
                f"--pack is for conda environments; {spec.name} uses installer {spec.installer.value}",
                hint=f"build it with `envkit build {spec.name} --offline` (a wheelhouse)",
            )
        if offline and spec.installer.uses_conda:
            packed = self._packed(loaded, lock, options, on_event)
            extra = list(packed.entries)
        elif offline and lock.pip_lock:  # else there is no pip package to fetch
            request = WheelhouseRequest(
                lock_files[lock.pip_lock].decode("utf-8"), spec.python, spec.platforms, options.find_links
            )
        inputs = replace(
            DockerfileInputs.from_lock(
                loaded.sha256,
                lock,
                wheelhouse=WHEELS if request is not None or (packed and packed.has_wheels) else None,
                resolved=loaded.resolved,
            ),
            conda_pack=INSTALLER if packed is not None else None,
            offline=offline,
        )
        sbom = self._sbom(loaded, lock, inputs)
        if sbom is not None:
            inputs = replace(inputs, sbom=SBOM_NAME)
            lock_files = {**lock_files, SBOM_NAME: sbom.encode("utf-8")}
        rendered = render_image(loaded, inputs)
        context = ContextFiles.build({**rendered.files, **lock_files}, extra)
        build_labels = {  # the Dockerfile's LABELs carry spec/lock hashes, CUDA and frameworks
            NAME_LABEL: spec.name,
            SPEC_LABEL: loaded.sha256,
            "io.envkit.version": __version__,
            "io.envkit.offline": str(offline).lower(),
        }
        if inputs.lock_sha256:
            build_labels[LOCK_LABEL] = inputs.lock_sha256
        if sbom is not None:
            build_labels[SBOM_LABEL] = sbom_sha256(sbom)
        return BuildPlan(
            spec.name,
            context,
            build_labels,
            offline,
            lock,
            None,
            tuple(warnings),
            was is not None,
            packed,
            sbom,
            request=request,
            layers=inputs.layers,
        )

    def fill(self, plan: BuildPlan, on_event: EventSink | None = None) -> BuildPlan:
        """``plan`` with its wheelhouse filled (``pip download`` on the host, or the cache) and the
        wheels in its context; a plan without a wheelhouse request as it is."""
        if plan.request is None or plan.wheelhouse is not None:
            return plan
        if on_event:
            on_event(BuildEvent("filling the wheelhouse (pip download on the host)", step="wheelhouse"))
        wheelhouse = fill_wheelhouse(plan.request, state_dir(self.root, "wheelhouse"), runner=self.pip_runner)
        group = {name: g.name for g in plan.layers for name in g.packages}
        wheels = [
            replace(e, path=f"{WHEELS}/{group[w.name]}/{w.filename}") if w.name in group else e
            for w, e in zip(wheelhouse.wheels, wheelhouse.entries(WHEELS), strict=True)
        ]
        context = ContextFiles.build({}, [*plan.context.entries, *wheels])
        return replace(plan, context=context, wheelhouse=wheelhouse)

    def _sbom(self, loaded: LoadedSpec, lock: LockState, inputs: DockerfileInputs) -> str | None:
        """The lock's CycloneDX SBOM (:mod:`envkit.sbom.cyclonedx`), naming the base image by its ID."""
        base = loaded.resolved.runtime_ref
        found = self.engine.inspect(base)
        return spec_sbom(  # validated only when an image is built from it (check_sbom in build)
            loaded.spec,
            lock,
            ImageRef(base, found.id if found else None),
            inputs.source_date_epoch,
            validate=False,
        )

    def _packed(
        self, loaded: LoadedSpec, lock: LockState, options: BuildOptions, on_event: EventSink | None
    ) -> PackedContext:
        """The packed local channel: ``--pack FILE`` verified against the lock, or collected now."""
        request = pack_request(loaded, lock, image_dir(self.root, loaded.spec.name), options.find_links)
        step = (
            f"verifying the pack {options.pack}" if options.pack else "collecting the conda packages (host)"
        )
        if on_event:
            on_event(BuildEvent(step, step="pack"))

        def progress(p: PackProgress) -> None:
            if on_event:
                on_event(BuildEvent(f"[{p.done}/{p.total}] {p.item}"))

        return packed_context(
            request, state_dir(self.root, "cache"), self.fetcher, pack=options.pack,
            pip_runner=self.pip_runner, on_progress=progress,
        )  # fmt: skip

    # -- building ---------------------------------------------------------------------------

    def build(
        self, loaded: LoadedSpec, options: BuildOptions = BuildOptions(), on_event: EventSink | None = None
    ) -> BuildResult:
        start = time.monotonic()
        started = dt.datetime.now(dt.timezone.utc)
        prepared = self.plan(loaded, options, on_event)
        if options.tag is not None:
            prepared = replace(prepared, only_tag=options.tag)
        existing = self.engine.inspect(prepared.tag)
        if existing is not None and not options.nocache:
            if prepared.latest not in existing.tags and prepared.only_tag is None:
                self.engine.tag(prepared.tag, prepared.latest)
            return self._result(prepared, existing, "up-to-date", None, start)
        self._check_bases(loaded)
        if prepared.sbom is not None:
            check_sbom(prepared.name, prepared.sbom)
        prepared = self.fill(prepared, on_event)
        cached = {} if options.nocache else self._cached_stages(prepared, loaded.resolved.runtime_ref)
        self._check_disk(prepared, cached)
        log_path = self.log_dir / f"{prepared.name}-{prepared.key[:12]}.log"
        # --no-cache made new layer stages beside the cached ones: none is kept
        keep = frozenset() if options.nocache else frozenset(g.label for g in prepared.layers)
        job = BuildJob(
            sent_context(prepared, cached), prepared.tag, prepared.build_labels, prepared.name,
            nocache=options.nocache, network=not prepared.offline, existing=existing, keep=keep,
        )  # fmt: skip
        base = loaded.resolved.runtime_ref
        with build_log(log_path, self.root, f"# envkit {__version__} build of {prepared.tag}\n") as log:
            if cached:
                log.write(
                    f"# layer stages from the cache: {', '.join(f'{g} {i}' for g, i in cached.items())}\n"
                )
            try:
                pruned = stream_build(self.engine, self.root, job, log, log_path, on_event)
            except BuildFailed as e:
                if not any(image in e.message for image in cached.values()):
                    raise
                # a kept stage went away meanwhile (another build's pruning): the whole context
                log.write("# a kept layer stage is gone; building with every group's wheels\n")
                job = replace(job, context=prepared.context)
                pruned = stream_build(self.engine, self.root, job, log, log_path, on_event)
            tops = () if options.nocache else self._tops(prepared, loaded, base, keep, log, log_path)
            normalized = self._normalize(prepared, base, existing, log, options.nocache, tops)
        info = self.engine.inspect(prepared.tag)
        if info is None:
            raise BuildFailed(f"the engine reported success but {prepared.tag} does not exist",
                              hint=f"see the log: {log_path}")  # fmt: skip
        if prepared.only_tag is None:
            self.engine.tag(prepared.tag, prepared.latest)
        if prepared.sbom is not None:  # beside the lock it describes
            write_text_atomic(
                image_dir(self.root, prepared.name) / SBOM_NAME, prepared.sbom, within=self.root
            )
        base_info = self.engine.inspect(base)
        provenance = write_build_provenance(
            self.root, loaded, prepared, image_id=info.id, base=base,
            base_id=base_info.id if base_info else None, started=started, nocache=options.nocache,
        )  # fmt: skip
        result = self._result(prepared, info, "built", log_path, start)
        return replace(
            result,
            pruned_bytes=pruned,
            normalized=normalized,
            provenance=str(provenance),
            context_bytes=job.context.size,
        )

    def _check_bases(self, loaded: LoadedSpec) -> None:
        """Before any wheel is fetched: a base that only a command of envkit makes (it is in no
        registry, so the engine's pull fails late with "pull access denied") is named with it."""
        base = loaded.resolved.base_row
        if base is None or base.made_by is None or self.engine.inspect(base.ref) is not None:
            return
        raise BuildFailed(
            f"base image {base.ref} is not in the engine; it is made locally (no registry has it)",
            hint=f"make it once with `{base.made_by}` (debootstraps a minimal Debian with python3; needs "
            "root and debootstrap, a few minutes), or `docker load` it from a machine that has it",
        )

    def _check_disk(self, plan: BuildPlan, cached: Mapping[str, str]) -> None:
        """Before the engine starts: a build whose environment will not fit on the engine's disk says
        so, with the figures, instead of "no space left on device" half-way (issue 47: the flagship's
        first try failed so with 29 GB free)."""
        if plan.wheelhouse is None:
            return  # online: the sizes are the index's, not known here
        free = self.engine.free_bytes()
        if free is None:
            return
        wheels, installed = plan.wheelhouse.size, plan.wheelhouse.installed_size()
        needed = disk_needed(wheels, installed)
        if cached:  # the kept stages and the cached runtime steps exist: only the other groups are new
            group = {name: g.name for g in plan.layers for name in g.packages}
            fresh = replace(plan.wheelhouse, wheels=tuple(w for w in plan.wheelhouse.wheels
                                                          if group.get(w.name) not in cached))  # fmt: skip
            needed = rebuild_disk_needed(fresh.size, fresh.installed_size(), installed)
        if free >= needed:
            return
        raise BuildFailed(
            f"building {plan.tag} needs about {needed / 1e9:.1f} GB free on the engine's disk and "
            f"{free / 1e9:.1f} GB are free: {wheels / 1e9:.2f} GB of wheels install to "
            f"{installed / 1e9:.2f} GB",
            hint="free disk space: `envkit images` lists old envkit images to remove, `docker image prune` "
            "removes dangling ones; or build where the engine has more room",
        )

    def _normalize(
        self,
        prepared: BuildPlan,
        base: str,
        existing: ImageInfo | None,
        log: TextIO,
        nocache: bool = False,
        tops: Sequence[TopLayer] = (),
    ) -> dict[str, object] | None:
        """Rewrite the built image reproducibly (:mod:`envkit.reproduce.normalize`); no tag on failure."""
        if self.store is None:
            return None
        from envkit.reproduce.layer_memo import LayerMemo, memo_path
        from envkit.reproduce.normalize import normalize_image

        memo = LayerMemo(memo_path())
        # the engine's original stays (untagged) as the next build's cache: its runtime steps (the
        # groups' COPYs) are then reused, and so are their layers (the memo knows them); not with
        # --no-cache (a verify rebuild, a build that must not reuse)
        keep = not nocache
        try:
            try:
                done = normalize_image(
                    self.engine, self.store, prepared.tag, base, tag=prepared.tag, memo=memo,
                    present=self._chains(), keep_original=keep, tops=tops,
                )  # fmt: skip
            except EngineError as e:  # a chain that went away meanwhile: every layer in the archive
                log.write(f"# normalizing with the layer memo failed ({e.message}); again without it\n")
                done = normalize_image(self.engine, self.store, prepared.tag, base, tag=prepared.tag)
        except (EngineError, KeyboardInterrupt) as e:
            log.write(f"# normalizing failed: {getattr(e, 'message', e)}\n")
            drop_tag(self.engine, prepared.tag, existing)
            raise
        if keep and done.original_id != done.image_id:
            try:  # tagged: `docker image prune` (dangling images) leaves the cache alone
                self.engine.tag(done.original_id, f"{image_repo(prepared.name)}:{CACHE_TAG}")
            except EngineError as e:
                log.write(f"# could not tag the build cache: {e.message}\n")
            self._drop_originals(prepared.name, done.original_id, log)
        log.write(
            f"# normalized: {done.original_id} -> {done.image_id} ({done.seconds} s, {done.stages}; "
            f"{done.layers_reused} of {done.own_layers} layers known, {done.bytes_loaded:,} bytes loaded)\n"
        )
        return done.to_json()

    def _tops(
        self,
        plan: BuildPlan,
        loaded: LoadedSpec,
        base: str,
        keep: frozenset[str],
        log: TextIO,
        log_path: Path,
    ) -> list[TopLayer]:
        """The image's top layers, each made again alone from this build's kept layer stages
        (:func:`envkit.render.dockerfile.top_copies`): normalizing a rebuild then saves only those."""
        store = self.store
        if store is None:  # not normalized
            return []
        sbom = (SBOM_NAME, plan.sbom.encode("utf-8")) if plan.sbom is not None else None
        stages = self._cached_stages(plan, base) if plan.layers else {}
        recipes = top_copies(plan.layers, loaded.resolved.runtime.pypi_cuda, stages, sbom)
        return [functools.partial(self._save_top, store, plan.name, r, keep, log, log_path) for r in recipes]

    def _save_top(
        self,
        store: ImageStore,
        name: str,
        recipe: LayerRecipe,
        keep: frozenset[str],
        log: TextIO,
        log_path: Path,
        path: Path,
    ) -> None:
        """Build ``recipe`` (a one-layer image), save it to ``path``, remove it."""
        files = {"Dockerfile": recipe.dockerfile.encode("utf-8"), **dict(recipe.files)}
        context = ContextFiles.build(files)
        tag = f"{image_repo(name)}:layer-recipe-{context.digest[:12]}"
        try:
            stream_build(self.engine, self.root, BuildJob(context, tag, {}, name, keep=keep), log, log_path)
            store.save(tag, path)
        except BuildFailed as e:
            raise EngineError(f"a one-layer image of a top layer: {e.message}", hint=e.hint) from e
        finally:
            self.engine.remove(tag)

    def _drop_originals(self, name: str, current: str, log: TextIO) -> None:
        """Remove the engine-made originals of ``name``'s earlier builds (untagged, kept as this
        build's cache) and, with each, the steps of its chain this build did not reuse."""
        try:
            for info in self.engine.images(f"{NAME_LABEL}={name}"):
                if not info.tags and info.id != current:
                    self.engine.remove(info.id)
                    log.write(f"# removed the earlier build's original {info.id}\n")
        except EngineError as e:
            log.write(f"# could not remove an earlier build's original: {e.message}\n")

    def _chains(self) -> frozenset[str]:
        """The layer chain IDs of envkit's images in the engine (``docker load`` skips those layers)."""
        from envkit.reproduce.layer_memo import chain_ids

        try:
            images = self.engine.images(NAME_LABEL)
        except EngineError:
            return frozenset()
        return frozenset(c for info in images for c in chain_ids(info.diff_ids))

    def _cached_stages(self, plan: BuildPlan, base: str) -> dict[str, str]:
        """group -> the image ID of a layer stage the engine kept (the build cache) for the group's
        lock lines on this base: the build then starts that stage from it, sending none of its wheels
        (issue 47: every rebuild sent the whole wheelhouse, 2.4 GB for the flagship)."""
        found = self.engine.inspect(base)
        if found is None or not found.diff_ids:
            return {}
        cached: dict[str, str] = {}
        for group in plan.layers:
            if group.name == "venv":
                continue
            stages = [
                info.id
                for info in self.engine.images(f"{LAYER_LABEL}={group.label}")
                if info.diff_ids[: len(found.diff_ids)] == found.diff_ids
                and info.labels.get(LAYER_LABEL) == group.label
            ]
            if stages:
                cached[group.name] = min(stages)
        return cached

    def _result(
        self, prepared: BuildPlan, info: ImageInfo, status: str, log_path: Path | None, start: float
    ) -> BuildResult:
        return BuildResult(
            name=prepared.name,
            status=status,
            tag=prepared.tag,
            latest=prepared.latest,
            context_sha256=info.labels.get(CONTEXT_LABEL, prepared.digest),
            image_id=info.id,
            size=info.size,
            user=info.user,
            labels=dict(info.labels),
            log_path=str(log_path) if log_path else None,
            offline=prepared.offline,
            lock="locked" if prepared.relocked else prepared.lock.status,
            wheels=len(prepared.wheelhouse.wheels) if prepared.wheelhouse else 0,
            seconds=round(time.monotonic() - start, 3),
            warnings=prepared.warnings,
            pack=prepared.packed.source if prepared.packed else None,
            pack_files=prepared.packed.files if prepared.packed else 0,
            key=prepared.key,
        )
