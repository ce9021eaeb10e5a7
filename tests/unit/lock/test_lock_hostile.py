"""Hostile lock sets: interrupted locks (16.5) and hand-edited or truncated files (16.11).

A lock set is fresh only when it is complete, every file matches ``lockset.json`` and the
files agree with each other; otherwise ``lock --check`` exits 1 and ``build --frozen`` refuses.
Each case is tried twice where it matters: as the edit leaves it, and with ``lockset.json``
rewritten to match (an adversary who knows the format), so the content checks stand alone.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from envkit.cli import main
from envkit.lock import CondaPackage, PipPackage, current_lock, lock_environment
from envkit.lock.inputs import lock_inputs
from envkit.lock.lockset import MANIFEST, manifest_bytes, set_digest
from envkit.lock.testing import FakeCondaSolver, FakePipResolver
from envkit.spec.load import LoadedSpec, load_spec

H1, H2, H3 = "a1" * 32, "b2" * 32, "c3" * 32
M1, M2 = "d4" * 16, "e5" * 16
PLATFORMS = ("linux-64", "linux-aarch64")
SPEC = (
    'name: demo\npython: "3.11"\ncuda: cpu\ninstaller: miniforge\nconda: [numpy]\npip: [alpha]\n'
    "platforms: [linux-64, linux-aarch64]\n"
)


def _conda(version: str, digest: str) -> FakeCondaSolver:
    return FakeCondaSolver(
        {
            p: (
                CondaPackage("python", "3.11.9", "h0", f"https://x/{p}/python-3.11.9-h0.conda", M1, H3, p, p),
                CondaPackage(
                    "numpy", version, "h0", f"https://x/{p}/numpy-{version}-h0.conda", M1, digest, p, p,
                    ("python",),
                ),
            )
            for p in PLATFORMS
        }
    )  # fmt: skip


def _pip(version: str, digest: str) -> FakePipResolver:
    version = f"0.{version}"  # not the conda package's version: each edit below hits one of them
    return FakePipResolver((PipPackage("alpha", version, f"https://x/alpha-{version}.whl", (digest, H3)),))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "environments").mkdir()
    (tmp_path / "environments" / "demo.yaml").write_text(SPEC, "utf-8")
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path))
    return tmp_path


def _loaded(root: Path) -> LoadedSpec:
    return load_spec(root / "environments" / "demo.yaml")


def _lock(root: Path, version: str = "1.26.4", digest: str = H1, out: Path | None = None) -> Path:
    out = out or root / "images" / "demo"
    lock_environment(_loaded(root), out, _conda(version, digest), _pip(version, digest))
    return out


def _state(root: Path) -> tuple[str, str]:
    state = current_lock(_loaded(root), root / "images" / "demo")
    return state.status, state.reason


def _forge_manifest(root: Path) -> None:
    """What an adversary does after an edit: make lockset.json match the files again."""
    out = root / "images" / "demo"
    files = {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.name != MANIFEST}
    digest = lock_inputs(_loaded(root).resolved).sha256
    (out / MANIFEST).write_bytes(manifest_bytes(files, digest))


def _edit(path: Path, change: Callable[[str], str]) -> None:
    path.write_text(change(path.read_text("utf-8")), "utf-8")


def _assert_not_fresh(root: Path, words: str) -> None:
    status, reason = _state(root)
    assert status == "stale", reason
    assert words in reason, reason
    assert main(["lock", "--check", "demo"]) == 1


# -- 16.5: an interrupted `envkit lock` never leaves a set that is called fresh -----------------


def test_fresh_lock_is_fresh(project: Path) -> None:
    _lock(project)
    assert _state(project)[0] == "fresh"
    assert main(["lock", "--check", "demo"]) == 0


@pytest.mark.parametrize(
    "mixed",
    [
        ("conda-linux-64.lock",),  # explicit lock at the new version, the rest old
        ("conda-lock.yml",),  # conda-lock.yml new, explicit files old
        ("requirements.lock",),
        ("conda-lock.yml", "conda-linux-64.lock", "conda-linux-aarch64.lock", "requirements.lock"),
        (
            "conda-lock.yml",
            "conda-linux-64.lock",
            "conda-linux-aarch64.lock",
            "environment.yml",
            "requirements.lock",
        ),
    ],
)
def test_a_mixed_set_of_old_and_new_files_is_not_fresh(project: Path, mixed: tuple[str, ...]) -> None:
    out = _lock(project)
    newer = _lock(project, "2.0.0", H2, out=project / "newer")
    for name in mixed:  # the files an interrupted relock had already replaced; lockset.json is old
        shutil.copyfile(newer / name, out / name)
    _assert_not_fresh(project, "changed after it was locked")


def test_interrupted_while_writing_leaves_no_fresh_set_and_a_relock_repairs_it(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _lock(project)
    from envkit._atomic import write_bytes_atomic as real

    calls: list[Path] = []

    def interrupted(path: Path, data: bytes, *, mode: int = 0o644) -> bool:
        calls.append(path)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(path, data, mode=mode)

    monkeypatch.setattr("envkit.lock.locker.write_bytes_atomic", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _lock(project, "2.0.0", H2)
    monkeypatch.setattr("envkit.lock.locker.write_bytes_atomic", real)
    _assert_not_fresh(project, "changed after it was locked")
    _lock(project, "2.0.0", H2)
    assert _state(project)[0] == "fresh"


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        (lambda out: (out / MANIFEST).unlink(), "lockset.json is missing"),
        (lambda out: (out / MANIFEST).write_text("{not json", "utf-8"), "not valid JSON"),
        (lambda out: (out / MANIFEST).write_text("[]", "utf-8"), "not an envkit lock manifest"),
        (lambda out: (out / MANIFEST).write_text('{"version": 1, "files": {"a": 1}}', "utf-8"), "manifest"),
        (lambda out: (out / MANIFEST).write_text("[" * 100_000, "utf-8"), "too large"),
        (lambda out: _manifest_field(out, "sha256", "0" * 64), "digest over the set"),
        (lambda out: _manifest_field(out, "files", {"conda-lock.yml": "0" * 64}), "lists conda-lock.yml"),
    ],
)
def test_a_missing_or_forged_manifest_is_not_fresh(
    project: Path, damage: Callable[[Path], object], words: str
) -> None:
    damage(_lock(project))
    _assert_not_fresh(project, words)


def _manifest_field(out: Path, key: str, value: object) -> None:
    data = json.loads((out / MANIFEST).read_text("utf-8"))
    data[key] = value
    (out / MANIFEST).write_text(json.dumps(data), "utf-8")


# -- 16.11: the content is verified, not the header ---------------------------------------------


def _cut(fraction: float) -> Callable[[str], str]:
    return lambda text: text[: int(len(text) * fraction)]


CONTENT_CASES: dict[str, tuple[str, Callable[[str], str], str]] = {
    # name: (file, edit, words in the reason once lockset.json is forged to match)
    "explicit hash edited": ("conda-linux-64.lock", lambda t: t.replace(M1, M2, 1), "conda-linux-64.lock"),
    "explicit emptied to its header": (
        "conda-linux-64.lock",
        lambda t: "".join(t.splitlines(keepends=True)[:2]),
        "conda-linux-64.lock",
    ),
    "explicit line dropped": (
        "conda-linux-aarch64.lock",
        lambda t: "".join(line for line in t.splitlines(keepends=True) if "numpy" not in line),
        "conda-linux-aarch64.lock",
    ),
    "conda-lock version edited": (
        "conda-lock.yml",
        lambda t: t.replace("version: 1.26.4", "version: 1.26.5"),
        "environment.yml",
    ),
    "conda-lock pip version edited": (
        "conda-lock.yml",
        lambda t: t.replace("version: 0.1.26.4", "version: 0.1.26.5"),
        "requirements.lock does not pin",
    ),
    "conda-lock hash emptied": ("conda-lock.yml", lambda t: t.replace(f"md5: {M1}", "md5: ''"), "md5"),
    "conda-lock sha256 garbled": (
        "conda-lock.yml",
        lambda t: t.replace(f"sha256: {H1}", "sha256: xyz"),
        "sha256",
    ),
    "conda-lock truncated": ("conda-lock.yml", _cut(0.5), "conda-lock"),
    "conda-lock truncated to its header": ("conda-lock.yml", _cut(0.02), "conda-lock"),
    "conda-lock content_hash edited": (
        "conda-lock.yml",
        lambda t: re.sub(r"(\n +linux-64: )[0-9a-f]{64}", r"\g<1>" + "0" * 64, t),
        "content_hash",
    ),
    "requirements truncated mid-hash": ("requirements.lock", _cut(0.8), "requirements.lock"),
    "requirements emptied to its header": (
        "requirements.lock",
        lambda t: "".join(t.splitlines(keepends=True)[:2]),
        "requirements.lock",
    ),
    "requirements hash dropped": (
        "requirements.lock",
        lambda t: t.replace(f" \\\n    --hash=sha256:{H1}", "").replace(f"    --hash=sha256:{H1} \\\n", ""),
        "requirements.lock",
    ),
    "requirements pin without hashes": (
        "requirements.lock",
        lambda t: t + "evil==6.6.6\n",
        "requirements.lock",
    ),
    "requirements version edited": (
        "requirements.lock",
        lambda t: t.replace("==0.1.26.4", "==0.1.26.5"),
        "requirements",
    ),
    "environment.yml edited": (
        "environment.yml",
        lambda t: t.replace("numpy=1.26.4", "numpy=2"),
        "environment.yml",
    ),
}


@pytest.mark.parametrize("case", sorted(CONTENT_CASES))
def test_hand_edited_or_truncated_files_are_not_fresh(project: Path, case: str) -> None:
    name, change, words = CONTENT_CASES[case]
    out = _lock(project)
    before = (out / name).read_text("utf-8")
    _edit(out / name, change)
    assert (out / name).read_text("utf-8") != before, "the edit changed nothing"
    _assert_not_fresh(project, f"{name} changed after it was locked")
    _forge_manifest(project)  # the manifest alone is not the check
    _assert_not_fresh(project, words)


def test_frozen_build_refuses_a_truncated_requirements_lock_and_never_installs_unhashed(
    project: Path,
) -> None:
    from envkit.build.builder import Builder, BuildOptions
    from envkit.engine.testing import FakeEngine
    from envkit.errors import UsageError
    from envkit.lock.fresh import EnvLocker

    out = _lock(project)
    _edit(out / "requirements.lock", lambda t: "".join(t.splitlines(keepends=True)[:2]))
    _forge_manifest(project)
    locker = EnvLocker(_conda("1.26.4", H1), _pip("1.26.4", H1))
    builder = Builder(FakeEngine(), project, locker=locker)
    with pytest.raises(UsageError, match=r"requirements\.lock"):
        builder.prepare(_loaded(project), BuildOptions(frozen=True))
    plan = builder.prepare(_loaded(project), BuildOptions())  # relocks first
    dockerfile = {e.path: e.data for e in plan.context.entries}["Dockerfile"]
    assert plan.relocked and dockerfile is not None and b"--require-hashes" in dockerfile
    assert b"alpha==0.1.26.4" in (out / "requirements.lock").read_bytes()


def test_the_image_label_hashes_the_files_the_image_installs_from(project: Path) -> None:
    out = _lock(project)
    state = current_lock(_loaded(project), out)
    assert state.lock is not None
    assert set(state.lock.install_files) == {
        "conda-linux-64.lock",
        "conda-linux-aarch64.lock",
        "requirements.lock",
    }
    assert state.lock_sha256 == set_digest(state.lock.files)
    assert set(state.lock.install_files) <= set(state.lock.files)
    # one changed byte in a file the image installs from changes the label
    files = dict(state.lock.files)
    files["conda-linux-64.lock"] += b"\n"
    assert set_digest(files) != state.lock_sha256


def test_relock_over_a_corrupt_conda_lock_recovers_without_a_circular_hint(project: Path) -> None:
    out = _lock(project)
    (out / "conda-lock.yml").write_text("package: [\n", "utf-8")
    result = lock_environment(_loaded(project), out, _conda("1.26.4", H1), _pip("1.26.4", H1))
    assert result.state.fresh and any("unreadable" in w for w in result.warnings)
