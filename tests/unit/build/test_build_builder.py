from __future__ import annotations

import io
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from envkit.build.builder import Builder, BuildOptions
from envkit.build.fake import FakeEngine, failing
from envkit.build.locks import FileLocks, LockState
from envkit.catalog import load_catalog
from envkit.errors import BuildFailed, EngineUnavailable, ExitCode, Unsatisfiable, UsageError
from envkit.spec.load import LoadedSpec, load_spec

OFFLINE = BuildOptions(offline=True)


def _tar_names(context: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(context)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def test_offline_build_tags_labels_and_log(
    builder: Builder, engine: FakeEngine, loaded: LoadedSpec, root: Path
) -> None:
    events = []
    result = builder.build(loaded, OFFLINE, events.append)
    assert result.status == "built"
    assert result.tag == f"envkit/tiny:{result.context_sha256[:12]}"
    assert engine.inspect("envkit/tiny:latest") is not None
    (build,) = engine.builds
    assert build.network is False  # offline: the build steps get no network
    assert build.labels["io.envkit.name"] == "tiny"
    assert build.labels["io.envkit.context-sha256"] == result.context_sha256
    files = _tar_names(build.context)
    assert "wheels/six-1.16.0-py3-none-any.whl" in files
    dockerfile = files["Dockerfile"].decode()
    assert "--no-index --find-links /tmp/envkit/wheels" in dockerfile
    assert "--require-hashes" in dockerfile
    assert "six==1.16.0 --hash=sha256:" in files["wheelhouse.lock"].decode()
    assert result.log_path == str(root / ".envkit" / "logs" / f"tiny-{result.context_sha256[:12]}.log")
    assert "Step 2/2" in Path(result.log_path).read_text()
    assert events[0].step == "wheelhouse"


def test_rebuild_unchanged_is_skipped_without_pip_or_engine_build(
    builder: Builder, engine: FakeEngine, loaded: LoadedSpec, pip: Callable[..., object]
) -> None:
    first = builder.build(loaded, OFFLINE)
    calls = len(pip.calls)  # type: ignore[attr-defined]
    second = builder.build(loaded, OFFLINE)
    assert second.status == "up-to-date"
    assert second.tag == first.tag
    assert len(engine.builds) == 1
    assert len(pip.calls) == calls  # type: ignore[attr-defined]  # the wheelhouse came from the cache


def test_no_cache_rebuilds(builder: Builder, engine: FakeEngine, loaded: LoadedSpec) -> None:
    builder.build(loaded, OFFLINE)
    again = builder.build(loaded, BuildOptions(offline=True, nocache=True))
    assert again.status == "built"
    assert [b.nocache for b in engine.builds] == [False, True]


def test_changed_pin_gives_a_new_tag(builder: Builder, root: Path, spec_writer: Callable[..., Path]) -> None:
    first = builder.build(load_spec(root / "environments" / "tiny.yaml"), OFFLINE)
    spec_writer(root, ("six==1.17.0", "packaging==24.1"))
    second = builder.build(load_spec(root / "environments" / "tiny.yaml"), OFFLINE)
    assert second.status == "built"
    assert second.tag != first.tag


def test_missing_pin_fails_before_the_engine(
    builder: Builder, engine: FakeEngine, root: Path, spec_writer: Callable[..., Path]
) -> None:
    spec_writer(root, ("doesnotexist==1.0",))
    with pytest.raises(Unsatisfiable) as info:
        builder.build(load_spec(root / "environments" / "tiny.yaml"), OFFLINE)
    assert info.value.exit_code == ExitCode.USAGE
    assert "doesnotexist" in info.value.message
    assert engine.builds == []
    assert not list((root / ".envkit" / "wheelhouse").glob("[!.]*"))  # no half-filled cache entry


def test_failed_build_leaves_no_tag_and_points_at_the_log(
    root: Path, loaded: LoadedSpec, pip: object
) -> None:
    engine = FakeEngine(
        build_error=failing("RUN pip install exited 1", ("ERROR: boom",)), fail_after_events=1
    )
    builder = Builder(engine, load_catalog(), root, pip_runner=pip)  # type: ignore[arg-type]
    with pytest.raises(BuildFailed) as info:
        builder.build(loaded, OFFLINE)
    assert info.value.exit_code == ExitCode.FAILURE
    assert "full log:" in info.value.message
    assert info.value.log_tail == ("ERROR: boom",)
    assert engine.images_by_tag == {}
    log = next((root / ".envkit" / "logs").glob("tiny-*.log")).read_text()
    assert "Step 1/2" in log and "FAILED" in log


def test_interrupt_removes_a_tag_made_by_this_build(root: Path, loaded: LoadedSpec, pip: object) -> None:
    engine = FakeEngine(interrupt_build=True)
    builder = Builder(engine, load_catalog(), root, pip_runner=pip)  # type: ignore[arg-type]
    with pytest.raises(KeyboardInterrupt):
        builder.build(loaded, OFFLINE)
    assert engine.images_by_tag == {}
    assert len(engine.removed) == 1


def test_engine_unavailable_propagates(root: Path, loaded: LoadedSpec, pip: object) -> None:
    builder = Builder(FakeEngine(unavailable=True), load_catalog(), root, pip_runner=pip)  # type: ignore[arg-type]
    with pytest.raises(EngineUnavailable):
        builder.build(loaded, OFFLINE)


def test_online_build_uses_requirements_txt(builder: Builder, engine: FakeEngine, loaded: LoadedSpec) -> None:
    result = builder.build(loaded)
    files = _tar_names(engine.builds[0].context)
    assert "wheelhouse.lock" not in files
    assert "-r /tmp/envkit/requirements.txt" in files["Dockerfile"].decode()
    assert engine.builds[0].network is True
    assert result.offline is False and result.wheels == 0


def test_spec_offline_flag_counts(root: Path, spec_writer: Callable[..., Path], builder: Builder) -> None:
    spec_writer(root, ("six==1.16.0",), offline="true")
    assert builder.build(load_spec(root / "environments" / "tiny.yaml")).offline is True


def test_frozen_refuses_without_a_fresh_lock(builder: Builder, loaded: LoadedSpec) -> None:
    with pytest.raises(UsageError, match="--frozen"):
        builder.build(loaded, BuildOptions(frozen=True))


def _write_lock(root: Path, spec_sha: str) -> Path:
    path = root / "images" / "tiny" / "requirements.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"# GENERATED by envkit (spec sha256 {spec_sha}).\nsix==1.16.0 --hash=sha256:{'a' * 64}\n"
    )
    return path


def test_fresh_lock_is_used_and_frozen_accepts_it(
    builder: Builder, engine: FakeEngine, loaded: LoadedSpec, root: Path
) -> None:
    _write_lock(root, loaded.sha256)
    result = builder.build(loaded, BuildOptions(offline=True, frozen=True))
    assert result.lock == "fresh"
    files = _tar_names(engine.builds[0].context)
    assert "requirements.lock" in files and "wheelhouse.lock" not in files
    assert "-r /tmp/envkit/requirements.lock" in files["Dockerfile"].decode()
    assert "io.envkit.lock-sha256" in files["Dockerfile"].decode()


def test_stale_lock_warns_and_is_not_used(
    builder: Builder, engine: FakeEngine, loaded: LoadedSpec, root: Path
) -> None:
    _write_lock(root, "0" * 64)
    assert FileLocks(root).status(loaded).state is LockState.STALE
    result = builder.build(loaded)
    assert result.lock == "stale"
    assert any("stale" in w for w in result.warnings)
    assert "requirements.lock" not in _tar_names(engine.builds[0].context)
    with pytest.raises(UsageError, match="stale"):
        builder.build(loaded, BuildOptions(frozen=True))


def test_offline_conda_is_refused(root: Path, builder: Builder) -> None:
    (root / "environments" / "tiny.yaml").write_text(
        'name: tiny\npython: "3.11"\ncuda: cpu\ninstaller: micromamba\n'
    )
    with pytest.raises(UsageError, match="offline"):
        builder.build(load_spec(root / "environments" / "tiny.yaml"), OFFLINE)
