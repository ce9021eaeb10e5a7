"""The adapter's own unit test: a MagicMock with the APIClient spec stands in for the daemon."""

from __future__ import annotations

from unittest.mock import MagicMock

import docker
import docker.errors
import pytest
import requests.exceptions

from envkit.build.docker_api import DockerEngine, build_failure, translate_error
from envkit.errors import BuildFailed, EngineError, EngineUnavailable


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


def test_permission_denied_on_the_socket() -> None:
    cause = PermissionError(13, "Permission denied")
    error = docker.errors.DockerException(f"Error while fetching server API version: {cause}")
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
    api.logs.side_effect = [b"out", b"err"]
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
