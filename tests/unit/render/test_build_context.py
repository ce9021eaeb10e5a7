from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from envkit.render.context import ContextFiles, context_tar, entry_from_file


def test_tar_is_byte_stable_and_sorted(tmp_path: Path) -> None:
    wheel = tmp_path / "a-1.0-py3-none-any.whl"
    wheel.write_bytes(b"wheel")
    one = ContextFiles.build({"b.txt": b"2", "a.txt": b"1"}, [entry_from_file(wheel, "wheels/a.whl")])
    two = ContextFiles.build({"a.txt": b"1", "b.txt": b"2"}, [entry_from_file(wheel, "wheels/a.whl")])
    assert context_tar(one) == context_tar(two)
    assert one.digest == two.digest
    with tarfile.open(fileobj=io.BytesIO(context_tar(one))) as tar:
        members = tar.getmembers()
        assert [m.name for m in members] == ["wheels", "a.txt", "b.txt", "wheels/a.whl"]
        assert {(m.mtime, m.uid, m.gid, m.uname, m.gname) for m in members} == {(0, 0, 0, "", "")}
        assert {m.mode for m in members if m.isfile()} == {0o644}
        assert tar.extractfile("wheels/a.whl").read() == b"wheel"  # type: ignore[union-attr]


def test_digest_follows_content() -> None:
    base = ContextFiles.build({"Dockerfile": b"FROM a\n"})
    assert base.digest != ContextFiles.build({"Dockerfile": b"FROM b\n"}).digest
    assert base.digest != ContextFiles.build({"Dockerfile2": b"FROM a\n"}).digest
    assert len(base.digest) == 64


@pytest.mark.parametrize("name", ["../x", "/etc/passwd", "a/../../b"])
def test_paths_cannot_escape(name: str) -> None:
    with pytest.raises(ValueError, match="escapes"):
        ContextFiles.build({name: b"x"})


def test_the_streamed_tar_is_the_same_bytes_with_a_file_read_in_chunks(tmp_path: Path) -> None:
    """write_context_tar: the bytes of context_tar, written to a file (a wheel larger than a chunk)."""
    import hashlib

    from envkit.render.context import write_context_tar

    wheel = tmp_path / "big-1.0-py3-none-any.whl"
    wheel.write_bytes(bytes(range(256)) * (3 * 4096 + 7))  # 3 MiB + 1,792 bytes: several chunks
    context = ContextFiles.build(
        {"Dockerfile": b"FROM a\n", "images/x/requirements.lock": b"six==1\n"},
        [entry_from_file(wheel, "wheels/big.whl"), entry_from_file(wheel, "wheels/sub/same.whl")],
    )
    out = tmp_path / "context.tar"
    with out.open("wb") as fh:
        written = write_context_tar(context, fh)
    data = out.read_bytes()
    assert data == context_tar(context) and written == len(data)
    assert hashlib.sha256(data).hexdigest() == hashlib.sha256(context_tar(context)).hexdigest()
    with out.open("ab") as fh, pytest.raises(ValueError, match="offset 0"):
        write_context_tar(context, fh)  # appending would pad differently: refused
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        assert tar.extractfile("wheels/sub/same.whl").read() == wheel.read_bytes()  # type: ignore[union-attr]


def test_the_spooled_tar_is_an_anonymous_file_at_its_start(tmp_path: Path) -> None:
    """spooled_context_tar: context_tar's bytes in a file with no name in its directory, gone after."""
    from envkit.render.context import spooled_context_tar

    wheel = tmp_path / "src" / "w-1.0-py3-none-any.whl"
    wheel.parent.mkdir()
    wheel.write_bytes(b"w" * 70_000)
    context = ContextFiles.build({"Dockerfile": b"FROM a\n"}, [entry_from_file(wheel, "wheels/w.whl")])
    spool = tmp_path / "spool"
    spool.mkdir()
    with spooled_context_tar(context, spool) as fh:
        assert fh.tell() == 0 and list(spool.iterdir()) == []
        assert fh.read() == context_tar(context)
    assert fh.closed and list(spool.iterdir()) == []
    wheel.unlink()  # a source gone: the OSError comes out, and no file is left behind
    with pytest.raises(OSError), spooled_context_tar(context, spool):
        pass
    assert list(spool.iterdir()) == []
