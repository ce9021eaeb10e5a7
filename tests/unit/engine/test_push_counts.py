"""What a push sent: counted from the engine's push progress stream (issue 47: a second push after a
one-pin change must upload the changed layer only)."""

from __future__ import annotations

from typing import Any

from envkit.engine.docker_store import push_counts


def test_pushed_layers_and_their_bytes_are_counted_the_present_ones_are_not() -> None:
    stream: list[dict[str, Any]] = [
        {"status": "The push refers to repository [127.0.0.1:5000/envkit/x]"},
        {"status": "Preparing", "progressDetail": {}, "id": "aaa"},
        {"status": "Preparing", "progressDetail": {}, "id": "bbb"},
        {"status": "Preparing", "progressDetail": {}, "id": "ccc"},
        {"status": "Layer already exists", "progressDetail": {}, "id": "aaa"},
        {"status": "Pushing", "progressDetail": {"current": 512, "total": 2048}, "id": "bbb"},
        {"status": "Pushing", "progressDetail": {"current": 2048, "total": 2048}, "id": "bbb"},
        {"status": "Pushed", "progressDetail": {}, "id": "bbb"},
        {"status": "Mounted from envkit/y", "progressDetail": {}, "id": "ccc"},
        {"status": "1: digest: sha256:" + "d" * 64 + " size: 1234"},
        {"aux": {"Tag": "1", "Digest": "sha256:" + "d" * 64, "Size": 1234}},
    ]
    assert push_counts(stream) == (1, 2, 2048)  # ccc: mounted from another repository: present, not uploaded
    assert push_counts([]) == (0, 0, 0)
