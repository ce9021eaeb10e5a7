"""The pip part resolves beside the conda part (uv is a child process): same results, same errors.

A sequential lock solves conda, then pip, platform by platform, and stops at the first failure;
the overlapped one must raise that same first error, write nothing, and leave no resolver running.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from envkit.errors import EnvkitError, SolverFailed, Unsatisfiable
from envkit.lock import CondaPackage, PipPackage, lock_environment
from envkit.lock.solver import CondaRequest, CondaSolution, PipRequest
from envkit.spec.load import load_spec

PLATFORMS = ("linux-64", "linux-aarch64")
SPEC = (
    'name: demo\npython: "3.11"\ncuda: cpu\ninstaller: miniforge\nconda: [numpy]\npip: [alpha]\n'
    "platforms: [linux-64, linux-aarch64]\n"
)
H = "a1" * 32


@dataclass
class Conda:
    fail_on: str | None = None
    wait_for: threading.Event | None = None  # set by the pip resolver: it runs while this solves
    seen: list[str] = field(default_factory=list)

    def solve(self, request: CondaRequest) -> CondaSolution:
        self.seen.append(request.platform)
        if self.wait_for is not None:
            assert self.wait_for.wait(30), "the pip part did not start while the conda part solved"
        if request.platform == self.fail_on:
            raise Unsatisfiable(f"conda {request.platform}", hint="relax it")
        p = request.platform
        return CondaSolution(
            (CondaPackage("numpy", "1.26.4", "h0", f"https://x/{p}/numpy.conda", "", H, p, p),)
        )


@dataclass
class Pip:
    fail_on: str | None = None
    started: threading.Event | None = None
    seen: list[str] = field(default_factory=list)

    def resolve(self, request: PipRequest) -> tuple[PipPackage, ...]:
        platform = "linux-64" if "x86_64" in request.python_platform else "linux-aarch64"
        self.seen.append(platform)
        if self.started is not None:
            self.started.set()
        if platform == self.fail_on:
            raise SolverFailed(f"pip {platform}", hint="check the index")
        return (PipPackage("alpha", "1.0", "https://x/alpha-1.0-py3-none-any.whl", (H,)),)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "environments").mkdir()
    (tmp_path / "environments" / "demo.yaml").write_text(SPEC, "utf-8")
    return tmp_path


def _lock(root: Path, conda: Conda, pip: Pip) -> None:
    lock_environment(load_spec(root / "environments" / "demo.yaml"), root / "images" / "demo", conda, pip)


def _no_resolver_left() -> bool:
    return not any(t.name.startswith("envkit-pip") for t in threading.enumerate())


def test_the_pip_part_resolves_while_the_conda_part_solves(root: Path) -> None:
    started = threading.Event()
    conda, pip = Conda(wait_for=started), Pip(started=started)
    _lock(root, conda, pip)
    assert conda.seen == list(PLATFORMS)
    assert sorted(pip.seen) == sorted(PLATFORMS)
    assert (root / "images" / "demo" / "lockset.json").is_file()
    assert _no_resolver_left()


@pytest.mark.parametrize(
    ("conda_fails", "pip_fails", "expected"),
    [
        ("linux-64", None, "conda linux-64"),
        (None, "linux-64", "pip linux-64"),
        ("linux-64", "linux-64", "conda linux-64"),  # conda first, as a sequential lock meets them
        ("linux-aarch64", "linux-64", "pip linux-64"),  # the first platform's pip error comes first
        ("linux-aarch64", None, "conda linux-aarch64"),
        (None, "linux-aarch64", "pip linux-aarch64"),
        ("linux-aarch64", "linux-aarch64", "conda linux-aarch64"),
    ],
)
def test_the_first_error_of_a_sequential_lock_is_raised_and_nothing_is_written(
    root: Path, conda_fails: str | None, pip_fails: str | None, expected: str
) -> None:
    with pytest.raises(EnvkitError) as caught:
        _lock(root, Conda(fail_on=conda_fails), Pip(fail_on=pip_fails))
    assert caught.value.message == expected
    assert not (root / "images" / "demo").exists()
    assert _no_resolver_left()


def test_an_interrupt_in_the_conda_solve_leaves_no_resolver_running(root: Path) -> None:
    class Interrupted(Conda):
        def solve(self, request: CondaRequest) -> CondaSolution:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _lock(root, Interrupted(), Pip())
    assert _no_resolver_left()
