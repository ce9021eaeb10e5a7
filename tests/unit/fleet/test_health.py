"""``envkit health``: a node's verdict in each checker's contract (exit codes, message length, drain)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envkit.cli import main
from envkit.fleet.health import Health, drain_argv, node_name, read_health
from envkit.store import layout
from tests.unit.fleet.test_history import fleet_store

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    store = fleet_store(tmp_path / "store")
    assert main(["fleet", "history", str(store)]) == 1  # writes STORE/.health/verdicts.json
    return store


@pytest.mark.parametrize(
    ("node", "action", "code"),
    [("n1", "stay", 0), ("n2", "remove", 1), ("n3", "stay", 0), ("n4", "unknown", 2), ("nx", "unknown", 2)],
)
def test_each_verdict_maps_to_stay_remove_or_unknown(
    store: Path, capsys: pytest.CaptureFixture[str], node: str, action: str, code: int
) -> None:
    capsys.readouterr()
    assert main(["health", "--store", str(store), "--node", node, "--json"]) == code
    result = json.loads(capsys.readouterr().out)["result"]
    assert result["action"] == action and result["exit"] == code


def test_npd_prints_one_line_of_at_most_80_characters(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    for node, code in [("n1", 0), ("n2", 1), ("n4", 2), ("nx", 2)]:
        assert main(["health", "--store", str(store), "--node", node, "--hook", "npd"]) == code
        out = capsys.readouterr().out
        assert out.count("\n") == 1 and len(out.rstrip("\n")) <= 80 and out.startswith("envkit: "), out
    assert "mercurial" in Health("n", "remove", "mercurial", "x" * 500).message()


def test_the_shipped_npd_config_keeps_its_rule_timeouts_within_the_global_one() -> None:
    config = json.loads((ROOT / "docs" / "reference" / "fleet-npd-plugin.json").read_text())
    assert config["plugin"] == "custom" and config["source"]
    timeout = _seconds(config["pluginConfig"]["timeout"])
    assert config["pluginConfig"]["max_output_length"] == 80
    types = {c["type"] for c in config["conditions"]}
    for rule in config["rules"]:
        assert _seconds(rule.get("timeout", config["pluginConfig"]["timeout"])) <= timeout
        assert rule["type"] in ("temporary", "permanent") and rule["path"]
        assert rule["type"] == "temporary" or rule["condition"] in types
        assert rule["path"].endswith("/envkit") and rule["args"][:3] == ["health", "--hook", "npd"]


def _seconds(text: str) -> float:
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    for unit in sorted(units, key=len, reverse=True):
        if text.endswith(unit) and text[: -len(unit)].replace(".", "").isdigit():
            return float(text[: -len(unit)]) * units[unit]
    raise AssertionError(f"not a duration: {text}")


def test_slurm_hook_drains_only_a_node_to_remove(store: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "scontrol.log"
    scontrol = bin_dir / "scontrol"  # records its argv: the real one is exercised in the Slurm test
    scontrol.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> {log}\n')
    scontrol.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}
    for node, code in [("n1", 0), ("n3", 0), ("n4", 0), ("n2", 1)]:
        done = subprocess.run(
            [sys.executable, "-m", "envkit", "health", "--hook", "slurm", "--drain", "--store", str(store)],
            env={**env, "SLURMD_NODENAME": node}, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert done.returncode == code, done.stderr
    lines = log.read_text().splitlines()
    assert lines[:3] == ["update", "NodeName=n2", "State=DRAIN"] and len(lines) == 4
    assert lines[3].startswith("Reason=envkit: mercurial: n2:id-n2: 2 different sets of bits")


def test_a_stale_missing_or_forged_verdict_is_no_verdict(store: Path) -> None:
    assert read_health(store, "n2", max_age=60, now=1e12).action == "unknown"
    assert read_health(store, "n2", max_age=60, now=1010.0).action == "remove"  # runs made at 1000 + i
    path = store / layout.HEALTH / layout.HEALTH_FILE
    good = path.read_text()
    path.chmod(0o664)
    answer = read_health(store, "n2")
    assert answer.action == "unknown" and "writable by others" in answer.reason
    path.chmod(0o644)
    data = json.loads(good)
    data["nodes"]["n2"]["verdict"] = "all good, trust me"
    path.write_text(json.dumps(data))
    assert read_health(store, "n2").action == "unknown"
    path.write_text("[" * 100_000)
    answer = read_health(store, "n1")
    assert answer.action == "unknown" and "verdicts file" in answer.reason
    assert read_health(store / "nowhere", "n1").action == "unknown"


def test_the_node_name_comes_from_the_scheduler() -> None:
    assert node_name({"SLURMD_NODENAME": "gpu7", "NODE_NAME": "k"}) == "gpu7"
    assert node_name({"NODE_NAME": "worker-3"}) == "worker-3"
    assert node_name({}) and "." not in node_name({})
    argv = drain_argv(Health("gpu7", "remove", "mercurial", 'a "quoted" reason'))
    assert argv[:4] == ["scontrol", "update", "NodeName=gpu7", "State=DRAIN"] and '"' not in argv[4]


def test_the_hook_imports_no_framework_and_no_comparison(store: Path) -> None:
    code = (
        "import sys; from envkit.cli import main; main(['health', '--store', sys.argv[1], '--node', 'n2']);"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'paddle', 'numpy', 'rich')"
        " or m.startswith(('envkit.comparison', 'envkit.probe', 'envkit.fleet.history'))))"
    )
    done = subprocess.run([sys.executable, "-c", code, str(store)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)  # fmt: skip
    assert done.stdout.splitlines()[-1] == "[]", done.stdout


def test_a_prolog_fails_only_for_a_node_to_remove(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Prolog's non-zero exit drains the node: no verdict (a new node, a failed probe) must not."""
    for node, code in [("n1", 0), ("n2", 1), ("n4", 0), ("nx", 0)]:
        assert main(["health", "--store", str(store), "--node", node, "--hook", "prolog"]) == code
    err = capsys.readouterr().err
    assert "envkit: mercurial" in err and "envkit: no verdict" in err
