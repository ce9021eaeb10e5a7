"""``envkit audit FILE`` imports only what a file audit uses: no spec, lock, render, engine or network stack.

The spec's pydantic models, the lock's solvers, the Dockerfile renderer, the engine's SDK and
urllib.request/ssl (the database update) cost more to import than the audit of a 400-package
file takes; they load only for an environment, ``--spec``, ``--image`` or ``--update-db``. The
catalog's pydantic models (and pydantic) load only when a check asks the catalog more than its
known-bad rules (``--driver`` with a CUDA, a spec's installer). rich loads only for a terminal
(a spinner, colours) or for text it would print differently (``envkit.cli._app._print_warning``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# envkit packages and third-party modules a file audit must not import (module prefixes)
NOT_FOR_A_FILE = (
    "envkit.spec",
    "envkit.lock",
    "envkit.render",
    "envkit.engine",
    "envkit.offline",
    "envkit.build",
    "envkit.audit.update_db",  # --update-db (zipfile, the unpacking)
    "envkit._proc",  # subprocess: a build runs pip, a file audit runs nothing
    "subprocess",
    "envkit.catalog.models",
    "pydantic",
    "pydantic_core",
    "rich",
    "packaging.markers",  # a lock's markers; a freeze or an env export has none
    "packaging.requirements",  # a spec's requirement lines
    "packageurl",  # an SBOM's package URLs
    "docker",
    "rattler",
    "jinja2",
    "urllib.request",
    "ssl",
    "http.client",
)

_CODE = """
import sys
from envkit.cli import main
rc = main(sys.argv[1:])
bad = sorted(m for m in sys.modules if any(m == p or m.startswith(p + ".") for p in {prefixes!r}))
print("LOADED", bad, file=sys.stderr)
sys.exit(rc)
"""

# stderr is a pipe here; these would make rich (rightly) treat it as a terminal
ENV = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}

FILES = {
    "freeze.txt": "demo==1.4\nzstd==1.0\nok==1.0\n",
    "environment.yml": (
        "name: x\nchannels: [conda-forge]\ndependencies:\n  - python=3.11.4=h2755cc3_0_cpython\n"
        "  - numpy=1.26.4=py311h64a7726_0\n  - libzlib=1.2.13=hd590333_5\n  - pip:\n    - demo==1.4\n"
    ),
}


@pytest.mark.parametrize("name", sorted(FILES))
@pytest.mark.parametrize("fmt", ["table", "sarif"])
def test_a_file_audit_imports_no_spec_lock_engine_or_network(
    osv_db: Path, tmp_path: Path, name: str, fmt: str
) -> None:
    path = tmp_path / name
    path.write_text(FILES[name], "utf-8")
    argv = ["audit", str(path), "--db", str(osv_db), "--format", fmt, "-o", str(tmp_path / "out")]
    code = _CODE.format(prefixes=NOT_FOR_A_FILE)
    out = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120, env=ENV
    )
    assert out.returncode in (0, 1), out.stderr[-2000:]
    assert "wrote" in out.stdout  # the audit ran to the end
    assert "LOADED []" in out.stderr, out.stderr[-800:]


# what a pip freeze's audit does not read with: the JSON, YAML, TOML and lock readers, tomllib
NOT_FOR_A_FREEZE = (
    "envkit.inventory.readers_data",
    "envkit.inventory.readers_locks",
    "envkit.inventory.readers_poetry",
    "envkit.inventory.readers_sbom",
    "envkit._toml",
    "tomllib",
    "packaging.tags",  # packaging.utils imports it (platform, sysconfig): envkit._pep503 instead
)


def test_a_freeze_audit_imports_only_the_text_readers(osv_db: Path, tmp_path: Path) -> None:
    path = tmp_path / "freeze.txt"
    path.write_text(FILES["freeze.txt"], "utf-8")
    argv = ["audit", str(path), "--db", str(osv_db), "--format", "sarif", "-o", str(tmp_path / "out")]
    code = _CODE.format(prefixes=NOT_FOR_A_FILE + NOT_FOR_A_FREEZE)
    out = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120, env=ENV
    )
    assert out.returncode in (0, 1), out.stderr[-2000:]
    assert "wrote" in out.stdout
    assert "LOADED []" in out.stderr, out.stderr[-800:]


def test_the_freeze_guard_sees_a_lock_reader(osv_db: Path, tmp_path: Path) -> None:
    """An environment.yml's audit loads readers_data: the check above looks at real modules."""
    path = tmp_path / "environment.yml"
    path.write_text(FILES["environment.yml"], "utf-8")
    argv = ["audit", str(path), "--db", str(osv_db), "--format", "sarif", "-o", str(tmp_path / "out")]
    code = _CODE.format(prefixes=NOT_FOR_A_FREEZE)
    out = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120, env=ENV
    )
    assert "envkit.inventory.readers_data" in out.stderr, out.stderr[-800:]


def test_the_catalog_loads_when_driver_asks_it(osv_db: Path, tmp_path: Path) -> None:
    """``--driver`` with a CUDA in the inventory asks the catalog's CUDA table: then it loads."""
    path = tmp_path / "freeze.txt"
    path.write_text(FILES["freeze.txt"] + "cuda-version==11.8\n", "utf-8")
    argv = ["audit", str(path), "--db", str(osv_db), "--driver", "450.80.02", "--json"]
    code = _CODE.format(prefixes=NOT_FOR_A_FILE)
    out = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120, env=ENV
    )
    assert '"cuda-driver"' in out.stdout, out.stdout[-2000:]
    assert "envkit.catalog.models" in out.stderr and "pydantic" in out.stderr, out.stderr[-800:]


def test_the_guard_sees_a_spec_audit(osv_db: Path, tmp_path: Path) -> None:
    """The same check names what ``--spec`` loads (the test cannot pass by looking at nothing)."""
    (tmp_path / "environments").mkdir()
    (tmp_path / "environments" / "demo.yaml").write_text("name: demo\npython: '3.11'\n", "utf-8")
    path = tmp_path / "freeze.txt"
    path.write_text(FILES["freeze.txt"], "utf-8")
    argv = ["audit", str(path), "--db", str(osv_db), "--spec", "demo"]
    code = _CODE.format(prefixes=NOT_FOR_A_FILE)
    out = subprocess.run(
        [sys.executable, "-c", code, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=ENV,
    )
    assert "envkit.spec" in out.stderr and "LOADED []" not in out.stderr, out.stderr[-800:]
