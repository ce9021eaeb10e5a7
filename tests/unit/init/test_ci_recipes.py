"""The CI recipes `envkit init --ci` writes: valid YAML that runs `make env-check`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from envkit.init import init_repo

SOURCE = "git+https://github.com/example/envkit@" + "0123456789abcdef" * 2 + "01234567"

_SHA_PIN = re.compile(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}")


def test_github_workflow(repo: Path) -> None:
    result = init_repo(repo, "torch", "cpu", ci="github", source=SOURCE)
    path = repo / ".github" / "workflows" / "envkit.yml"
    assert any(f.path == ".github/workflows/envkit.yml" and f.status == "created" for f in result.files)
    text = path.read_text()
    workflow: dict[Any, Any] = yaml.safe_load(text)
    assert workflow["permissions"] == {"contents": "read"}
    # YAML 1.1 reads the bare key `on` as True
    triggers: dict[str, Any] = workflow["on"] if "on" in workflow else workflow[True]
    assert "pull_request" in triggers
    job = workflow["jobs"]["env-check"]
    steps = job["steps"]
    uses = [s["uses"] for s in steps if "uses" in s]
    assert uses
    assert all(_SHA_PIN.fullmatch(u) for u in uses), uses
    assert any(u.startswith("actions/checkout@") for u in uses)
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["persist-credentials"] is False
    runs = [s["run"] for s in steps if "run" in s]
    assert any(r.startswith("make env-check") for r in runs)
    assert job["env"]["ENVKIT_PIP_SPEC"] == f"envkit-dl @ {SOURCE}"  # pinned, never a bare name
    assert "${{" not in "".join(runs)  # no expression injection into shell lines


def test_gitlab_include(repo: Path) -> None:
    init_repo(repo, "torch", "cpu", ci="gitlab", source=SOURCE)
    path = repo / ".gitlab-ci-envkit.yml"
    config: dict[str, Any] = yaml.safe_load(path.read_text())
    job = config["envkit-check"]
    assert any(line.startswith("make env-check") for line in job["script"])
    assert job["artifacts"]["when"] == "always"
    assert "@@" not in path.read_text()
    assert not (repo / ".gitlab-ci.yml").exists()  # an includable file, never the project's own config


def test_existing_workflow_is_not_clobbered(repo: Path) -> None:
    target = repo / ".github" / "workflows" / "envkit.yml"
    target.parent.mkdir(parents=True)
    target.write_text("name: ours\n")
    result = init_repo(repo, "torch", "cpu", ci="github", source=SOURCE)
    assert target.read_text() == "name: ours\n"
    assert any(".github/workflows/envkit.yml" in w for w in result.warnings)


def test_github_workflow_passes_zizmor(repo: Path) -> None:
    """zizmor (GitHub Actions security linter, test extra) finds nothing in the generated workflow."""
    import subprocess
    import sys

    init_repo(repo, "torch", "cpu", ci="github", source=SOURCE)
    zizmor = Path(sys.executable).parent / "zizmor"
    assert zizmor.exists(), "zizmor is missing: install the test extra"
    done = subprocess.run(
        [str(zizmor), "--offline", "--format", "plain", str(repo / ".github" / "workflows" / "envkit.yml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No findings to report" in done.stdout + done.stderr
