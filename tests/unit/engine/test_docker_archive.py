"""The Docker archive adapter waits long enough for CUDA-sized images (issue 31).

A 6 GB image built here (torch 2.15 on its CUDA 13.2 wheels) lost its normalized build because
removing the original image took longer than the client's 60 s default on a busy disk. Saving,
loading and removing run with the long timeout; the client's own timeout is restored after.
"""

from __future__ import annotations

from typing import Any

import docker.errors
import pytest
import requests

from envkit.engine.docker_archive import DockerArchive
from envkit.errors import EngineError


class RecordingClient:
    """The part of ``docker.APIClient`` that ``remove`` uses, recording the timeout of each call."""

    def __init__(self, fail: Exception | None = None) -> None:
        self.timeout = 60
        self.seen: list[int] = []
        self.fail = fail

    def remove_image(self, image: str, noprune: bool = False) -> None:
        self.seen.append(self.timeout)
        if self.fail is not None:
            raise self.fail


def test_remove_waits_with_the_long_timeout_and_restores_the_client() -> None:
    client = RecordingClient()
    DockerArchive(client).remove("sha256:" + "0" * 64)
    assert client.seen and client.seen[0] >= 3600
    assert client.timeout == 60


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (requests.exceptions.ReadTimeout("read timed out"), "did not answer in time"),
        (docker.errors.APIError("conflict: image is being used by running container"), "removing"),
    ],
)
def test_a_failed_remove_is_an_engine_error_naming_the_image(error: Exception, expected: str) -> None:
    client: Any = RecordingClient(error)
    with pytest.raises(EngineError) as info:
        DockerArchive(client).remove("sha256:" + "1" * 64)
    assert expected in info.value.message and "sha256:1111" in info.value.message
    assert client.timeout == 60


def test_removing_a_missing_image_is_not_an_error() -> None:
    client = RecordingClient(docker.errors.NotFound("no such image"))
    DockerArchive(client).remove("sha256:" + "2" * 64)
    assert client.timeout == 60
