"""What a healthy guarded run imports (issue 44: the guard's import is part of its overhead): the
incident-only modules (dump writing, localization, the input checks, the probe's report model, the
secret-scrubbing patterns) come in with the first incident, not with ``import envkit.guard``."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import envkit
from envkit.guard import runlog
from envkit.probe import model

INCIDENT_ONLY = (
    "envkit._safe",
    "envkit.guard.dump",
    "envkit.guard.flight",
    "envkit.guard.inputs",
    "envkit.guard.localize",
    "envkit.probe.model",
)


def test_the_report_constants_are_the_probes() -> None:
    assert (runlog.SCHEMA, runlog.KIND) == (model.SCHEMA, model.KIND)


def test_importing_the_guard_leaves_the_incident_modules_out() -> None:
    code = "import json, sys, envkit.guard; print(json.dumps([m for m in sys.modules if 'envkit' in m]))"
    env = {**os.environ, "PYTHONPATH": str(Path(envkit.__file__).resolve().parents[1])}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout
    loaded = set(json.loads(out))
    assert "envkit.guard.loop" in loaded
    assert loaded.isdisjoint(INCIDENT_ONLY), sorted(loaded & set(INCIDENT_ONLY))


def test_a_step_does_not_import_its_guard() -> None:
    """``guard/step.py`` talks to the guard through ``StepOwner`` (no loop ⇄ step import circle)."""
    tree = ast.parse((Path(envkit.__file__).parent / "guard" / "step.py").read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "envkit.guard.loop" not in imported
