"""Issue 31: ``envkit build`` hands the engine its context as a file (written once under
``.envkit/tmp``, anonymous, gone after the build), never as the whole tar in memory; the bytes are
those of :func:`envkit.render.context.context_tar`."""

from __future__ import annotations

import errno
import hashlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import BinaryIO

import pytest

from envkit.build.builder import Builder, BuildOptions, context_file
from envkit.engine.protocol import BuildContext, BuildEvent
from envkit.engine.testing import FakeEngine, failing
from envkit.errors import BuildFailed, EnvkitError, ExitCode
from envkit.render.context import ContextFiles, context_tar, entry_from_file
from envkit.spec.load import LoadedSpec
from tests.unit.build.conftest import FakePip, fake_locker

OFFLINE = BuildOptions(offline=True)


class SpyEngine(FakeEngine):
    """A FakeEngine that also keeps the context object it was given and where it stood."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.given: list[tuple[BuildContext, int | None]] = []

    def build(
        self,
        context: BuildContext,
        tag: str,
        *,
        labels: Mapping[str, str],
        nocache: bool = False,
        network: bool = True,
    ) -> Iterator[BuildEvent]:
        self.given.append((context, None if isinstance(context, bytes) else context.tell()))
        return super().build(context, tag, labels=labels, nocache=nocache, network=network)


def _tmp_entries(root: Path) -> list[Path]:
    folder = root / ".envkit" / "tmp"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def test_the_engine_reads_a_file_holding_the_context_tar(
    root: Path, loaded: LoadedSpec, pip: FakePip
) -> None:
    engine = SpyEngine()
    builder = Builder(engine, root, locker=fake_locker(), pip_runner=pip)
    result = builder.build(loaded, OFFLINE)
    ((given, offset),) = engine.given
    assert not isinstance(given, bytes) and offset == 0  # a file, at its start
    assert given.closed  # closed (and so gone: it had no name) once the build is over
    expected = context_tar(builder.prepare(loaded, BuildOptions(offline=True, frozen=True)).context)
    (build,) = engine.builds
    assert build.context == expected  # the very bytes of context_tar
    assert build.context_sha256 == hashlib.sha256(expected).hexdigest() and build.context_size == len(
        expected
    )
    assert result.context_sha256 == builder.prepare(loaded, OFFLINE).digest
    assert _tmp_entries(root) == []


def test_a_failed_or_interrupted_build_leaves_no_context_file(
    root: Path, loaded: LoadedSpec, pip: FakePip
) -> None:
    failing_engine = SpyEngine(build_error=failing("boom"), fail_after_events=1)
    with pytest.raises(BuildFailed):
        Builder(failing_engine, root, locker=fake_locker(), pip_runner=pip).build(loaded, OFFLINE)
    interrupted = SpyEngine(interrupt_build=True)
    with pytest.raises(KeyboardInterrupt):
        Builder(interrupted, root, locker=fake_locker(), pip_runner=pip).build(loaded, OFFLINE)
    for engine in (failing_engine, interrupted):
        ((given, _),) = engine.given
        assert not isinstance(given, bytes) and given.closed
    assert _tmp_entries(root) == []


def test_a_tmp_that_is_a_file_fails_the_build_before_the_engine(
    root: Path, loaded: LoadedSpec, pip: FakePip
) -> None:
    (root / ".envkit").mkdir()
    (root / ".envkit" / "tmp").write_text("not a directory\n")
    engine = FakeEngine()
    with pytest.raises(BuildFailed, match="could not write the build context") as info:
        Builder(engine, root, locker=fake_locker(), pip_runner=pip).build(loaded, OFFLINE)
    assert info.value.exit_code == ExitCode.FAILURE and info.value.hint
    assert "full log:" in info.value.message
    assert engine.builds == [] and engine.images_by_tag == {}
    assert (root / ".envkit" / "tmp").read_text() == "not a directory\n"
    log = next((root / ".envkit" / "logs").glob("tiny-*.log")).read_text()
    assert "FAILED" in log


def test_a_tmp_link_leading_out_of_the_project_is_refused(
    root: Path, loaded: LoadedSpec, pip: FakePip, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside-tmp")
    (root / ".envkit").mkdir()
    (root / ".envkit" / "tmp").symlink_to(outside)
    engine = FakeEngine()
    with pytest.raises(EnvkitError, match="outside"):
        Builder(engine, root, locker=fake_locker(), pip_runner=pip).build(loaded, OFFLINE)
    assert engine.builds == [] and list(outside.iterdir()) == []


def _context(tmp_path: Path) -> tuple[ContextFiles, Path]:
    wheel = tmp_path / "w-1.0-py3-none-any.whl"
    wheel.write_bytes(b"w" * 5000)
    return ContextFiles.build({"Dockerfile": b"FROM a\n"}, [entry_from_file(wheel, "wheels/w.whl")]), wheel


def test_a_wheel_gone_since_the_plan_is_named(tmp_path: Path) -> None:
    context, wheel = _context(tmp_path)
    wheel.unlink()
    with pytest.raises(BuildFailed, match="No such file") as info, context_file(tmp_path, context):
        pass
    assert str(wheel) in info.value.message and ".envkit/wheelhouse" in (info.value.hint or "")
    assert _tmp_entries(tmp_path) == []


def test_a_wheel_shorter_than_planned_fails_and_leaves_nothing(tmp_path: Path) -> None:
    context, wheel = _context(tmp_path)
    wheel.write_bytes(b"w" * 10)  # truncated after its sha256 and size were taken
    with (
        pytest.raises(BuildFailed, match="could not write the build context"),
        context_file(tmp_path, context),
    ):
        pass
    assert _tmp_entries(tmp_path) == []


def test_a_full_disk_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ENOSPC from the OS (simulated: no test can fill the disk): the hint is about space."""

    def full(*_: object, **__: object) -> BinaryIO:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("tempfile.TemporaryFile", full)
    context, _ = _context(tmp_path)
    with pytest.raises(BuildFailed, match="No space left") as info, context_file(tmp_path, context):
        pass
    assert "free disk space" in (info.value.hint or "")


def test_the_file_given_is_the_context_tar_at_offset_0(tmp_path: Path) -> None:
    context, _ = _context(tmp_path)
    with context_file(tmp_path, context) as tar:
        assert tar.tell() == 0 and tar.read() == context_tar(context)
    assert tar.closed and _tmp_entries(tmp_path) == []
