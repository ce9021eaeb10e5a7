"""The composition root's one image store factory and its one answer for an engine that moves no image
bytes: no store (the build is left as built), and each command that needs one says so (exit 3, no
traceback). The two factories it replaced answered differently (one raised ``TypeError``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.cli import Services, main
from envkit.engine.docker_store import DockerImageStore
from envkit.engine.testing import FakeEngine
from envkit.errors import EngineError, ExitCode
from envkit.lock.testing import FakeCondaSolver
from tests.unit.build.conftest import FakePip, PinResolver, write_spec

NO_STORE = "this engine cannot save, load, push or pull images"


def test_a_non_docker_engine_has_no_store_and_a_command_needing_one_is_told() -> None:
    services = Services(engine_factory=FakeEngine)
    assert services.store() is None
    assert services.builder(Path()).store is None  # left as built
    with pytest.raises(EngineError, match=f"{NO_STORE}: envkit verify needs that"):
        services.engine_and_store("envkit verify")


def test_the_docker_engine_has_the_docker_store() -> None:
    class Api:
        timeout = 60

    from envkit.engine.docker_api import DockerEngine

    services = Services(engine_factory=lambda: DockerEngine(Api()))
    engine, store = services.engine_and_store("envkit verify")
    assert isinstance(store, DockerImageStore) and isinstance(services.store(), DockerImageStore)
    assert engine is services.engine()


@pytest.mark.parametrize(
    ("argv", "needed_for"),
    [
        (["build", "tiny", "--offline", "--push", "127.0.0.1:5000"], "envkit build --push"),
        (["verify", "envkit/tiny:latest"], "envkit verify"),
    ],
)
def test_every_command_gives_the_one_answer(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    needed_for: str,
) -> None:
    write_spec(tmp_path)
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    engine = FakeEngine()
    services = Services(
        engine_factory=lambda: engine,
        solver_factory=lambda: (FakeCondaSolver(), PinResolver()),
        pip_runner=FakePip(),
    )
    assert main(["build", "tiny", "--offline"], services=services) == 0
    capsys.readouterr()
    assert main(argv, services=services) == ExitCode.FAILURE
    out, err = capsys.readouterr()
    assert f"{NO_STORE}: {needed_for} needs that" in out + err and "Traceback" not in out + err
