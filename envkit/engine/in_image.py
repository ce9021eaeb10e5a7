"""An image as the place a payload runs (:func:`envkit.payload.run`): one fresh container per launch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from envkit.engine.protocol import ContainerEngine, Mount
from envkit.payload import Ran

__all__ = ["InImage"]


@dataclass(frozen=True)
class InImage:
    """``image`` run through ``engine``: the payload's directories mounted read-only, the image's own
    interpreter (``python`` None: :data:`envkit.payload.FIND_PYTHON` finds it)."""

    engine: ContainerEngine
    image: str
    env: Mapping[str, str] | None = None
    gpus: bool = False
    network: bool = False
    timeout_s: float | None = None
    python: None = None

    def execute(self, argv: Sequence[str], mounts: Sequence[tuple[str, str]], cwd: str | None) -> Ran:
        if cwd is not None:  # pragma: no cover - envkit.payload.run changes directory in the shell line
            raise ValueError("a container starts in the image's directory: cd in the command")
        result = self.engine.run(
            self.image,
            argv,
            mounts=[Mount(host, target, read_only=True) for host, target in mounts],
            env=self.env,
            gpus=self.gpus,
            network=self.network,
            timeout_s=self.timeout_s,
        )
        return Ran(result.exit_code, result.stdout, result.stderr)
