"""Issue 24, class 3: a symlink planted before a write is never written through.

Before each write envkit makes (the shared helper, the store's image tar and its temp name, the
fleet's image path, ``envkit init``'s Makefile and spec, the local scheduler's logs, the probe
store, the push record, ``images/NAME``), a link to a victim file or directory is planted; the
victim must be untouched and nothing may appear outside the project or store.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from envkit._atomic import (
    atomic_writer,
    check_within,
    make_dir_exclusive,
    write_bytes_atomic,
    write_text_atomic,
)
from envkit.errors import EnvkitError, UsageError

VICTIM = b"# the victim's ~/.bashrc\n"


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "outside" / "bashrc"
    path.parent.mkdir()
    path.write_bytes(VICTIM)
    return path


def _untouched(victim: Path) -> None:
    assert victim.read_bytes() == VICTIM
    assert sorted(p.name for p in victim.parent.iterdir()) == ["bashrc"]  # nothing new beside it


# -- the shared helper ------------------------------------------------------------------------


def test_a_link_at_the_target_is_replaced_not_followed(tmp_path: Path, victim: Path) -> None:
    target = tmp_path / "proj" / "out.json"
    target.parent.mkdir()
    target.symlink_to(victim)
    assert write_text_atomic(target, "{}\n", within=tmp_path / "proj")
    _untouched(victim)
    assert not target.is_symlink() and target.read_text() == "{}\n"


def test_a_link_holding_the_same_bytes_is_still_replaced(tmp_path: Path, victim: Path) -> None:
    target = tmp_path / "same"
    target.symlink_to(victim)
    assert write_bytes_atomic(target, VICTIM)  # not "unchanged": its content was never read through the link
    assert not target.is_symlink()
    _untouched(victim)


def test_a_dangling_link_at_the_target_creates_nothing_where_it_points(tmp_path: Path) -> None:
    target = tmp_path / "x.tar"
    planted = tmp_path / "outside-new-file"
    target.symlink_to(planted)
    write_bytes_atomic(target, b"data")
    assert not planted.exists() and target.read_bytes() == b"data"


def test_a_directory_link_out_of_the_root_is_refused(tmp_path: Path, victim: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / ".envkit").symlink_to(victim.parent)
    with pytest.raises(EnvkitError, match="outside") as caught:
        write_text_atomic(root / ".envkit" / "bashrc", "owned\n", within=root)
    assert caught.value.hint and "symlinked directory" in caught.value.hint
    _untouched(victim)
    with pytest.raises(EnvkitError, match="outside"):
        check_within(root / ".envkit" / "logs" / "x.log", root)


def test_a_directory_or_fifo_at_the_target_is_refused_without_hanging(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    for name in ("dir", "fifo"):
        with pytest.raises(EnvkitError, match="not a regular file"):
            write_text_atomic(tmp_path / name, "x")


def test_the_temp_name_is_not_predictable(tmp_path: Path, victim: Path) -> None:
    """The old code wrote ``.<name>.tmp`` with open("wb"): planted, it overwrote the victim."""
    target = tmp_path / "image.tar"
    (tmp_path / ".image.tar.tmp").symlink_to(victim)
    with atomic_writer(target) as out:
        out.write(b"tar bytes")
    _untouched(victim)
    assert target.read_bytes() == b"tar bytes"


def test_a_failed_stream_leaves_no_file_unless_kept(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    with pytest.raises(RuntimeError), atomic_writer(target) as out:
        out.write(b"half")
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []
    log = tmp_path / "build.log"
    with pytest.raises(RuntimeError), atomic_writer(log, keep_on_error=True) as out:
        out.write(b"step 1\n")
        raise RuntimeError("the build failed")
    assert log.read_bytes() == b"step 1\n" and [p.name for p in tmp_path.iterdir()] == ["build.log"]


def test_an_exclusive_directory_never_reuses_what_is_there(tmp_path: Path, victim: Path) -> None:
    for planted in ("dir", "link", "file"):
        path = tmp_path / planted
        if planted == "dir":
            path.mkdir()
        elif planted == "link":
            path.symlink_to(victim.parent)
        else:
            path.write_text("")
        with pytest.raises(EnvkitError, match="exists already"):
            make_dir_exclusive(path)
    _untouched(victim)


# -- the store's image tar (engine/docker_store.py, fleet/images.py) --------------------------


class _Api:
    """The Engine API call ``DockerImageStore.save`` makes, answering fixed bytes."""

    timeout = 60  # the client's timeout, raised while saving

    def get_image(self, image: str, chunk_size: int) -> Iterator[bytes]:
        yield b"docker save "
        yield image.encode()


class _Engine:
    api = _Api()


def _store() -> Any:
    from envkit.engine.docker_store import DockerImageStore

    return DockerImageStore(_Engine())  # type: ignore[arg-type]


@pytest.mark.parametrize("planted", [".X.tar.tmp", "X.tar"])
def test_saving_an_image_tar_never_writes_through_a_planted_link(
    tmp_path: Path, victim: Path, planted: str
) -> None:
    images = tmp_path / "store" / "images"
    images.mkdir(parents=True)
    (images / planted).symlink_to(victim)
    _store().save("sha256:1", images / "X.tar")
    _untouched(victim)
    assert (images / "X.tar").read_bytes() == b"docker save sha256:1"


def test_the_fleet_replaces_a_dangling_or_foreign_tar_link(tmp_path: Path, victim: Path) -> None:
    from envkit.engine.testing import FakeEngine
    from envkit.fleet.images import image_for_fleet

    engine = FakeEngine()
    info = engine.add_image("envkit/demo:latest", "sha256:" + "3" * 64)
    images = tmp_path / "store" / "images"
    images.mkdir(parents=True)
    tar = images / ("3" * 24 + ".tar")
    planted = tmp_path / "outside" / "created-by-envkit"
    tar.symlink_to(planted)  # dangling: the old code resolved it and saved the image there
    image = image_for_fleet(engine, _store(), "demo", tmp_path / "store", tmp_path)
    assert image["tar"] == str(tar.parent.resolve() / tar.name) and not Path(image["tar"]).is_symlink()
    assert not planted.exists()
    tar.unlink()
    tar.symlink_to(victim)  # a link to an existing file is not "a tar this user saved" either
    image_for_fleet(engine, _store(), "demo", tmp_path / "store", tmp_path)
    _untouched(victim)
    assert tar.read_bytes() == f"docker save {info.id}".encode()


def test_a_store_images_directory_leading_outside_the_store_is_refused(tmp_path: Path, victim: Path) -> None:
    from envkit.engine.testing import FakeEngine
    from envkit.fleet.images import image_for_fleet

    engine = FakeEngine()
    engine.add_image("envkit/demo:latest", "sha256:" + "4" * 64)
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "images").symlink_to(victim.parent)
    with pytest.raises(EnvkitError, match="outside"):
        image_for_fleet(engine, _store(), "demo", tmp_path / "store", tmp_path)
    _untouched(victim)


# -- envkit init (init/repo.py) ----------------------------------------------------------------


def test_init_does_not_append_to_a_makefile_linked_outside_the_repository(
    tmp_path: Path, victim: Path
) -> None:
    from envkit.init.repo import init_repo

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "Makefile").symlink_to(victim)
    with pytest.raises(UsageError, match="outside the project") as caught:
        init_repo(repo, "torch", "cpu")
    assert caught.value.hint and "include envkit.mk" in caught.value.hint
    _untouched(victim)


@pytest.mark.parametrize("link", ["environments", "envkit.mk"])
def test_init_writes_nothing_through_a_planted_link(tmp_path: Path, victim: Path, link: str) -> None:
    from envkit.init.repo import init_repo

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / link).symlink_to(victim.parent if link == "environments" else victim)
    try:
        init_repo(repo, "torch", "cpu", force=True)
    except EnvkitError as e:
        assert "outside" in e.message
    _untouched(victim)


# -- the local scheduler's logs, the probe store, the push record, images/NAME -----------------


def test_a_task_log_is_never_appended_through_a_link(tmp_path: Path, victim: Path) -> None:
    from envkit import _proc

    log = tmp_path / "job-local1-0.out"
    log.symlink_to(victim)
    with pytest.raises(EnvkitError, match="cannot write"):
        _proc.spawn(["true"], env={}, log=log)
    _untouched(victim)


def test_the_probe_store_writes_no_report_through_a_host_link(tmp_path: Path, victim: Path) -> None:
    from envkit.probe.report import dump_report
    from envkit.store.layout import save_to_store
    from tests.unit.probe.conftest import typed_report

    store = tmp_path / "store"
    store.mkdir()
    (store / "host-a").symlink_to(victim.parent)
    with pytest.raises(EnvkitError, match="outside"):
        save_to_store(dump_report(typed_report(host="host-a", label="x")), store, "host-a", "x")
    _untouched(victim)


def test_the_push_record_is_not_written_through_a_linked_envkit_dir(tmp_path: Path, victim: Path) -> None:
    from envkit.engine.push import push_image
    from envkit.engine.testing import FakeImageStore

    root = tmp_path / "proj"
    root.mkdir()
    (root / ".envkit").symlink_to(victim.parent)
    image_id = "sha256:" + "1" * 64
    store = FakeImageStore(images={"envkit/demo:0123456789ab": image_id})
    with pytest.raises(EnvkitError, match="outside"):
        push_image(store, root, "demo", "envkit/demo:0123456789ab", image_id, "127.0.0.1:5000")
    _untouched(victim)


@pytest.mark.parametrize("level", ["images", "images/demo"])
def test_images_name_linked_out_of_the_project_is_refused(tmp_path: Path, victim: Path, level: str) -> None:
    from envkit.spec.load import image_dir

    root = tmp_path / "proj"
    root.mkdir()
    if level == "images":
        (root / "images").symlink_to(victim.parent)
    else:
        (root / "images").mkdir()
        (root / "images" / "demo").symlink_to(victim.parent)
    with pytest.raises(UsageError, match="outside the project"):
        image_dir(root, "demo")
    if level == "images/demo":
        (root / "shared").mkdir()
        (root / "images" / "other").symlink_to(root / "shared")
        assert image_dir(root, "other") == root / "images" / "other"  # a link inside the project is fine


@pytest.mark.parametrize("where", ["probe store", "push record", "diff snapshots", "state dir"])
def test_a_cloned_envkit_link_out_of_the_project_is_refused_everywhere(
    tmp_path: Path, victim: Path, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``.envkit`` holds logs, caches, reports, records: a repository shipping ``.envkit -> ~`` gets none."""
    from envkit._atomic import state_dir
    from envkit.cli.diff_cmd import store_dir
    from envkit.engine.push import pushed_path
    from envkit.store.layout import default_store

    root = tmp_path / "proj"
    root.mkdir()
    (root / ".envkit").symlink_to(victim.parent)
    monkeypatch.delenv("ENVKIT_STORE", raising=False)
    monkeypatch.setenv("ENVKIT_ROOT", str(root))
    calls = {
        "probe store": lambda: default_store(root, {}),
        "push record": lambda: pushed_path(root, "demo"),
        "diff snapshots": lambda: store_dir(None),
        "state dir": lambda: state_dir(root, "cache"),
    }
    with pytest.raises(EnvkitError, match="outside"):
        calls[where]()
    _untouched(victim)
    (root / ".envkit").unlink()
    (root / "scratch").mkdir()
    (root / ".envkit").symlink_to(root / "scratch")  # a link that stays in the project is fine
    assert calls[where]().parent.parent.resolve().is_relative_to(root.resolve())


# -- the shell scripts that run inside containers (pyxis, Kubernetes): predictable temp names -----


def _stub_payload(tmp_path: Path) -> Path:
    payload = tmp_path / "payload"
    payload.mkdir()
    (payload / "run.py").write_text("print('{\"stub\": true}')\n")
    return payload


def test_the_pyxis_task_script_writes_nothing_through_planted_temp_links(
    tmp_path: Path, victim: Path
) -> None:
    import subprocess
    import sys

    from envkit.fleet.pyxis import TASK_SCRIPT

    run = tmp_path / "r1"
    (run / ".tasks").mkdir(parents=True)
    for planted in (run / ".tasks" / ".n1.tmp", run / ".n1.json.tmp", run / ".tasks" / "n1.err"):
        planted.symlink_to(victim)
    env = {"SLURMD_NODENAME": "n1", "ENVKIT_PAYLOAD": str(_stub_payload(tmp_path)),
           "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}  # fmt: skip
    done = subprocess.run(
        ["sh", "-c", TASK_SCRIPT, "envkit-task", str(run)], env=env, timeout=60, check=False
    )
    assert done.returncode == 0
    _untouched(victim)
    assert (run / "n1.json").read_text() == '{"stub": true}\n' and '"ok"' in (
        run / ".tasks" / "n1.json"
    ).read_text()


def test_the_kubernetes_pod_script_writes_nothing_through_a_planted_temp_link(
    tmp_path: Path, victim: Path
) -> None:
    import subprocess
    import sys

    from envkit.fleet import k8s

    opts = k8s.K8sOptions(run_id="r", nodes=("n1",), image="reg/x@sha256:" + "a" * 64, payload_args=())
    script = k8s._script(opts).replace(k8s.STORE_MOUNT, str(tmp_path))
    script = script.replace(k8s.PAYLOAD_MOUNT, str(_stub_payload(tmp_path)))
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / ".n1.json.tmp").symlink_to(victim)
    env = {"NODE_NAME": "n1", "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
    done = subprocess.run(["sh", "-c", script], env=env, timeout=60, check=False)
    assert done.returncode == 0
    _untouched(victim)
    assert (tmp_path / "r" / "n1.json").read_text() == '{"stub": true}\n'


def test_init_from_writes_no_spec_through_an_environments_link(
    tmp_path: Path, victim: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from envkit.cli import main

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "environments").symlink_to(victim.parent)
    source = tmp_path / "requirements.txt"
    source.write_text("numpy==1.26.4\n")
    monkeypatch.setenv("ENVKIT_ROOT", str(repo))
    code = main(["init", "--from", str(source), "--name", "adopted"])
    out = capsys.readouterr()
    assert code != 0 and "Traceback" not in out.out + out.err and "outside" in out.err
    _untouched(victim)
