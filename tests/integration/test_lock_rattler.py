"""Real solves: py-rattler against a generated file:// channel, uv against a local wheel directory."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from envkit.cli import main
from envkit.errors import Unsatisfiable
from envkit.lock.conda import RattlerSolver
from envkit.lock.lockfile import parse_conda_lock_file
from envkit.lock.solver import CondaRequest, VirtualPackage
from envkit.lock.testing import Record, make_channel, make_wheel, realistic_records, write_channel

BASE = """name: demo
python: "{python}"
cuda: "{cuda}"
conda:
{conda}
pip:
  - alpha
channels: ["{channel}"]
platforms: [linux-64, linux-aarch64]
mirrors:
  pypi: "{wheels}"
"""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("world")
    wheels = root / "wheels"
    make_wheel(wheels, "alpha", "1.0", ["beta>=1"])
    make_wheel(wheels, "beta", "1.0")
    make_wheel(wheels, "beta", "2.0")
    return {"channel": make_channel(root / "channel"), "wheels": wheels.as_uri()}


def _project(tmp_path: Path, world: dict[str, str], monkeypatch: pytest.MonkeyPatch, **kw: str) -> Path:
    values = {"python": "3.11", "cuda": "12.1", "conda": "  - pytorch\n  - numpy", **world, **kw}
    (tmp_path / "environments").mkdir(exist_ok=True)
    (tmp_path / "environments" / "demo.yaml").write_text(BASE.format(**values))
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path))
    return tmp_path / "images" / "demo"


def _pins(out: Path, platform: str = "linux-64") -> dict[str, str]:
    lock = parse_conda_lock_file(out / "conda-lock.yml")
    return {
        d.name: f"{d.version}={d.build}"
        for d in lock.package
        if d.platform == platform and d.manager == "conda"
    }


@pytest.mark.parametrize(
    ("python", "cuda", "build"),
    [
        ("3.11", "12.1", "cuda120_py311"),
        ("3.11", "11.8", "cuda118_py311"),
        ("3.11", "cpu", "cpu_py311"),
        # the channel's best-ranked CUDA build is a py311 one: a 3.10 lock must take the py310 twin
        ("3.10", "12.1", "cuda120_py310"),
        ("3.10", "11.8", "cuda118_py310"),
        ("3.10", "cpu", "cpu_py310"),
    ],
)
def test_cuda_variant_follows_the_spec(
    tmp_path: Path, world: dict[str, str], monkeypatch: pytest.MonkeyPatch, python: str, cuda: str, build: str
) -> None:
    out = _project(tmp_path, world, monkeypatch, python=python, cuda=cuda)
    assert main(["lock", "demo"]) == 0
    for platform in ("linux-64", "linux-aarch64"):
        assert _pins(out, platform)["pytorch"].split("=")[1].startswith(build)


@pytest.mark.parametrize(
    ("specs", "build"),
    [
        (("pytorch=*=cpu*",), "cpu_py311"),  # the spec's own pin: no CUDA build is a candidate
        (("pytorch * cpu*", "numpy <2"), "cpu_py311"),
        (("pytorch * cuda118*",), "cuda118_py311"),  # against the CUDA constraint: unsatisfiable
    ],
)
def test_variant_pins_respect_the_requests_own_specs(
    world: dict[str, str], specs: tuple[str, ...], build: str
) -> None:
    request = CondaRequest(
        specs=("python 3.11.*", *specs),
        channels=(world["channel"],),
        platform="linux-64",
        virtual_packages=(VirtualPackage("__cuda", "12.1"), VirtualPackage("__glibc", "2.35")),
        cuda="12.1",
    )
    if build.startswith("cuda118"):
        with pytest.raises(Unsatisfiable):
            RattlerSolver().solve(request)
        return
    solution = RattlerSolver().solve(request)
    assert {p.name: p.build for p in solution.packages}["pytorch"].startswith(build)
    assert solution.warnings == ()  # was "could not pin the CUDA 12.1 builds (pytorch ==… cuda120_py311h_0)"


def test_lock_is_complete_hashed_and_byte_stable(
    tmp_path: Path, world: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _project(tmp_path, world, monkeypatch, python="3.10", conda="  - numpy\n  - libblas * *mkl")
    assert main(["lock", "demo"]) == 0
    before = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    lock = parse_conda_lock_file(out / "conda-lock.yml")
    channel_dir = Path(world["channel"].removeprefix("file://"))
    for dep in lock.package:
        if dep.manager == "conda":  # the channel's own hashes, verified against its repodata
            subdir, filename = dep.url.rsplit("/", 2)[-2:]
            repodata = json.loads((channel_dir / subdir / "repodata.json").read_text())
            assert repodata["packages"][filename]["sha256"] == dep.hash.sha256
            assert repodata["packages"][filename]["md5"] == dep.hash.md5
    pins = _pins(out)
    assert pins["python"].startswith("3.10.") and pins["libblas"].endswith("_mkl") and "mkl" in pins
    wheel_hashes = {
        p.name: __import__("hashlib").sha256(p.read_bytes()).hexdigest()
        for p in (channel_dir.parent / "wheels").iterdir()
    }
    req = (out / "requirements.lock").read_text()
    assert f"--hash=sha256:{wheel_hashes['alpha-1.0-py3-none-any.whl']}" in req
    assert "beta==2.0" in req
    env = (out / "environment.yml").read_text()
    assert re.search(r"- numpy=1\.26\.4=py310\w+", env) or re.search(r"- numpy=2\.1\.3=py310\w+", env)
    assert main(["lock", "demo"]) == 0
    assert before == {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    capsys.readouterr()
    assert main(["lock", "demo", "--check"]) == 0
    (tmp_path / "environments" / "demo.yaml").write_text(
        (tmp_path / "environments" / "demo.yaml").read_text().replace("- numpy", "- numpy >=1.20")
    )
    assert main(["lock", "demo", "--check"]) == 1


def test_update_moves_only_that_package(
    tmp_path: Path, world: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _project(tmp_path, world, monkeypatch, conda="  - numpy <2\n  - libblas")
    assert main(["lock", "demo"]) == 0
    first = _pins(out)
    assert first["numpy"].startswith("1.26.4")
    spec = tmp_path / "environments" / "demo.yaml"
    spec.write_text(spec.read_text().replace("- numpy <2", "- numpy"))
    assert main(["lock", "demo"]) == 0
    assert _pins(out)["numpy"].startswith("1.26.4")  # the previous lock is preferred
    assert main(["lock", "demo", "--update", "numpy"]) == 0
    after = _pins(out)
    assert after["numpy"].startswith("2.1.3")
    assert {k: v for k, v in after.items() if k != "numpy"} == {
        k: v for k, v in first.items() if k != "numpy"
    }


def test_conflict_is_explained(
    tmp_path: Path, world: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(tmp_path, world, monkeypatch, conda="  - pytorch\n  - numpy >=2")
    assert main(["lock", "demo"]) == 2
    err = capsys.readouterr().err
    assert "cannot all be satisfied" in err and "numpy >=2" in err and "pytorch" in err
    assert "Traceback" not in err


def test_unreachable_channel_hints_at_mirrors(
    tmp_path: Path, world: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(tmp_path, world, monkeypatch, channel=(tmp_path / "nowhere").as_uri())
    assert main(["lock", "demo"]) == 3
    assert "mirror" in capsys.readouterr().err


def test_tampered_local_package_is_refused(
    tmp_path: Path, world: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    channel = tmp_path / "channel"
    url = make_channel(channel, ("linux-64",))
    target = next((channel / "linux-64").glob("numpy-1.26.4-py311*.tar.bz2"))
    target.write_bytes(target.read_bytes() + b"x")
    _project(tmp_path, world, monkeypatch, channel=url, conda="  - numpy <2")
    spec = tmp_path / "environments" / "demo.yaml"
    spec.write_text(spec.read_text().replace("linux-64, linux-aarch64", "linux-64"))
    assert main(["lock", "demo"]) == 3
    assert "does not match the channel's repodata" in capsys.readouterr().err


def test_render_uses_a_fresh_lock_and_keeps_its_environment_yml(
    tmp_path: Path, world: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _project(tmp_path, world, monkeypatch)
    assert main(["lock", "demo"]) == 0
    pinned = (out / "environment.yml").read_bytes()
    assert main(["render", "demo"]) == 0
    assert (out / "environment.yml").read_bytes() == pinned
    dockerfile = (out / "Dockerfile").read_text()
    assert (
        "conda-linux-64.lock" in dockerfile
        and "--require-hashes" in dockerfile
        and "lock-sha256" in dockerfile
    )
    spec = tmp_path / "environments" / "demo.yaml"
    spec.write_text(spec.read_text().replace('cuda: "12.1"', 'cuda: "11.8"'))
    capsys.readouterr()
    assert main(["render", "demo"]) == 0
    assert "stale" in capsys.readouterr().err
    assert "conda-linux-64.lock" not in (out / "Dockerfile").read_text()


class _Counting(RattlerSolver):
    """The real solver, counting its py-rattler solves."""

    solves = 0

    async def _run(self, *args: Any, **kw: Any) -> list[Any]:
        self.solves += 1
        return await super()._run(*args, **kw)


def _request(channel: str, python: str, cuda: str | None, *specs: str) -> CondaRequest:
    virtual = (VirtualPackage("__glibc", "2.35"), *((VirtualPackage("__cuda", cuda),) if cuda else ()))
    return CondaRequest(
        specs=(f"python {python}.*", *specs), channels=(channel,), platform="linux-64",
        virtual_packages=virtual, cuda=cuda,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("python", "cuda", "build"),
    [("3.11", "12.1", "cuda120_py311"), ("3.10", "11.8", "cuda118_py310"), ("3.11", None, "cpu_py311")],
)
def test_the_variant_preference_makes_one_solve_enough(
    world: dict[str, str], python: str, cuda: str | None, build: str
) -> None:
    solver = _Counting()
    solution = solver.solve(_request(world["channel"], python, cuda, "pytorch", "numpy"))
    assert {p.name: p.build for p in solution.packages}["pytorch"].startswith(build)
    assert solver.solves == 1  # was 2 for both CUDA rows: solve, then re-solve with the CUDA build pinned


def test_a_dependencys_variant_is_still_pinned_by_a_second_solve(tmp_path: Path) -> None:
    """``bar`` needs ``libfoo``, whose builds come in CPU and CUDA variants: not known before the solve."""
    extra = [Record("bar", "1.0", "h0_0", "linux-64", ("libfoo 1.0",))] + [
        Record("libfoo", "1.0", build, "linux-64", depends)
        for build, depends in (("cpu_h0", ()), ("cuda120_h0", ("cuda-version >=12.0,<13",)))
    ]
    channel = write_channel(tmp_path / "channel", [*realistic_records(("linux-64",)), *extra])
    solver = _Counting()
    solution = solver.solve(_request(channel, "3.11", "12.1", "bar"))
    assert {p.name: p.build for p in solution.packages}["libfoo"] == "cuda120_h0"
    assert solver.solves == 2
    assert solution.warnings == ()
