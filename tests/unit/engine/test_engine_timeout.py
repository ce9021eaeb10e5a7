"""``$ENVKIT_ENGINE_TIMEOUT``: how long a call waits for a busy daemon; a bad value is a usage error."""

from __future__ import annotations

from unittest.mock import patch

import docker
import pytest

from envkit.engine.docker_api import DEFAULT_TIMEOUT_S, TIMEOUT_ENV, DockerEngine, engine_timeout
from envkit.errors import UsageError


@pytest.mark.parametrize(("raw", "seconds"), [("", DEFAULT_TIMEOUT_S), ("  ", 60), ("600", 600), (" 1 ", 1)])
def test_the_timeout_is_read_from_the_environment(raw: str, seconds: int) -> None:
    assert engine_timeout({TIMEOUT_ENV: raw}) == seconds
    assert engine_timeout({}) == DEFAULT_TIMEOUT_S


@pytest.mark.parametrize(
    "raw", ["0", "-5", "1e3", "60s", "2.5", "86401", "9" * 400, "６０", "60\x00", "\x1b[31m60", "none"]
)
def test_a_bad_value_names_the_variable_and_the_fix(raw: str) -> None:
    with pytest.raises(UsageError) as caught:
        engine_timeout({TIMEOUT_ENV: raw})
    assert TIMEOUT_ENV in caught.value.message
    assert "\x1b" not in caught.value.message and "\x00" not in caught.value.message
    assert len(caught.value.message) < 120
    assert caught.value.hint and "1 to 86400" in caught.value.hint


def test_the_engine_takes_it_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TIMEOUT_ENV, "321")
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:2375")  # not a socket file: no check before connecting
    with patch.object(docker, "APIClient") as client:
        DockerEngine()
        DockerEngine(timeout=5)
    assert [c.kwargs["timeout"] for c in client.call_args_list] == [321, 5]
