"""The lock's identity is what the solvers see: edits nobody solves leave it fresh."""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.cli import main
from envkit.lock import CondaPackage, PipPackage, current_lock, lock_environment
from envkit.lock.inputs import lock_inputs
from envkit.lock.testing import FakeCondaSolver, FakePipResolver
from envkit.spec.load import load_spec

SHA = "ab" * 32
BASE = {
    "name": "demo",
    "python": '"3.11"',
    "cuda": '"12.1"',
    "conda": "[numpy>=1.24]",
    "pip": "[alpha==1.0]",
    "platforms": "[linux-64]",
}

# each edit: (extra or replaced keys, fresh afterwards?)
UNSOLVED = {
    "description": {"description": "another description"},
    "audit.ignore": {"audit": "{ignore: [{id: PYSEC-1, reason: accepted}]}"},
    "env": {"env": "{OMP_NUM_THREADS: '4'}"},
    "offline": {"offline": "true"},
    "base_image same OS": {"base_image": "nvidia/cuda:12.1.1-runtime-ubuntu22.04"},
    "installer miniforge": {"installer": "miniforge"},
}
SOLVED = {
    "conda line": {"conda": "[numpy>=1.25]"},
    "pip line": {"pip": "[alpha==1.1]"},
    "python": {"python": '"3.10"'},
    "cuda": {"cuda": '"11.8"'},
    "channel": {"channels": "[conda-forge, bioconda]"},
    "conda mirror": {"mirrors": "{conda: 'https://mirror.example/conda'}"},
    "pypi mirror": {"mirrors": "{pypi: 'https://mirror.example/simple'}"},
    "platform": {"platforms": "[linux-64, linux-aarch64]"},
    "installer venv": {"installer": "venv", "conda": "[]", "base_image": "python:3.11-slim-bookworm"},
    "framework": {"frameworks": '{torch: "2.1.2"}'},
}


def write(root: Path, **changes: str) -> Path:
    (root / "environments").mkdir(parents=True, exist_ok=True)
    path = root / "environments" / "demo.yaml"
    path.write_text("".join(f"{k}: {v}\n" for k, v in {**BASE, **changes}.items()), "utf-8")
    return path


def solvers() -> tuple[FakeCondaSolver, FakePipResolver]:
    conda = FakeCondaSolver(
        {
            p: (CondaPackage("numpy", "1.26.4", "h0", f"https://x/{p}/numpy.conda", "cd" * 16, SHA, p, p),)
            for p in ("linux-64", "linux-aarch64")
        }
    )
    return conda, FakePipResolver((PipPackage("alpha", "1.0", "https://x/alpha-1.0.whl", (SHA,)),))


def lock(root: Path) -> dict[str, bytes]:
    out = root / "images" / "demo"
    lock_environment(load_spec(root / "environments" / "demo.yaml"), out, *solvers())
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


@pytest.mark.parametrize("edit", sorted(UNSOLVED))
def test_edits_no_solver_sees_keep_the_lock_fresh_and_its_bytes(
    tmp_path: Path, edit: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path))
    write(tmp_path)
    before = lock(tmp_path)
    edited = load_spec(write(tmp_path, **UNSOLVED[edit]))
    state = current_lock(edited, tmp_path / "images" / "demo")
    assert state.fresh, state.reason
    assert main(["lock", "--check", "demo"]) == 0
    if edit != "installer miniforge":
        assert lock(tmp_path) == before  # relocking gives the very same files


@pytest.mark.parametrize("edit", sorted(SOLVED))
def test_edits_the_solvers_see_make_the_lock_stale(
    tmp_path: Path, edit: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path))
    write(tmp_path)
    lock(tmp_path)
    edited = load_spec(write(tmp_path, **SOLVED[edit]))
    assert current_lock(edited, tmp_path / "images" / "demo").status == "stale"
    assert main(["lock", "--check", "demo"]) == 1


def test_inputs_hash_ignores_key_order_and_unsolved_fields(tmp_path: Path) -> None:
    a = load_spec(write(tmp_path / "a"))
    b = load_spec(write(tmp_path / "b", description="x", env="{A: b}"))
    assert lock_inputs(a.resolved).sha256 == lock_inputs(b.resolved).sha256
    assert a.spec != b.spec


def test_a_lock_from_an_older_envkit_is_stale_with_a_relock_hint(tmp_path: Path) -> None:
    write(tmp_path)
    lock(tmp_path)
    out = tmp_path / "images" / "demo"
    (out / "lockset.json").unlink()  # older envkits wrote none
    for path in out.iterdir():
        text = path.read_text("utf-8").replace("lock inputs sha256", "spec sha256")
        path.write_text(text, "utf-8")
    state = current_lock(load_spec(tmp_path / "environments" / "demo.yaml"), out)
    assert state.status == "stale" and "relock" in state.reason
