"""The Docker SDK (``import docker``) is imported inside ``envkit/engine/`` only: the one engine seam.

Every import statement in every module of ``envkit/`` is read (module level, inside functions, and
``importlib.import_module("docker...")``); one outside the engine package fails this test, naming
the file and line. There is no allow-list: the last offender (``reproduce/archive.py``, save/load
with its own Docker adapter) moved behind the engine (issue 35, item 2).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[3] / "envkit"
ENGINE = PACKAGE / "engine"


def _is_docker(module: str | None) -> bool:
    return module is not None and (module == "docker" or module.startswith("docker."))


def _imported(node: ast.AST) -> list[str]:
    """The module names ``node`` imports (an import statement or an ``import_module("...")`` call)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""] if node.level == 0 else []
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        value = node.args[0].value
        return [value] if name in ("import_module", "__import__") and isinstance(value, str) else []
    return []


def docker_imports(source: str) -> list[int]:
    """The lines of ``source`` that import the Docker SDK."""
    found = {
        n.lineno
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.stmt | ast.expr) and any(map(_is_docker, _imported(n)))
    }
    return sorted(found)


def _offenders() -> dict[str, list[int]]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if ENGINE in path.parents:
            continue
        lines = docker_imports(path.read_text("utf-8"))
        if lines:
            found[path.relative_to(PACKAGE).as_posix()] = lines
    return found


def test_the_docker_sdk_is_imported_in_the_engine_package_only() -> None:
    found = {f"envkit/{k}:{v}" for k, v in _offenders().items()}
    assert not found, f"the Docker SDK imported outside envkit/engine/: {sorted(found)}"


def test_the_engine_package_does_import_it() -> None:
    inside = [p for p in ENGINE.rglob("*.py") if docker_imports(p.read_text("utf-8"))]
    assert inside, "the Docker adapter is expected under envkit/engine/"


@pytest.mark.parametrize(
    "source",
    [
        "import docker",
        "import docker.errors",
        "import os, docker",
        "import docker as d",
        "from docker import APIClient",
        "from docker.errors import NotFound",
        "def f():\n    import docker.errors\n",
        "class C:\n    def m(self):\n        from docker import types\n",
        "try:\n    import docker\nexcept ImportError:\n    docker = None\n",
        "import importlib\nimportlib.import_module('docker.errors')",
        "__import__('docker')",
    ],
)
def test_every_way_of_importing_it_is_seen(source: str) -> None:
    assert docker_imports(source)


@pytest.mark.parametrize(
    "source",
    [
        "import dockerfile_parse",
        "from envkit.engine import docker_api",
        "from . import docker",  # a relative module of that name, not the SDK
        "x = 'import docker'",
        "# import docker",
        "import dockerx.errors",
    ],
)
def test_lookalikes_are_not_the_sdk(source: str) -> None:
    assert not docker_imports(source)
