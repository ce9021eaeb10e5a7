"""Issue 31: the engine seam's build takes the context as bytes or as a binary file. The Docker
adapter hands a file to the SDK as the request body itself (no copy in memory); the fake engine
reads either in chunks and records the same thing for the same tar."""

from __future__ import annotations

import hashlib
import io
import tempfile
from unittest.mock import MagicMock

import docker

from envkit.engine.docker_api import DockerEngine
from envkit.engine.testing import FakeEngine

TAR = bytes(range(256)) * 9000  # 2.2 MiB: more than one of the fake engine's chunks


def _docker() -> tuple[DockerEngine, MagicMock]:
    api = MagicMock(spec=docker.APIClient)
    api.build.return_value = iter([{"stream": "Step 1/1 : FROM base\n"}])
    return DockerEngine(api), api


def test_docker_sends_the_file_itself_as_the_body() -> None:
    engine, api = _docker()
    with tempfile.TemporaryFile() as fh:
        fh.write(TAR)
        fh.seek(0)
        list(engine.build(fh, "envkit/t:1", labels={}))
        kwargs = api.build.call_args.kwargs
        assert kwargs["fileobj"] is fh and kwargs["custom_context"] is True
        assert fh.tell() == 0  # the adapter read nothing itself: the SDK streams it


def test_docker_wraps_bytes_as_before() -> None:
    engine, api = _docker()
    list(engine.build(TAR, "envkit/t:1", labels={}))
    body = api.build.call_args.kwargs["fileobj"]
    assert isinstance(body, io.BytesIO) and body.getvalue() == TAR


def test_the_fake_engine_records_a_file_as_it_records_bytes() -> None:
    from_bytes, from_file, lean = FakeEngine(), FakeEngine(), FakeEngine(keep_contexts=False)
    list(from_bytes.build(TAR, "envkit/t:1", labels={}))
    for engine in (from_file, lean):
        with tempfile.TemporaryFile() as fh:
            fh.write(TAR)
            fh.seek(0)
            list(engine.build(fh, "envkit/t:1", labels={}))
    (a,), (b,), (c,) = from_bytes.builds, from_file.builds, lean.builds
    assert a == b and a.context == TAR
    assert c.context == b"" and (c.context_sha256, c.context_size) == (a.context_sha256, a.context_size)
    assert a.context_sha256 == hashlib.sha256(TAR).hexdigest() and a.context_size == len(TAR)
    ids = {e.images_by_tag["envkit/t:1"].id for e in (from_bytes, from_file, lean)}
    assert ids == {"sha256:" + hashlib.sha256(TAR + b"envkit/t:1").hexdigest()}  # as before the change
    assert (
        set(from_bytes.dangling)
        == set(lean.dangling)
        == {"sha256:" + hashlib.sha256(b"builder" + TAR).hexdigest()}
    )


def test_a_file_is_read_from_where_it_stands() -> None:
    engine = FakeEngine()
    with tempfile.TemporaryFile() as fh:
        fh.write(b"skipped" + TAR)
        fh.seek(len(b"skipped"))
        list(engine.build(fh, "envkit/t:1", labels={}))
    assert engine.builds[0].context == TAR


def test_an_empty_context_is_read_as_empty() -> None:
    engine = FakeEngine()
    with tempfile.TemporaryFile() as fh:
        list(engine.build(fh, "envkit/t:1", labels={}))
    assert engine.builds[0].context == b"" and engine.builds[0].context_size == 0
