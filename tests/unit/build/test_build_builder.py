from __future__ import annotations

import io
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from envkit.build.builder import Builder, BuildOptions
from envkit.engine.protocol import BuildEvent, ImageInfo
from envkit.engine.testing import FakeEngine, failing
from envkit.errors import BuildFailed, EngineUnavailable, ExitCode, SolverFailed, Unsatisfiable, UsageError
from envkit.lock import PipPackage, PipRequest
from envkit.lock.fresh import lock_state
from envkit.spec.load import LoadedSpec, load_spec
from tests.unit.build.conftest import FakePip, PinResolver, fake_locker

OFFLINE = BuildOptions(offline=True)


def _tar_names(context: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(context)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def test_offline_build_tags_labels_and_log(
    builder: Builder, engine: FakeEngine, loaded: LoadedSpec, root: Path
) -> None:
    events: list[BuildEvent] = []
    result = builder.build(loaded, OFFLINE, events.append)
    assert result.status == "built"
    assert result.tag == f"envkit/tiny:{result.key[:12]}"
    assert engine.inspect("envkit/tiny:latest") is not None
    (build,) = engine.builds
    assert build.network is False  # offline: the build steps get no network
    assert build.labels["io.envkit.name"] == "tiny"
    assert build.labels["io.envkit.context-sha256"] == result.context_sha256
    files = _tar_names(build.context)
    assert "wheels/python/six-1.16.0-py3-none-any.whl" in files  # its layer's wheels only
    dockerfile = files["Dockerfile"].decode()
    assert "COPY wheels/python/ /tmp/envkit/python/\n" in dockerfile
    assert "--no-index --find-links /tmp/envkit/python -r /tmp/envkit/layers/python.lock" in dockerfile
    assert "six==1.16.0 \\\n    --hash=sha256:" in files["layers/python.lock"].decode()
    assert "--require-hashes" in dockerfile
    assert "six==1.16.0 \\\n    --hash=sha256:" in files["requirements.lock"].decode()
    assert "wheelhouse.lock" not in files
    assert result.lock == "locked" and (root / "images" / "tiny" / "conda-lock.yml").is_file()
    assert result.log_path == str(root / ".envkit" / "logs" / f"tiny-{result.key[:12]}.log")
    assert "Step 2/2" in Path(result.log_path).read_text()
    assert [e.step for e in events[:2]] == ["lock", "wheelhouse"]


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
    builder = Builder(engine, root, locker=fake_locker(), pip_runner=pip)  # type: ignore[arg-type]
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
    builder = Builder(engine, root, locker=fake_locker(), pip_runner=pip)  # type: ignore[arg-type]
    with pytest.raises(KeyboardInterrupt):
        builder.build(loaded, OFFLINE)
    assert engine.images_by_tag == {}
    assert len(engine.removed) == 1


def test_engine_unavailable_propagates(root: Path, loaded: LoadedSpec, pip: FakePip) -> None:
    builder = Builder(FakeEngine(unavailable=True), root, locker=fake_locker(), pip_runner=pip)
    with pytest.raises(EngineUnavailable):
        builder.build(loaded, OFFLINE)


def test_online_build_installs_the_lock(builder: Builder, engine: FakeEngine, loaded: LoadedSpec) -> None:
    result = builder.build(loaded)
    files = _tar_names(engine.builds[0].context)
    assert "wheelhouse.lock" not in files and "wheels/" not in "".join(files)
    assert "--require-hashes -r /tmp/envkit/layers/python.lock" in files["Dockerfile"].decode()
    assert engine.builds[0].network is True
    assert result.offline is False and result.wheels == 0


def test_spec_offline_flag_counts(root: Path, spec_writer: Callable[..., Path], builder: Builder) -> None:
    spec_writer(root, ("six==1.16.0",), offline="true")
    assert builder.build(load_spec(root / "environments" / "tiny.yaml")).offline is True


def test_frozen_refuses_without_a_fresh_lock(builder: Builder, loaded: LoadedSpec) -> None:
    with pytest.raises(UsageError, match="--frozen"):
        builder.build(loaded, BuildOptions(frozen=True))


def test_fresh_lock_is_used_and_frozen_accepts_it(
    builder: Builder, engine: FakeEngine, loaded: LoadedSpec, root: Path, resolver: PinResolver
) -> None:
    first = builder.build(loaded, OFFLINE)
    assert first.lock == "locked" and len(resolver.requests) == 1
    state = lock_state(root, loaded)
    assert state.fresh and state.lock_sha256
    again = builder.build(loaded, BuildOptions(offline=True, frozen=True))
    assert again.lock == "fresh" and again.status == "up-to-date"
    assert len(resolver.requests) == 1  # a fresh lock is not solved again
    files = _tar_names(engine.builds[0].context)
    assert "requirements.lock" in files
    assert f'io.envkit.lock-sha256="{state.lock_sha256}"' in files["Dockerfile"].decode()
    assert engine.builds[0].labels["io.envkit.lock-sha256"] == state.lock_sha256


def test_stale_lock_is_relocked_or_refused_with_frozen(
    builder: Builder, loaded: LoadedSpec, root: Path, spec_writer: Callable[..., Path], resolver: PinResolver
) -> None:
    first = builder.build(loaded)
    spec_writer(root, ("six==1.17.0", "packaging==24.1"))
    changed = load_spec(root / "environments" / "tiny.yaml")
    assert lock_state(root, changed).status == "stale"
    with pytest.raises(UsageError, match="stale"):
        builder.build(changed, BuildOptions(frozen=True))
    second = builder.build(changed)
    assert second.lock == "locked" and second.tag != first.tag
    assert any("the lock was stale" in w for w in second.warnings)
    assert "six==1.17.0" in (root / "images" / "tiny" / "requirements.lock").read_text()


def test_unreachable_channel_exits_3_with_a_hint(root: Path, loaded: LoadedSpec, pip: object) -> None:
    class Offline(PinResolver):
        def resolve(self, request: PipRequest) -> tuple[PipPackage, ...]:
            raise SolverFailed("uv could not reach the package index", hint="set mirrors.pypi")

    builder = Builder(FakeEngine(), root, locker=fake_locker(Offline()), pip_runner=pip)  # type: ignore[arg-type]
    with pytest.raises(SolverFailed) as info:
        builder.build(loaded)
    assert info.value.exit_code == ExitCode.FAILURE
    assert "locking failed" in info.value.message and "could not reach" in info.value.message
    assert "mirrors" in (info.value.hint or "") and "--frozen" in (info.value.hint or "")


def test_pack_is_for_conda_specs(root: Path, builder: Builder, loaded: LoadedSpec) -> None:
    """Offline conda builds are tested in tests/unit/pack; a venv spec has no use for a pack."""
    with pytest.raises(UsageError, match="--pack is for conda environments"):
        builder.build(loaded, BuildOptions(pack=root / "x.tar"))


def test_builder_stage_images_are_pruned_after_each_build(
    root: Path, builder: Builder, engine: FakeEngine, loaded: LoadedSpec, pip: object
) -> None:
    engine.dangling["sha256:other"] = ImageInfo(
        "sha256:other", (), {"io.envkit.stage": "builder", "io.envkit.builder-of": "other"}, "root", 7
    )
    result = builder.build(loaded, OFFLINE)
    assert engine.pruned == ["tiny"] and result.pruned_bytes == engine.size // 2
    assert list(engine.dangling) == ["sha256:other"]  # another environment's are left alone
    assert builder.build(loaded, OFFLINE).pruned_bytes == 0 and engine.pruned == ["tiny"]  # up to date
    failing_engine = FakeEngine(build_error=failing(), fail_after_events=1)
    failing_engine.dangling["sha256:half"] = ImageInfo(
        "sha256:half", (), {"io.envkit.stage": "builder", "io.envkit.builder-of": "tiny"}, "root", 9
    )
    again = Builder(failing_engine, root, locker=fake_locker(), pip_runner=pip)  # type: ignore[arg-type]
    with pytest.raises(BuildFailed):
        again.build(loaded, OFFLINE)
    assert failing_engine.dangling == {}  # a failed build's finished builder stage goes too


def test_frozen_builds_after_edits_no_solver_sees(
    builder: Builder, loaded: LoadedSpec, root: Path, spec_writer: Callable[..., Path], resolver: PinResolver
) -> None:
    builder.build(loaded)
    spec_writer(root, ("six==1.16.0", "packaging==24.1"), description='"edited"', env="{A: '1'}")
    edited = load_spec(root / "environments" / "tiny.yaml")
    assert edited.sha256 != loaded.sha256 and lock_state(root, edited).fresh
    result = builder.build(edited, BuildOptions(frozen=True))
    assert result.lock == "fresh" and result.status == "built" and len(resolver.requests) == 1


def test_up_to_date_in_a_fresh_clone_fetches_no_wheel(
    builder: Builder, engine: FakeEngine, loaded: LoadedSpec, pip: FakePip, root: Path
) -> None:
    """Issue 47: a fresh clone has no .envkit/wheelhouse; naming the image must not refill it (the
    flagship's 2.4 GB took 21 s from pip's cache for a no-op build)."""
    import shutil

    first = builder.build(loaded, OFFLINE)
    shutil.rmtree(root / ".envkit")
    calls = len(pip.calls)
    again = builder.build(loaded, OFFLINE)
    assert again.status == "up-to-date" and again.tag == first.tag
    assert len(pip.calls) == calls  # no pip download
    assert not (root / ".envkit" / "wheelhouse").exists()
    assert len(engine.builds) == 1


def test_another_wheelhouse_request_is_another_image(
    builder: Builder, loaded: LoadedSpec, tmp_path: Path
) -> None:
    first = builder.build(loaded, OFFLINE)
    links = tmp_path / "links"
    links.mkdir()
    second = builder.build(loaded, BuildOptions(offline=True, find_links=(str(links),)))
    assert second.status == "built" and second.tag != first.tag
    assert second.context_sha256 == first.context_sha256  # the same wheels: the request differs


def test_missing_base_made_by_envkit_names_the_command(
    root: Path, engine: FakeEngine, pip: FakePip, resolver: PinResolver, spec_writer: Callable[..., Path]
) -> None:
    """Issue 47: the registry-free base is in no registry; the engine's "pull access denied" hint
    ("docker pull it") never named `envkit base-image`, the command that makes it."""
    from tests.unit.build.conftest import SPEC

    path = root / "environments" / "tiny.yaml"
    path.write_text(
        SPEC.replace("python:3.11-slim-bookworm", "envkit/debian-python:bookworm").format(
            pins="  - six==1.16.0"
        )
    )
    loaded = load_spec(path)
    builder = Builder(engine, root, locker=fake_locker(resolver), pip_runner=pip)
    with pytest.raises(BuildFailed) as caught:
        builder.build(loaded, OFFLINE)
    assert "envkit/debian-python:bookworm is not in the engine" in caught.value.message
    assert "`envkit base-image`" in (caught.value.hint or "")
    assert caught.value.exit_code == ExitCode.FAILURE
    assert pip.calls == [] and engine.builds == []  # said before any wheel or build
    engine.add_image("envkit/debian-python:bookworm")
    assert builder.build(loaded, OFFLINE).status == "built"


def test_a_build_that_will_not_fit_says_so_before_the_engine_starts(
    builder: Builder, engine: FakeEngine, loaded: LoadedSpec
) -> None:
    """Issue 47: the flagship's first build failed half-way with "no space left on device"."""
    engine.free = 10  # bytes: less than the fake wheels need
    with pytest.raises(BuildFailed) as caught:
        builder.build(loaded, OFFLINE)
    assert "needs about" in caught.value.message and "GB are free" in caught.value.message
    assert "envkit images" in (caught.value.hint or "")
    assert engine.builds == []
    engine.free = 10**12
    assert builder.build(loaded, OFFLINE).status == "built"


def test_the_disk_a_build_needs_counts_the_installed_environment(tmp_path: Path) -> None:
    import zipfile

    from envkit.build.builder import disk_needed
    from envkit.offline.wheelhouse import Wheel, Wheelhouse

    path = tmp_path / "big-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("big/data.bin", b"\0" * 1_000_000)  # compresses to ~1 kB
    house = Wheelhouse(tmp_path, (Wheel(path.name, "big", "1.0", "0" * 64, path.stat().st_size),))
    assert house.size < 10_000 and house.installed_size() == 1_000_000
    assert disk_needed(house.size, house.installed_size()) == house.size + 4_000_000
    assert disk_needed(10, 1) == 32  # a context bigger than what it installs to


def test_the_layer_stages_of_this_build_stay_as_the_next_builds_cache(
    builder: Builder, engine: FakeEngine, loaded: LoadedSpec
) -> None:
    """Issue 47: a changed pin rebuilds its group's stage only; the other groups' stages (the
    Docker cache of their pip installs) must survive the builder-stage pruning."""
    from envkit.engine.protocol import BUILDER_OF_LABEL, LAYER_LABEL, STAGE_LABEL

    (group,) = builder.plan(loaded, OFFLINE).layers
    for image_id, layer in (("sha256:current", group.label), ("sha256:stale", "python-000000000000")):
        labels = {STAGE_LABEL: "builder", BUILDER_OF_LABEL: "tiny", LAYER_LABEL: layer}
        engine.dangling[image_id] = ImageInfo(image_id, (), labels, "root", 10)
    builder.build(loaded, OFFLINE)
    assert set(engine.dangling) == {"sha256:current"}
    builder.build(loaded, BuildOptions(offline=True, nocache=True))  # its stages are new: none kept
    assert engine.dangling == {}


def test_naming_an_image_does_not_import_the_sbom_validator() -> None:
    """Issue 47: the no-op build of a fresh clone spent ~4 s importing jsonschema and rfc3987-syntax's
    grammar (on a busy machine) for a check only a real build needs (profiled: -X importtime)."""
    import subprocess
    import sys

    code = "import sys, envkit.build.builder, envkit.sbom.cyclonedx; print('jsonschema' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_the_sbom_is_still_checked_before_a_build(
    builder: Builder, engine: FakeEngine, loaded: LoadedSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    import envkit.build.builder as module

    def invalid(name: str, text: str) -> None:
        raise ValueError(f"the SBOM of {name} does not validate against CycloneDX 1.6: bad")

    monkeypatch.setattr(module, "check_sbom", invalid)
    with pytest.raises(ValueError, match="does not validate"):
        builder.build(loaded, OFFLINE)
    assert engine.builds == []


def test_a_kept_layer_stage_starts_its_stage_and_its_wheels_stay_home(
    builder: Builder, engine: FakeEngine, loaded: LoadedSpec, root: Path
) -> None:
    """Issue 47: a rebuild sent every group's wheels (the flagship: 2.4 GB) although the kept layer
    stages already hold them installed. A stage kept for the group's lock lines on this base starts
    from its image; only the other groups' wheels are sent; the image's name and labels are those of
    the whole context (the same image)."""
    from dataclasses import replace

    from envkit.engine.protocol import BUILDER_OF_LABEL, LAYER_LABEL, STAGE_LABEL

    plan = builder.plan(loaded, OFFLINE)
    (group,) = plan.layers
    base = loaded.resolved.runtime_ref
    engine.images_by_tag[base] = replace(
        engine.inspect(base) or engine.add_image(base), diff_ids=("sha256:b",)
    )
    first = builder.build(loaded, OFFLINE)
    assert "wheels/python/six-1.16.0-py3-none-any.whl" in _tar_names(engine.builds[-1].context)
    labels = {STAGE_LABEL: "builder", BUILDER_OF_LABEL: "other", LAYER_LABEL: group.label}
    engine.dangling["sha256:elsewhere"] = ImageInfo("sha256:elsewhere", (), labels, "root", 10, ("sha256:x",))
    engine.dangling["sha256:kept"] = ImageInfo(
        "sha256:kept", (), labels, "root", 10, ("sha256:b", "sha256:s")
    )
    second = builder.build(loaded, BuildOptions(offline=True, nocache=True))  # --no-cache: none reused
    assert "wheels/python/six-1.16.0-py3-none-any.whl" in _tar_names(engine.builds[-1].context)
    engine.remove(first.tag)
    third = builder.build(loaded, OFFLINE)
    files = _tar_names(engine.builds[-1].context)
    assert not any(name.startswith("wheels/") for name in files)
    dockerfile = files["Dockerfile"].decode()
    assert "\nFROM sha256:kept AS layer-python\n" in dockerfile  # not the other base's stage
    assert "pip install" not in dockerfile.split("AS layer-python", 1)[1].split("AS runtime", 1)[0]
    assert "COPY --from=layer-python /stage/ /opt/env/\n" in dockerfile
    assert third.tag == second.tag == first.tag
    assert engine.builds[-1].labels == engine.builds[0].labels  # the whole context's digest
    assert "sha256:kept" in Path(third.log_path or "").read_text()


def test_a_kept_stage_that_went_away_is_built_from_the_whole_context(
    builder: Builder, engine: FakeEngine, loaded: LoadedSpec
) -> None:
    """Another project's build may prune a stage this build chose to start from: the engine then
    cannot find it, and the build runs again with every group's wheels."""
    from dataclasses import replace

    from envkit.engine.protocol import BUILDER_OF_LABEL, LAYER_LABEL, STAGE_LABEL

    (group,) = builder.plan(loaded, OFFLINE).layers
    base = loaded.resolved.runtime_ref
    engine.images_by_tag[base] = replace(
        engine.inspect(base) or engine.add_image(base), diff_ids=("sha256:b",)
    )
    labels = {STAGE_LABEL: "builder", BUILDER_OF_LABEL: "other", LAYER_LABEL: group.label}
    engine.dangling["sha256:gone"] = ImageInfo(
        "sha256:gone", (), labels, "root", 10, ("sha256:b", "sha256:s")
    )
    engine.build_error = BuildFailed("base image sha256:gone is not present locally and cannot be pulled")
    build = engine.build

    def flaky(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        try:
            yield from build(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            engine.build_error = None

    engine.build = flaky  # type: ignore[method-assign]
    result = builder.build(loaded, OFFLINE)
    assert result.status == "built" and len(engine.builds) == 2
    assert "FROM sha256:gone AS layer-python" in _tar_names(engine.builds[0].context)["Dockerfile"].decode()
    assert "wheels/python/six-1.16.0-py3-none-any.whl" in _tar_names(engine.builds[1].context)
    assert "a kept layer stage is gone" in Path(result.log_path or "").read_text()


def test_a_rebuild_from_kept_stages_needs_the_changed_groups_and_the_save_only() -> None:
    """Issue 47: a one-pin rebuild of a 3.3 GB environment was refused for 15 GB while it needs the
    changed group's few MB and normalizing's save of the image (the engine's copy, the archive)."""
    from envkit.build.builder import disk_needed, rebuild_disk_needed

    wheels, installed, python = 1_870_000_000, 3_290_000_000, 1_000_000
    assert disk_needed(wheels, installed) > 15_000_000_000
    assert rebuild_disk_needed(python, 3 * python, installed) == python + 6 * python + 2 * installed
    assert rebuild_disk_needed(10, 1, 0) == 32  # the changed groups' own build dominates
