"""Locking with fake solvers: file formats, byte stability, freshness, preferences."""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.catalog import load_catalog
from envkit.lock import CondaPackage, PipPackage, current_lock, lock_environment
from envkit.lock.conda_variants import variant_score
from envkit.lock.inputs import lock_inputs
from envkit.lock.lockfile import explicit_file, parse_conda_lock_file, requirements_lock
from envkit.lock.testing import FakeCondaSolver, FakePipResolver
from envkit.render import DockerfileInputs
from envkit.spec.load import load_spec

SHA = "ab" * 32


def _pkg(name: str, version: str, platform: str, depends: tuple[str, ...] = ()) -> CondaPackage:
    return CondaPackage(
        name, version, "h0", f"https://example.org/ch/{platform}/{name}-{version}-h0.conda", "cd" * 16, SHA,
        platform, platform, depends,
    )  # fmt: skip


def _spec(root: Path, extra: str = "") -> Path:
    (root / "environments").mkdir(parents=True, exist_ok=True)
    path = root / "environments" / "demo.yaml"
    path.write_text(
        'name: demo\npython: "3.11"\ncuda: "12.1"\nconda:\n  - numpy\npip:\n  - alpha\n'
        "platforms: [linux-64, linux-aarch64]\n" + extra
    )
    return path


def _solvers() -> tuple[FakeCondaSolver, FakePipResolver]:
    conda = FakeCondaSolver(
        {
            p: (_pkg("python", "3.11.9", p), _pkg("numpy", "1.26.4", p, ("python >=3.11,<3.12",)))
            for p in ("linux-64", "linux-aarch64")
        }
    )
    pip = FakePipResolver(
        (PipPackage("alpha", "1.0", "https://example.org/alpha-1.0.whl", (SHA, "ef" * 32)),)
    )
    return conda, pip


def test_lock_writes_parseable_byte_stable_files(tmp_path: Path) -> None:
    loaded = load_spec(_spec(tmp_path))
    out = tmp_path / "images" / "demo"
    conda, pip = _solvers()
    first = lock_environment(loaded, out, conda, pip)
    assert set(first.changed) == {"conda-lock.yml", "conda-linux-64.lock", "conda-linux-aarch64.lock"} | {
        "environment.yml",
        "requirements.lock",
        "lockset.json",
    }
    assert first.state.fresh and first.state.lock_sha256 == first.lock_sha256
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    second = lock_environment(loaded, out, conda, pip)
    assert second.changed == ()
    assert before == {p.name: p.read_bytes() for p in out.iterdir()}
    parsed = parse_conda_lock_file(out / "conda-lock.yml")
    numpy = [d for d in parsed.package if d.name == "numpy" and d.platform == "linux-64"]
    assert numpy[0].hash.sha256 == SHA and numpy[0].hash.md5 == "cd" * 16
    assert numpy[0].dependencies == {"python": ">=3.11,<3.12"}
    assert {d.manager for d in parsed.package} == {"conda", "pip"}
    digest = lock_inputs(loaded.resolved).sha256
    for name, data in before.items():
        if name == "lockset.json":
            continue
        assert f"lock inputs sha256 {digest}" in data.decode().splitlines()[0], name
    # the request carried the spec's virtual packages and CUDA
    request = conda.requests[0]
    assert request.cuda == "12.1"
    assert ("__cuda", "12.1") in {(v.name, v.version) for v in request.virtual_packages}
    assert pip.requests[0].python_platform.startswith("x86_64-manylinux_2_")


def test_previous_lock_is_the_preference_and_update_releases_it(tmp_path: Path) -> None:
    loaded = load_spec(_spec(tmp_path))
    out = tmp_path / "images" / "demo"
    conda, pip = _solvers()
    lock_environment(loaded, out, conda, pip)
    lock_environment(loaded, out, conda, pip, update=("numpy",))
    preferred = {p.name for p in conda.requests[-1].preferred}
    assert preferred == {"python"}
    assert pip.requests[-1].upgrade == ("numpy",)
    lock_environment(loaded, out, conda, pip)
    assert {p.name for p in conda.requests[-1].preferred} == {"numpy", "python"}


def test_update_matches_names_as_pip_normalizes_them(tmp_path: Path) -> None:
    """``--update typing-extensions`` releases conda's ``typing_extensions`` too."""
    loaded = load_spec(_spec(tmp_path))
    out = tmp_path / "images" / "demo"
    conda, pip = _solvers()
    conda.packages = {p: (*v, _pkg("typing_extensions", "4.12.2", p)) for p, v in conda.packages.items()}
    lock_environment(loaded, out, conda, pip)
    lock_environment(loaded, out, conda, pip, update=("Typing-Extensions",))
    assert {p.name for p in conda.requests[-1].preferred} == {"numpy", "python"}
    assert pip.requests[-1].upgrade == ("typing-extensions",)


def test_check_tells_fresh_stale_and_missing(tmp_path: Path) -> None:
    path = _spec(tmp_path)
    out = tmp_path / "images" / "demo"
    loaded = load_spec(path)
    assert current_lock(loaded, out).status == "missing"
    lock_environment(loaded, out, *_solvers())
    state = current_lock(loaded, out)
    assert state.fresh and state.pip_lock == "requirements.lock"
    assert state.conda_locks == ("conda-linux-64.lock", "conda-linux-aarch64.lock")
    inputs = DockerfileInputs.from_lock(loaded.sha256, state)
    assert inputs.lock_sha256 == state.lock_sha256 and inputs.conda_locks
    changed = load_spec(_spec(tmp_path, "channels: [conda-forge, bioconda]\n"))
    assert current_lock(changed, out).status == "stale"
    assert DockerfileInputs.from_lock(changed.sha256, current_lock(changed, out)).conda_locks == ()
    (out / "conda-linux-aarch64.lock").unlink()
    assert current_lock(loaded, out).status == "stale"


def test_explicit_file_lists_dependencies_first() -> None:
    pkgs = [
        _pkg("zlib", "1", "linux-64"),
        _pkg("numpy", "1", "linux-64", ("python",)),
        _pkg("python", "3", "linux-64", ("zlib",)),
    ]
    text = explicit_file("# h\n", "linux-64", pkgs)
    body = text.splitlines()
    assert body[:3] == ["# h", "# platform: linux-64", "@EXPLICIT"]
    names = [line.rsplit("/", 1)[1].split("-")[0] for line in body[3:]]
    assert names == ["zlib", "python", "numpy"]
    assert all(line.endswith("#" + "cd" * 16) for line in body[3:])  # md5: every catalog conda reads it


def test_requirements_lock_marks_platform_specific_versions() -> None:
    a = PipPackage("alpha", "1.0", "u", ("11" * 32,))
    b = PipPackage("alpha", "2.0", "u", ("22" * 32,))
    text = requirements_lock("", {"linux-64": [a], "linux-aarch64": [b]}, ["--extra-index-url https://x"])
    assert text.startswith("--extra-index-url https://x\n")
    assert 'alpha==1.0 ; platform_machine == "x86_64" \\\n    --hash=sha256:' + "11" * 32 in text
    assert 'alpha==2.0 ; platform_machine == "aarch64"' in text


@pytest.mark.parametrize(
    ("build", "depends", "cuda", "expected"),
    [
        ("cuda118_py311h_0", ["__cuda", "cuda-version >=11.8,<12"], "12.1", -1),
        ("cuda120_py311h_0", ["__cuda", "cuda-version >=12.0,<13"], "12.1", 3),
        ("cpu_py311h_0", [], "12.1", 0),
        ("cuda121_0", ["__cuda"], "12.1", 3),
        ("cuda120_0", ["__cuda"], "12.4", 2),
        ("cpu_py311h_0", [], None, 1),
        ("cuda118_0", ["__cuda"], None, 0),
    ],
)
def test_variant_score(build: str, depends: list[str], cuda: str | None, expected: int) -> None:
    assert variant_score(build, depends, cuda) == expected


def test_lock_glibc_follows_the_image_the_dockerfile_uses(tmp_path: Path) -> None:
    """The lock's __glibc comes from the same runtime image render picks (cuDNN major included)."""
    from envkit.lock.virtual import glibc_for
    from envkit.spec.load import load_spec

    path = tmp_path / "gpu.yaml"
    path.write_text('name: gpu\npython: "3.10"\ncuda: "11.8"\nframeworks: {paddle: "2.6.2"}\n')
    loaded = load_spec(path)
    catalog = load_catalog()
    image = catalog.base_image(loaded.resolved.runtime_ref)
    assert image is not None and image.cudnn == "8" and loaded.resolved.base == image
    assert glibc_for(loaded.resolved) == "2.35"  # ubuntu22.04


@pytest.mark.parametrize(
    ("stderr", "unreachable"),
    [
        ("error: Failed to fetch: `https://pypi.example/simple/six/`\n  Caused by: dns error", True),
        ("error: Request failed after 3 retries\n  Caused by: error sending request for url", True),
        ("error: HTTP status client error (403 Forbidden) for url (https://idx/simple/six/)", True),
        ("error: Failed to parse: `six==1.16.0; python_version >= '404'`", False),
        ("error: No solution found when resolving dependencies:\n  six==99 is unavailable", False),
    ],
)
def test_uv_errors_are_classified(stderr: str, unreachable: bool) -> None:
    from envkit.lock.pip import _translate
    from envkit.lock.solver import PipRequest

    request = PipRequest(
        requirements=("six",), python_version="3.11", python_platform="x86_64-manylinux_2_35"
    )
    error = _translate(stderr, request)
    assert ("could not reach the package index" in error.message) is unreachable
