"""``DockerImageStore.describe``: an image's config from the engine's inspect and history, without saving
it (issue 47). The history API does not say which steps made a layer; the reading of the classic
builder's steps is checked here on the shapes Docker 20.10 gives (the real equality with a saved
config is ``tests/integration/test_image_layers.py``: the assembled image is the saved one's)."""

from __future__ import annotations

from typing import Any
from unittest.mock import MagicMock

import docker
import pytest

from envkit.engine.docker_api import DockerEngine
from envkit.engine.docker_store import DockerImageStore

LAYER = "sha256:" + "1" * 64
NOP = "/bin/bash -o pipefail -c #(nop) "


def _store(steps: list[tuple[str, int]], layers: int) -> DockerImageStore:
    api = MagicMock(spec=docker.APIClient)
    api.inspect_image.return_value = {
        "Architecture": "amd64",
        "Os": "linux",
        "Config": {"User": "10001:10001", "Env": ["PATH=/opt/env/bin"]},
        "RootFS": {"Type": "layers", "Layers": [LAYER] * layers},
    }
    api.history.return_value = [{"CreatedBy": by, "Size": size} for by, size in reversed(steps)]
    return DockerImageStore(DockerEngine(api))


def _empty(described: dict[str, Any] | None) -> list[bool]:
    assert described is not None
    return [h["empty_layer"] for h in described["history"]]


BASE = ("", 289_724_626)  # "Imported from -": no step text, bytes


def test_nop_steps_make_no_layer_but_copies_do() -> None:
    steps = [
        BASE,
        (NOP + " ARG X=1", 0),
        ("|1 X=1 /bin/bash -c useradd envkit", 8915),
        (NOP + "COPY dir:ab in /opt/env/ ", 4_836_393),
        (NOP + " LABEL a=b", 0),
        (NOP + "WORKDIR /home", 0),
    ]
    described = _store(steps, 3).describe("img")
    assert _empty(described) == [False, True, False, False, True, True]
    assert described is not None and described["config"]["User"] == "10001:10001"
    assert described["rootfs"] == {"type": "layers", "diff_ids": [LAYER] * 3}
    assert "variant" not in described and described["os"] == "linux"


@pytest.mark.parametrize(("layers", "empty"), [(3, True), (4, False)])
def test_a_run_of_no_bytes_is_told_by_the_layer_count(layers: int, empty: bool) -> None:
    """A ``RUN`` that changed nothing makes no layer (the flagship's libgomp check); one that made only
    directories makes a layer of 0 bytes: the layer count tells which."""
    steps = [BASE, ("/bin/bash -c useradd envkit", 8915), ("/bin/bash -c ldconfig -p | grep -q libgomp", 0),
             (NOP + "COPY file:ab in /opt/env/share/envkit/sbom.cdx.json ", 25_591)]  # fmt: skip
    assert _empty(_store(steps, layers).describe("img")) == [False, False, empty, False]


@pytest.mark.parametrize("layers", [1, 3, 5])
def test_a_history_that_does_not_add_up_is_not_described(layers: int) -> None:
    """Two 0-byte ``RUN``s: either both made a layer (4) or neither did (2); one of each is a doubt, and
    too few or too many layers for the steps is another builder's history: None, and normalizing
    saves the image whole."""
    steps = [BASE, ("/bin/bash -c a", 0), ("/bin/bash -c b", 0), (NOP + "COPY dir:ab in /x ", 10)]
    assert _store(steps, layers).describe("img") is None
    assert _empty(_store(steps, 2).describe("img")) == [False, True, True, False]
    assert _empty(_store(steps, 4).describe("img")) == [False, False, False, False]


def test_a_missing_image_is_not_described() -> None:
    api = MagicMock(spec=docker.APIClient)
    api.inspect_image.side_effect = docker.errors.ImageNotFound("no such image")
    assert DockerImageStore(DockerEngine(api)).describe("gone") is None
