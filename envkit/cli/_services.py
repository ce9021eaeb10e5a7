"""The CLI's composition root: the one place where every external system is built.

``main(argv, services=...)`` hands a :class:`Services` to click as the context object; commands
ask it for what they need (:func:`envkit.cli._app.services`). Each adapter is imported only when
a command asks for it, so ``envkit --help`` loads neither docker nor the solvers. Tests pass
fakes here (``Services(engine_factory=lambda: FakeEngine())``): no module is patched and no
test-only option is visible to users.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from envkit.errors import EngineError

if TYPE_CHECKING:
    from envkit._proc import ProcResult, Runner
    from envkit.audit.service import VulnService
    from envkit.build.builder import Builder
    from envkit.engine.protocol import ContainerEngine
    from envkit.engine.store import ImageStore
    from envkit.fleet.scheduler import Scheduler
    from envkit.lock.fresh import EnvLocker
    from envkit.lock.solver import CondaSolver, PipResolver
    from envkit.offline.fetch import Fetcher

__all__ = ["Services"]


def _docker_engine() -> ContainerEngine:
    from envkit.engine.docker_api import DockerEngine

    return DockerEngine()


def _docker_store(engine: ContainerEngine) -> ImageStore | None:
    """The Docker engine's :class:`~envkit.engine.store.ImageStore`; None for any other engine (it
    moves no image bytes: a build is left as built, and what needs the store says so)."""
    from envkit.engine.docker_api import DockerEngine
    from envkit.engine.docker_store import DockerImageStore

    return DockerImageStore(engine) if isinstance(engine, DockerEngine) else None


def _solvers() -> tuple[CondaSolver, PipResolver]:
    """py-rattler for the conda part, uv for the pip part."""
    from envkit.lock.conda import RattlerSolver
    from envkit.lock.pip import UvResolver

    return RattlerSolver(), UvResolver()


def _vuln_service(db: Path, online: bool) -> VulnService:
    if online:
        from envkit.audit.pip_audit_service import online_service

        return online_service("osv")
    from envkit.audit.index import default_index_dir
    from envkit.audit.osv_dir import OsvDirService

    return OsvDirService(db, index_dir=default_index_dir())


def _fetcher() -> Fetcher:
    from envkit.offline.fetch import UrlFetcher

    return UrlFetcher()


def _scheduler(name: str, address: str | None = None) -> Scheduler:
    if name == "ray":
        from envkit.fleet.ray_scheduler import RayScheduler

        return RayScheduler(address)
    if name == "local":
        from envkit.fleet.local import LocalScheduler

        return LocalScheduler()
    from envkit.fleet.slurm import SlurmScheduler

    return SlurmScheduler()


def _pip_run(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    check: bool = True,
    timeout: float | None = None,
    hint: str | None = None,
) -> ProcResult:
    """:func:`envkit._proc.run`, its parameters named (subprocess loads when a build runs pip, not for
    every command)."""
    from envkit import _proc

    return _proc.run(argv, env=env, cwd=cwd, check=check, timeout=timeout, hint=hint)


@dataclass
class Services:
    """Factories of the external systems; the engine is built once per command line."""

    engine_factory: Callable[[], ContainerEngine] = _docker_engine
    store_factory: Callable[[ContainerEngine], ImageStore | None] = _docker_store
    solver_factory: Callable[[], tuple[CondaSolver, PipResolver]] = _solvers
    vuln_factory: Callable[[Path, bool], VulnService] = _vuln_service
    fetcher_factory: Callable[[], Fetcher] = _fetcher
    scheduler_factory: Callable[[str, str | None], Scheduler] = _scheduler
    pip_runner: Runner = _pip_run  # `pip download` for wheelhouses
    _engine: ContainerEngine | None = field(default=None, init=False, repr=False)

    def engine(self) -> ContainerEngine:
        if self._engine is None:
            self._engine = self.engine_factory()
        return self._engine

    def store(self) -> ImageStore | None:
        """The image store of this command line's engine (None: the engine moves no image bytes)."""
        return self.store_factory(self.engine())

    def engine_and_store(self, needed_for: str) -> tuple[ContainerEngine, ImageStore]:
        """The engine and its image store, for ``needed_for`` (a command that moves image bytes)."""
        engine = self.engine()
        store = self.store_factory(engine)
        if store is None:
            raise EngineError(
                f"this engine cannot save, load, push or pull images: {needed_for} needs that",
                hint="use the Docker engine (DOCKER_HOST pointing at a Docker daemon)",
            )
        return engine, store

    def solvers(self) -> tuple[CondaSolver, PipResolver]:
        return self.solver_factory()

    def locker(self) -> EnvLocker:
        from envkit.lock.fresh import EnvLocker

        return EnvLocker(*self.solvers())

    def builder(self, root: Path) -> Builder:
        from envkit.build.builder import Builder

        return Builder(
            self.engine(),
            root,
            locker=self.locker(),
            fetcher=self.fetcher_factory(),
            pip_runner=self.pip_runner,
            store=self.store(),
        )

    def vuln_service(self, db: Path, online: bool) -> VulnService:
        return self.vuln_factory(db, online)

    def fetcher(self) -> Fetcher:
        return self.fetcher_factory()

    def scheduler(self, name: str, address: str | None = None) -> Scheduler:
        return self.scheduler_factory(name, address)
