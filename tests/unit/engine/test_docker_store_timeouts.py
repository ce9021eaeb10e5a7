"""The Docker image store (``DockerImageStore``) and the engine's ``remove`` wait long enough for CUDA-sized
images (issue 31).

A 6 GB image built here (torch 2.15 on its CUDA 13.2 wheels) lost its normalized build because
removing the original image took longer than the client's 60 s default on a busy disk. Saving,
loading and removing run with the long timeout; the client's own timeout is restored after.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import docker.errors
import pytest
import requests

from envkit.engine.docker_api import DockerEngine
from envkit.engine.docker_store import DockerImageStore
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


def _store(client: Any) -> DockerImageStore:
    return DockerImageStore(DockerEngine(client))


def test_remove_waits_with_the_long_timeout_and_restores_the_client() -> None:
    client = RecordingClient()
    DockerEngine(client).remove("sha256:" + "0" * 64)
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
        DockerEngine(client).remove("sha256:" + "1" * 64)
    assert expected in info.value.message and "sha256:1111" in info.value.message
    assert client.timeout == 60


def test_removing_a_missing_image_is_not_an_error() -> None:
    client = RecordingClient(docker.errors.NotFound("no such image"))
    DockerEngine(client).remove("sha256:" + "2" * 64)
    assert client.timeout == 60


class ArchiveClient:
    """The ``docker.APIClient`` calls of save, load and inspect, recording the timeout of each."""

    def __init__(self, loaded: list[dict[str, Any]] | None = None) -> None:
        self.timeout = 60
        self.seen: dict[str, int] = {}
        self.loaded = loaded or [{"stream": "Loaded image ID: sha256:" + "a" * 64 + "\n"}]

    def get_image(self, image: str, chunk_size: int) -> Iterator[bytes]:
        self.seen["save"] = self.timeout
        yield b"saved "
        yield image.encode()

    def load_image(self, data: BinaryIO) -> Iterator[dict[str, Any]]:
        self.seen["load"] = self.timeout
        assert data.read() == b"tar"
        yield from self.loaded

    def inspect_image(self, image: str) -> dict[str, Any]:
        if image == "missing":
            raise docker.errors.ImageNotFound("no such image")
        layers = ["sha256:" + "1" * 64, "sha256:" + "2" * 64]
        return {"Id": "sha256:" + "b" * 64, "RepoTags": ["z:1", "a:1"], "Size": 7,
                "Config": {"Labels": {"k": "v"}, "User": "envkit"}, "RootFS": {"Layers": layers}}  # fmt: skip

    def history(self, image: str) -> list[dict[str, Any]]:
        return [{}, {}, {}]


def test_save_and_load_wait_with_the_long_timeout(tmp_path: Path) -> None:
    client = ArchiveClient()
    store = _store(client)
    store.save("sha256:9", tmp_path / "x.tar")
    (tmp_path / "in.tar").write_bytes(b"tar")
    assert store.load(tmp_path / "in.tar") == ("sha256:" + "a" * 64,)
    with (tmp_path / "in.tar").open("rb") as checked:  # an open file: loaded from where it stands
        assert store.load(checked) == ("sha256:" + "a" * 64,)
    assert (tmp_path / "x.tar").read_bytes() == b"saved sha256:9"
    assert client.seen["save"] >= 3600 and client.seen["load"] >= 3600
    assert client.timeout == 60


@pytest.mark.parametrize(
    "chunk",
    [
        {"error": "write /var/lib/docker/tmp: no space left on device"},
        {"error": "x", "errorDetail": {"message": "write /var/lib/docker/tmp: no space left on device"}},
    ],
)
def test_a_load_error_in_the_stream_names_the_file_and_hints_at_the_disk(
    tmp_path: Path, chunk: dict[str, Any]
) -> None:
    client = ArchiveClient([{"stream": "Loading layer"}, chunk])
    (tmp_path / "in.tar").write_bytes(b"tar")
    with pytest.raises(EngineError) as info:
        _store(client).load(tmp_path / "in.tar")
    assert "in.tar" in info.value.message and "no space left on device" in info.value.message
    assert "docker info" in (info.value.hint or "")
    assert client.timeout == 60


def test_inspect_with_history_counts_it() -> None:
    facts = DockerEngine(ArchiveClient()).inspect("z:1", history=True)
    assert facts is not None
    assert facts.id == "sha256:" + "b" * 64 and facts.tags == ("a:1", "z:1")
    assert facts.diff_ids == ("sha256:" + "1" * 64, "sha256:" + "2" * 64) and facts.history == 3
    assert dict(facts.labels) == {"k": "v"} and facts.user == "envkit" and facts.size == 7
    inspected = DockerEngine(ArchiveClient()).inspect("z:1")
    assert inspected is not None and inspected.diff_ids == facts.diff_ids and inspected.history is None
    assert DockerEngine(ArchiveClient()).inspect("missing", history=True) is None
