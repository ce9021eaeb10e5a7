"""The layer contract (``lint-imports``, pyproject.toml ``[tool.importlinter]``) holds and bites.

The real tree keeps every contract; a copy with one upward import (the engine importing the
build stage, probe importing fleet; init --from's readers importing the catalog or its plan)
breaks a contract and ``lint-imports`` exits non-zero naming the arrow, so a change that makes an
arrow run up fails ``make lint``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=tree, env=env, capture_output=True, text=True, check=False
    )


def _copy(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "envkit", tree / "envkit", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
    return tree


def test_the_tree_keeps_its_layers() -> None:
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "stages import only downwards KEPT" in done.stdout


@pytest.mark.parametrize(
    ("module", "line", "arrow"),
    [
        (
            "engine/protocol.py",
            "import envkit.build.builder",
            "envkit.engine is not allowed to import envkit.build",
        ),
        (
            "probe/model.py",
            "from envkit.fleet import manifest",
            "envkit.probe is not allowed to import envkit.fleet",
        ),
        (
            "probe/run.py",
            "import envkit.comparison.nway",
            "envkit.probe is not allowed to import envkit.comparison",
        ),
        (
            "store/layout.py",
            "import envkit.probe.model",
            "envkit.store is not allowed to import envkit.probe",
        ),
        (
            "store/runs.py",
            "import envkit.fleet.run_plan",
            "envkit.store is not allowed to import envkit.fleet",
        ),
        (
            "pack/packer.py",
            "import envkit.build.builder",
            "envkit.pack is not allowed to import envkit.build",
        ),
        ("errors.py", "import envkit.spec.load", "envkit.errors is not allowed to import envkit.spec"),
        (
            "reproduce/layers.py",
            "import envkit.verify.image",
            "envkit.reproduce is not allowed to import envkit.verify",
        ),
        (
            "render/dockerfile.py",
            "import envkit.reproduce.normalize",
            "envkit.render is not allowed to import envkit.reproduce",
        ),
        (
            "engine/protocol.py",
            "import envkit.reproduce.image_diff",
            "envkit.engine is not allowed to import envkit.reproduce",
        ),
        ("verify/image.py", "import envkit.cli", "envkit.verify is not allowed to import envkit.cli"),
        (
            "verify/image.py",
            "import envkit.probe.run",
            "envkit.verify is not allowed to import envkit.probe",
        ),
        (
            "payload/__init__.py",
            "import envkit.engine.protocol",
            "envkit.payload is not allowed to import envkit.engine",
        ),
        (  # init --from reads the source without the catalog, and before the plan
            "adopt/sources/requirements.py",
            "import envkit.catalog",
            "envkit.adopt.sources is not allowed to import envkit.catalog",
        ),
        (
            "adopt/facts.py",
            "import envkit.adopt.releases",
            "envkit.adopt.facts is not allowed to import envkit.adopt.releases",
        ),
        ("init/starter.py", "import envkit.adopt.plan", "envkit.init is not allowed to import envkit.adopt"),
    ],
)
def test_an_upward_import_breaks_the_contract(tmp_path: Path, module: str, line: str, arrow: str) -> None:
    tree = _copy(tmp_path)
    assert _lint(tree).returncode == 0  # the copy itself is clean
    path = tree / "envkit" / module
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}  # noqa\n", encoding="utf-8")
    done = _lint(tree)
    assert done.returncode != 0
    assert arrow in done.stdout, done.stdout
