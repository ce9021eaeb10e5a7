"""The adapter's own unit test: a MagicMock with the APIClient spec stands in for the daemon."""

from __future__ import annotations

import gc
import shutil
import socket
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from unittest.mock import MagicMock

import docker
import docker.errors
import pytest
import requests.exceptions

from envkit.engine.docker_api import DockerEngine, build_failure, translate_error
from envkit.errors import BuildFailed, ContainerCommandMissing, EngineError, EngineUnavailable


class Stream:
    """What ``APIClient.logs(stream=True)`` returns: an iterator of chunks with ``close()``."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self.chunks = iter(chunks)
        self.closed = False

    def __iter__(self) -> Iterator[bytes]:
        return self.chunks

    def close(self) -> None:
        self.closed = True


def _engine(**returns: object) -> tuple[DockerEngine, MagicMock]:
    api = MagicMock(spec=docker.APIClient)
    for name, value in returns.items():
        getattr(api, name).return_value = value
    return DockerEngine(api), api


def test_build_streams_steps_and_passes_options() -> None:
    engine, api = _engine(
        build=iter([{"stream": "Step 1/2 : FROM base\n"}, {"stream": " ---> abc\n"}, {"aux": {"ID": "x"}}])
    )
    events = list(engine.build(b"tar", "envkit/t:1", labels={"a": "b"}, nocache=True, network=False))
    assert [e.step for e in events] == ["1/2 FROM base", None]
    kwargs = api.build.call_args.kwargs
    assert kwargs["tag"] == "envkit/t:1" and kwargs["labels"] == {"a": "b"} and kwargs["nocache"] is True
    assert kwargs["network_mode"] == "none" and kwargs["custom_context"] is True and kwargs["pull"] is False


@pytest.mark.parametrize(
    ("error", "tail", "needle"),
    [
        ("pull access denied for nosuch/image, repository does not exist", ["Step 1/3 : FROM nosuch/image"],
         "nosuch/image is not present"),
        ("The command returned a non-zero code: 1", ["ERROR: No matching distribution found for six==99"],
         "no distribution for six==99"),
        ("write /x: no space left on device", [], "disk is full"),
        ("The command returned a non-zero code: 2", ["boom"], "a build step failed"),
    ],
)  # fmt: skip
def test_build_errors_are_classified(error: str, tail: list[str], needle: str) -> None:
    stream = [{"stream": line + "\n"} for line in tail] + [
        {"error": error, "errorDetail": {"message": error}}
    ]
    engine, _ = _engine(build=iter(stream))
    with pytest.raises(BuildFailed, match=needle) as info:
        list(engine.build(b"tar", "t:1", labels={}))
    assert info.value.hint
    assert list(info.value.log_tail) == tail


def test_connection_errors_mean_no_daemon() -> None:
    engine, api = _engine()
    api.inspect_image.side_effect = requests.exceptions.ConnectionError("Connection refused")
    with pytest.raises(EngineUnavailable, match="cannot reach") as info:
        engine.inspect("x")
    assert "DOCKER_HOST" in (info.value.hint or "")


def _refusing_socket(folder: Path) -> str:
    """A unix socket file nobody listens on (bound, then closed): a connect is refused."""
    path = folder / "refusing.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as bound:
        bound.bind(str(path))
    return f"unix://{path}"


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A folder with a short path: a unix socket's path holds at most 107 bytes (``sun_path``), which
    pytest's ``tmp_path`` under a long ``--basetemp`` exceeds."""
    with tempfile.TemporaryDirectory(prefix="ek-") as folder:
        yield Path(folder)


@pytest.mark.parametrize("where", ["missing", "missing folder", "refusing"])
@pytest.mark.filterwarnings("error::ResourceWarning")
def test_an_unreachable_unix_socket_is_said_and_no_socket_is_left_open(
    where: str, short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK's failed connect leaves its socket for the garbage collector (a ResourceWarning, an
    error here): a socket of our own tries first and is closed, and the error names the host."""
    if where == "refusing":
        host = _refusing_socket(short_dir)
    else:
        missing = {"missing": f"{short_dir}/docker.sock", "missing folder": "/nonexistent/docker.sock"}
        host = f"unix://{missing[where]}"
    monkeypatch.setenv("DOCKER_HOST", host)
    with pytest.raises(EngineUnavailable, match=f"cannot reach the Docker daemon at {host}") as info:
        DockerEngine()
    gc.collect()  # an unclosed socket would warn here
    assert "DOCKER_HOST" in (info.value.hint or "")


def _raised(error: BaseException, cause: BaseException) -> BaseException:
    """``error`` as docker raises it: ``raise error from cause`` (the chain carries the type)."""
    try:
        raise error from cause
    except BaseException as e:  # noqa: BLE001 - returned for inspection
        return e


def test_permission_denied_on_the_socket() -> None:
    cause = PermissionError(13, "Permission denied")
    error = _raised(docker.errors.DockerException(f"Error while fetching server API version: {cause}"), cause)
    translated = translate_error(error)
    assert isinstance(translated, EngineUnavailable)
    assert "docker group" in (translated.hint or "")


def test_disk_full_api_error() -> None:
    translated = translate_error(docker.errors.APIError("500 Server Error: no space left on device"))
    assert "disk is full" in translated.message and not isinstance(translated, EngineUnavailable)
    assert isinstance(translate_error(docker.errors.APIError("weird")), EngineError)


def test_inspect_missing_is_none_and_info_is_plain() -> None:
    engine, api = _engine()
    api.inspect_image.side_effect = docker.errors.ImageNotFound("nope")
    assert engine.inspect("missing") is None
    api.inspect_image.side_effect = None
    config = {"User": "10001:10001", "Labels": {"k": "v"}}
    tags = ["b:1", "a:1"]
    api.inspect_image.return_value = {"Id": "sha256:1", "RepoTags": tags, "Size": 5, "Config": config}
    info = engine.inspect("a:1")
    assert (
        info is not None
        and info.tags == ("a:1", "b:1")
        and info.user == "10001:10001"
        and info.labels == {"k": "v"}
    )


def test_run_removes_the_container_and_has_no_network_by_default() -> None:
    engine, api = _engine(create_container={"Id": "c1"}, wait={"StatusCode": 3}, create_host_config={})
    api.logs.side_effect = [Stream([b"o", b"ut"]), Stream([b"err"])]
    result = engine.run("img", ["python", "-V"])
    assert (result.exit_code, result.stdout, result.stderr) == (3, "out", "err")
    assert api.create_host_config.call_args.kwargs["network_mode"] == "none"
    api.remove_container.assert_called_once()


def test_tag_and_remove() -> None:
    engine, api = _engine()
    engine.tag("envkit/t:abc", "envkit/t:latest")
    api.tag.assert_called_once_with("envkit/t:abc", "envkit/t", "latest", force=True)
    api.remove_image.side_effect = docker.errors.NotFound("gone")
    engine.remove("envkit/t:abc")  # a missing image is not an error


def test_build_failure_without_a_known_cause_keeps_the_tail() -> None:
    failure = build_failure("exit 1", ("a", "b"))
    assert failure.log_tail == ("a", "b")


def test_prune_builder_images_filters_dangling_builder_stages_of_one_env() -> None:
    engine, api = _engine(prune_images={"ImagesDeleted": [{"Deleted": "sha256:a"}], "SpaceReclaimed": 1234})
    assert engine.prune_builder_images("tiny") == 1234
    filters = api.prune_images.call_args.kwargs["filters"]
    assert filters == {"dangling": True, "label": ["io.envkit.stage=builder", "io.envkit.builder-of=tiny"]}
    api.prune_images.side_effect = requests.exceptions.ConnectionError("Connection refused")
    with pytest.raises(EngineUnavailable):
        engine.prune_builder_images("tiny")


def _api_error(status: int, explanation: str, url: str = "containers/c1/start") -> docker.errors.APIError:
    """The real shape: docker's APIError over a requests Response with the engine's status code."""
    response = requests.models.Response()
    response.status_code = status
    response.reason = "Bad Request" if status < 500 else "Internal Server Error"
    response.url = f"http+docker://localhost/v1.41/{url}"
    http = requests.exceptions.HTTPError(f"{status} error", response=response)
    return docker.errors.APIError(http, response=response, explanation=explanation)


# recorded from Docker 20.10 (API 1.41) here: `start` of a container whose command does not exist
MISSING_ON_PATH = (
    "failed to create shim task: OCI runtime create failed: runc create failed: unable to start container "
    'process: exec: "python3": executable file not found in $PATH: unknown'
)
MISSING_PATH = (
    "failed to create shim task: OCI runtime create failed: runc create failed: unable to start container "
    'process: exec: "/opt/env/bin/python": stat /opt/env/bin/python: no such file or directory: unknown'
)


@pytest.mark.parametrize(
    ("status", "explanation", "command"),
    [
        (400, MISSING_ON_PATH, "python3"),
        (400, MISSING_PATH, "/opt/env/bin/python"),
        (500, MISSING_ON_PATH, "python3"),
    ],
)
def test_a_missing_container_command_is_not_a_missing_daemon(
    status: int, explanation: str, command: str
) -> None:
    engine, api = _engine(create_container={"Id": "c1"}, create_host_config={})
    api.start.side_effect = _api_error(status, explanation)
    with pytest.raises(ContainerCommandMissing) as info:
        engine.run("envkit/demo:latest", [command, "-V"])
    assert command in info.value.message and "does not exist in the image" in info.value.message
    assert "daemon" not in info.value.message and "DOCKER_HOST" not in (info.value.hint or "")
    api.remove_container.assert_called_once()  # the created container is still removed


@pytest.mark.parametrize(
    ("error", "kind", "needle"),
    [
        (_api_error(404, "No such container: c1"), EngineError, "not found"),
        (_api_error(409, "conflict: unable to remove repository reference"), EngineError, "conflict"),
        (_api_error(403, "denied: requested access to the resource is denied"), EngineError, "refused"),
        (_api_error(500, "write /var/lib/docker/tmp: no space left on device"), EngineError, "disk is full"),
        (_api_error(500, "something odd"), EngineError, "the engine failed (500)"),
        (
            _raised(requests.exceptions.ConnectionError("x"), FileNotFoundError(2, "No such file")),
            EngineUnavailable,
            "cannot reach",
        ),
        (requests.exceptions.ReadTimeout("read timed out"), EngineError, "did not answer in time"),
        (OSError(28, "No space left on device"), EngineError, "disk is full"),
    ],
)
def test_errors_are_mapped_by_type_and_status(
    error: BaseException, kind: type[EngineError], needle: str
) -> None:
    translated = translate_error(error, what="running x")
    assert type(translated) is kind and needle in translated.message, translated.message
    assert not isinstance(translated, EngineUnavailable) or kind is EngineUnavailable


def test_an_api_error_mentioning_a_missing_file_is_not_a_missing_daemon() -> None:
    """The old substring rule read any 'No such file or directory' as the daemon being down."""
    error = _api_error(500, "open /var/lib/docker/overlay2/abc/merged: no such file or directory")
    translated = translate_error(error, what="building x")
    assert not isinstance(translated, EngineUnavailable) and "the engine failed (500)" in translated.message


def test_free_bytes_of_a_local_engine_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    engine, api = _engine()
    api.info.return_value = {"DockerRootDir": str(tmp_path)}
    assert engine.free_bytes() == shutil.disk_usage(tmp_path).free
    api.info.return_value = {"DockerRootDir": str(tmp_path / "elsewhere")}  # not on this machine
    assert engine.free_bytes() is None
    monkeypatch.setenv("DOCKER_HOST", "tcp://10.0.0.1:2376")
    assert engine.free_bytes() is None


def test_prune_keeps_the_layer_stages_named() -> None:
    engine, api = _engine()
    api.images.return_value = [
        {"Id": "sha256:a", "Size": 5, "Labels": {"io.envkit.layer-stage": "cuda-aaaaaaaaaaaa"}},
        {"Id": "sha256:b", "Size": 7, "Labels": {"io.envkit.layer-stage": "python-bbbbbbbbbbbb"}},
        {"Id": "sha256:c", "Size": 11, "Labels": {}},
    ]
    assert engine.prune_builder_images("x", keep={"cuda-aaaaaaaaaaaa"}) == 18
    assert [c.args[0] for c in api.remove_image.call_args_list] == ["sha256:b", "sha256:c"]
    filters = api.images.call_args.kwargs["filters"]
    assert filters["dangling"] is True and "io.envkit.builder-of=x" in filters["label"]
