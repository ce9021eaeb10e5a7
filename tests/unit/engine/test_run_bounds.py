"""A container run is bounded: bytes read per stream and seconds waited (envkit.engine.run_bounds).

The adapter is driven through a MagicMock with the APIClient spec (its own unit test, as in
test_docker_api.py); the reader itself reads a real endless stream (``yes`` through a pipe).
tests/integration/test_engine_bounds.py runs the same against a real container.
"""

from __future__ import annotations

import itertools
import subprocess
import time
from collections.abc import Iterator
from typing import Any
from unittest.mock import MagicMock

import docker
import pytest
import requests.exceptions

from envkit.engine.docker_api import DockerEngine
from envkit.engine.run_bounds import (
    DEFAULT_RUN_TIMEOUT_S,
    RUN_TIMEOUT_ENV,
    read_output,
    run_timeout,
)
from envkit.errors import ContainerOutputTooLarge, ContainerTimedOut, EngineError, UsageError
from tests.unit.engine.test_docker_api import Stream


def test_the_reader_stops_an_endless_real_stream_at_the_limit() -> None:
    with subprocess.Popen(["yes", "envkit"], stdout=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        chunks = iter(lambda: proc.stdout.read(1 << 16), b"")  # type: ignore[union-attr]
        assert read_output(chunks, 1 << 20) is None  # more than 1 MiB: refused, the rest never read
        proc.kill()
    assert read_output(iter([b"a" * 10, b"b" * 10]), 20) == b"a" * 10 + b"b" * 10
    assert read_output(iter([b"a" * 10, b"b" * 11]), 20) is None
    assert read_output(iter([]), 0) == b""


@pytest.mark.parametrize(("raw", "seconds"), [("", DEFAULT_RUN_TIMEOUT_S), ("1", 1), (" 900 ", 900)])
def test_the_run_timeout_comes_from_the_environment(raw: str, seconds: int) -> None:
    assert run_timeout({RUN_TIMEOUT_ENV: raw}) == seconds


@pytest.mark.parametrize("raw", ["0", "-5", "1e3", "ten", "99999999", "3\n600", "١٢"])
def test_a_run_timeout_that_is_not_seconds_is_a_usage_error(raw: str) -> None:
    with pytest.raises(UsageError, match=rf"\${RUN_TIMEOUT_ENV} is .*not a number of seconds") as e:
        run_timeout({RUN_TIMEOUT_ENV: raw})
    assert "\n" not in e.value.message


def _engine(max_output: int = 1 << 20) -> tuple[DockerEngine, MagicMock]:
    api = MagicMock(spec=docker.APIClient)
    api.create_container.return_value = {"Id": "c1"}
    api.create_host_config.return_value = {}
    api.wait.return_value = {"StatusCode": 0}
    return DockerEngine(api, max_output=max_output), api


def _endless() -> Iterator[bytes]:
    return itertools.repeat(b"x" * 65536)


@pytest.mark.parametrize("flooded", ["stdout", "stderr"])
def test_a_flood_of_output_is_an_error_and_the_rest_is_never_read(flooded: str) -> None:
    engine, api = _engine()
    streams = {"stdout": Stream([b"ok"]), "stderr": Stream([b""])}
    streams[flooded] = Stream(_endless())
    api.logs.side_effect = lambda c, stdout, stderr, **kw: streams["stdout" if stdout else "stderr"]
    with pytest.raises(ContainerOutputTooLarge, match=rf"wrote more than 1048576 bytes to {flooded}") as e:
        engine.run("someone/else:latest", ["python3", "-c", "print(1)"])
    assert "someone/else:latest" in e.value.message and "python3 -c print(1)" in e.value.message
    assert streams[flooded].closed
    api.remove_container.assert_called_once_with({"Id": "c1"}, force=True)


def test_a_command_past_the_deadline_is_stopped_and_removed() -> None:
    engine, api = _engine()

    def wait(container: Any, timeout: float) -> Any:
        time.sleep(timeout)
        raise requests.exceptions.ReadTimeout("UnixHTTPConnectionPool: Read timed out.")

    api.wait.side_effect = wait
    with pytest.raises(ContainerTimedOut, match=r"did not finish within 0\.2 s") as e:
        engine.run("img", ["sleep", "infinity"], timeout_s=0.2)
    assert RUN_TIMEOUT_ENV in (e.value.hint or "")
    api.logs.assert_not_called()
    api.remove_container.assert_called_once_with({"Id": "c1"}, force=True)


def test_the_default_deadline_is_a_few_minutes_not_hours(monkeypatch: pytest.MonkeyPatch) -> None:
    engine, api = _engine()
    api.logs.side_effect = [Stream([b"a"]), Stream([b""])]
    monkeypatch.delenv(RUN_TIMEOUT_ENV, raising=False)
    engine.run("img", ["true"])
    assert api.wait.call_args.kwargs["timeout"] == DEFAULT_RUN_TIMEOUT_S == 300
    monkeypatch.setenv(RUN_TIMEOUT_ENV, "42")
    api.logs.side_effect = [Stream([b"a"]), Stream([b""])]
    engine.run("img", ["true"])
    assert api.wait.call_args.kwargs["timeout"] == 42


def test_a_daemon_that_drops_the_connection_early_is_not_called_a_timeout() -> None:
    engine, api = _engine()
    api.wait.side_effect = requests.exceptions.ConnectionError("Connection aborted.")
    with pytest.raises(EngineError) as e:
        engine.run("img", ["true"], timeout_s=60)
    assert not isinstance(e.value, ContainerTimedOut)
