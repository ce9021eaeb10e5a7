"""Staging a dump for others (``guard replay --scheduler local/--slurm`` store, ``--image`` mount) and
reading a dump's manifest: issue 32, findings 2 and 7 (the guard's half).

A dump is someone else's folder. Staged, it must hold only the manifest's own regular files, copied
never through a link, with the dump's own modes (0600), hashed as copied; its manifest is read at
most 1 MiB + 1 byte, and only from a regular file.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("safetensors")

from envkit.cli import main
from envkit.errors import DumpError
from envkit.guard import example
from envkit.guard.dump import MAX_MANIFEST, copy_dump, read_dump, write_manifest
from envkit.incident.image_replay import stage_dump

pytestmark = [pytest.mark.frameworks, pytest.mark.filterwarnings("ignore::UserWarning")]

ENTRY = "envkit.guard.example:build"
SECRET = "AWS_SECRET_ACCESS_KEY=envkit-test-secret-0123456789"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("guard") / "run"
    example.train(run, bad_at=3)
    return run / "incidents" / "step-3"


@pytest.fixture
def dump(pristine: Path, tmp_path: Path) -> Path:
    """A copy of the pristine dump (the guard wrote its files 0600)."""
    copy = tmp_path / "step-3"
    copy.mkdir()
    for p in pristine.iterdir():
        (copy / p.name).write_bytes(p.read_bytes())
        (copy / p.name).chmod(stat.S_IMODE(p.stat().st_mode))
    return copy


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "home" / ".ssh" / "id_rsa"
    path.parent.mkdir(parents=True)
    path.write_text(SECRET + "\n")
    path.chmod(0o600)
    return path


def _everything(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_the_guard_writes_its_dumps_owner_only(pristine: Path) -> None:
    assert stat.S_IMODE(pristine.stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in pristine.iterdir()} == {0o600}


def test_a_local_fleet_replay_stages_no_planted_link_and_keeps_0600(
    dump: Path, secret: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The finding itself: ``notes.json -> ~/.ssh/id_rsa`` went world-readable into the store."""
    (dump / "notes.json").symlink_to(secret)
    (dump / "environ.json").symlink_to("/proc/self/environ")
    store = tmp_path / "store"
    code = main(
        ["guard", "replay", str(dump), "--entry", ENTRY, "--scheduler", "local", "--store", str(store),
         "--run-id", "r1", "--json"]
    )  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["result"]["verdict"] == "reproducible", out
    staged = store / "r1" / "dump"
    names = sorted(p.name for p in staged.iterdir())
    assert names == sorted([*json.loads((dump / "manifest.json").read_text())["files"], "manifest.json"])
    assert all(SECRET.encode() not in data for data in _everything(store).values())
    modes = {p.name: stat.S_IMODE(os.lstat(p).st_mode) for p in staged.iterdir()}
    assert set(modes.values()) == {0o600}, modes
    assert stat.S_IMODE(staged.stat().st_mode) == 0o700


def _swap_for_link(name: str) -> Any:
    def go(d: Path, secret: Path) -> None:
        (d / name).unlink()
        (d / name).symlink_to(secret)

    return go


def _hashed_link(d: Path, secret: Path) -> None:
    """records.json -> the secret, the manifest re-hashed over the secret (an attacker's dump)."""
    (d / "records.json").unlink()
    (d / "records.json").symlink_to(secret)
    manifest = json.loads((d / "manifest.json").read_text())
    manifest["files"]["records.json"] = {"sha256": _sha(secret), "bytes": secret.stat().st_size}
    (d / "manifest.json").write_text(json.dumps(manifest))


def _sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def _manifest_link(d: Path, secret: Path) -> None:
    target = d.parent / "elsewhere.json"
    target.write_text((d / "manifest.json").read_text())
    (d / "manifest.json").unlink()
    (d / "manifest.json").symlink_to(target)


REFUSED = {
    "a listed file swapped for a link": (_swap_for_link("env.json"), "never links|regular"),
    "a listed file swapped for a link, re-hashed": (_hashed_link, "never links|regular"),
    "the manifest is a link": (_manifest_link, "regular"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_links_where_the_manifest_names_a_file_are_refused(
    dump: Path, secret: Path, tmp_path: Path, case: str
) -> None:
    damage, message = REFUSED[case]
    damage(dump, secret)
    with pytest.raises(DumpError, match=message):
        stage_dump(read_dump(dump), tmp_path / "staged")
    assert (
        not any(SECRET.encode() in data for data in _everything(tmp_path / "staged").values())
        if (tmp_path / "staged").exists()
        else True
    )


def _fifo(d: Path, secret: Path) -> None:
    os.mkfifo(d / "pipe.json")


def _subdir(d: Path, secret: Path) -> None:
    (d / "more").mkdir()
    (d / "more" / "id_rsa").write_bytes(secret.read_bytes())


def _dir_link(d: Path, secret: Path) -> None:
    (d / "ssh").symlink_to(secret.parent, target_is_directory=True)


def _hardlink(d: Path, secret: Path) -> None:
    os.link(secret, d / "key.json")


UNLISTED = {
    "a link to a secret": lambda d, s: (d / "notes.json").symlink_to(s),
    "a link to /proc/self/environ": lambda d, s: (d / "environ.safetensors").symlink_to("/proc/self/environ"),
    "a FIFO": _fifo,
    "a sub-directory": _subdir,
    "a link to a directory": _dir_link,
    "a hard link to a secret": _hardlink,
}


@pytest.mark.parametrize("case", sorted(UNLISTED))
def test_only_the_manifests_own_files_are_staged(dump: Path, secret: Path, tmp_path: Path, case: str) -> None:
    UNLISTED[case](dump, secret)
    staged = stage_dump(read_dump(dump), tmp_path / "staged")
    listed = {*json.loads((dump / "manifest.json").read_text())["files"], "manifest.json"}
    assert {p.name for p in staged.iterdir()} == listed
    assert all(SECRET.encode() not in data for data in _everything(staged).values())
    assert {stat.S_IMODE(p.stat().st_mode) for p in staged.iterdir()} == {0o600}
    assert read_dump(staged).manifest == read_dump(dump).manifest


def test_a_file_changed_after_the_check_is_refused_at_the_copy(dump: Path, tmp_path: Path) -> None:
    checked = read_dump(dump)
    data = bytearray((dump / "batch.safetensors").read_bytes())
    data[-1] ^= 0xFF
    (dump / "batch.safetensors").write_bytes(bytes(data))
    with pytest.raises(DumpError, match="changed while it was copied"):
        copy_dump(checked, tmp_path / "staged")


def test_a_manifest_changed_after_the_check_is_refused(dump: Path, tmp_path: Path) -> None:
    checked = read_dump(dump)
    manifest = json.loads((dump / "manifest.json").read_text())
    manifest["outcome"]["loss"] = 1.5
    manifest.pop("files")
    write_manifest(dump, manifest)
    with pytest.raises(DumpError, match="changed while it was copied"):
        copy_dump(checked, tmp_path / "staged")


def test_the_staging_target_is_never_an_existing_folder_or_link(dump: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "staged").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(FileExistsError):
        stage_dump(read_dump(dump), tmp_path / "staged")
    assert not any(elsewhere.iterdir())


def test_an_image_of_another_uid_gets_a_readable_copy_only_inside_a_private_folder(
    dump: Path, tmp_path: Path
) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    staged = stage_dump(read_dump(dump), private / "dump", mode=0o644)
    assert {stat.S_IMODE(p.stat().st_mode) for p in staged.iterdir()} == {0o644}
    assert stat.S_IMODE(staged.stat().st_mode) == 0o755


# -- finding 7 (the guard's half): the manifest is read bounded, from a regular file only ------------


def _sparse_manifest(d: Path, size: int) -> None:
    (d / "manifest.json").unlink()
    with (d / "manifest.json").open("wb") as fh:
        fh.truncate(size)


def test_a_sparse_3_gb_manifest_is_refused_in_bounded_memory(dump: Path) -> None:
    _sparse_manifest(dump, 3 << 30)
    code = (
        "import sys\n"
        "from envkit.errors import DumpError\n"
        "from envkit.guard.dump import read_dump\n"
        "try:\n    read_dump(__import__('pathlib').Path(sys.argv[1]))\n"
        "except DumpError as e:\n    print(e.message)\n"
        # VmHWM: this process's peak (ru_maxrss would carry the forking parent's across exec)
        "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run(
        [sys.executable, "-c", code, str(dump)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    ).stdout.splitlines()
    assert f"more than a dump's json holds ({MAX_MANIFEST} bytes)" in out[0]
    assert int(out[1]) < 256 * 1024, f"max RSS {out[1]} KiB"


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("just over the limit", "more than a dump's json holds"),
        ("a FIFO", "not a regular file"),
        ("a link to /dev/zero", "symbolic link"),
        ("a directory", "not a regular file|Is a directory"),
        ("a pickle", "pickle"),
    ],
)
def test_hostile_manifests_are_refused_with_a_message(
    dump: Path, case: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = dump / "manifest.json"
    manifest.unlink()
    if case == "just over the limit":
        manifest.write_bytes(b" " * MAX_MANIFEST + b"{}")
    elif case == "a FIFO":
        os.mkfifo(manifest)
    elif case == "a link to /dev/zero":
        manifest.symlink_to("/dev/zero")
    elif case == "a directory":
        manifest.mkdir()
    else:
        import pickle

        manifest.write_bytes(pickle.dumps({"kind": "envkit-guard-dump"}, protocol=2))
    with pytest.raises(DumpError, match=message):
        read_dump(dump)
    assert main(["guard", "replay", str(dump), "--entry", ENTRY]) == 2
    err = capsys.readouterr().err
    assert "manifest.json" in err and "Traceback" not in err
