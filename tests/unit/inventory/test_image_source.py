"""``envkit snapshot --image``: the stdlib script runs (on the host python here, through the fake engine)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from envkit import payload
from envkit.engine.protocol import RunResult
from envkit.engine.testing import FakeEngine, FakeRun
from envkit.errors import InventoryError
from envkit.inventory.image_source import ImageSource
from envkit.inventory.snapshot import take_snapshot


def _run_script(prefix: Path | None):  # type: ignore[no-untyped-def]
    def handler(run: FakeRun) -> RunResult:
        assert run.argv[:2] == ("sh", "-c") and "python3" in run.argv[2] and run.network is False
        assert run.argv[3:] == (payload.container_path("snapshot.py"),)  # launched by envkit.payload.run
        script = [str(payload.PAYLOAD_DIR / run.argv[3].rsplit("/", 1)[-1])]
        where = [] if prefix is None else ["--prefix", str(prefix)]
        done = subprocess.run([sys.executable, *script, *where], capture_output=True, text=True, check=False)
        return RunResult(done.returncode, done.stdout, done.stderr)

    return handler


def test_conda_meta_and_distributions_are_read(tmp_path: Path) -> None:
    meta = tmp_path / "conda-meta"
    meta.mkdir()
    record = {"name": "tinylib", "version": "1.2.0", "build": "pyh0_0", "subdir": "noarch",
              "channel": "https://conda.anaconda.org/conda-forge"}  # fmt: skip
    (meta / "tinylib-1.2.0-pyh0_0.json").write_text(json.dumps(record))
    (meta / "history").write_text("")
    source = ImageSource(FakeEngine(handler=_run_script(tmp_path)), "envkit/x:latest")
    snap = take_snapshot(source)
    assert snap["host"] == "envkit_x_latest"
    assert snap["conda"] == [{"name": "tinylib", "version": "1.2.0", "build_string": "pyh0_0",
                              "channel": "conda-forge", "platform": "noarch"}]  # fmt: skip
    assert {p["name"].lower() for p in snap["pip"]} >= {"pytest"}  # the interpreter's distributions
    assert snap["python"] == ".".join(map(str, sys.version_info[:3]))
    assert set(snap["facts"]) <= {"os", "libc", "cpu", "driver", "gpu"}  # the machine's, as on the host


def test_no_conda_meta_means_no_conda_part() -> None:
    snap = take_snapshot(ImageSource(FakeEngine(handler=_run_script(Path("/nonexistent"))), "img"))
    assert snap["conda"] is None


def test_a_failing_image_is_an_inventory_error() -> None:
    engine = FakeEngine(handler=lambda run: RunResult(127, "", "python: not found"))
    with pytest.raises(InventoryError, match="python exited 127"):
        ImageSource(engine, "img")
