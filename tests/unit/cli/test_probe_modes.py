"""``envkit probe``'s modes: one frozen ProbeArgs per call, the mode it picks, the conflicts declared once."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from envkit.cli import main
from envkit.cli.probe_args import ProbeArgs, mode_of
from envkit.cli.probe_cmd import probe
from envkit.errors import ExitCode


def test_probe_args_has_one_field_per_option() -> None:
    options = {p.name for p in probe.params} - {"as_json"}
    assert options == {f.name for f in dataclasses.fields(ProbeArgs)}


def _args(**given: object) -> ProbeArgs:
    ctx = probe.make_context("probe", [])
    values = {k: v for k, v in ctx.params.items() if k != "as_json"}
    return ProbeArgs(**{**values, **given})


def test_the_mode_follows_the_flags_k8s_first() -> None:
    assert mode_of(_args()) == "run"
    assert mode_of(_args(compare=True)) == "compare"
    assert mode_of(_args(compare=True, slurm=True)) == "fleet"
    assert mode_of(_args(scheduler="local")) == "fleet"
    assert mode_of(_args(k8s=True, slurm=True, compare=True)) == "k8s"


def test_defaults_give_the_probe_options_defaults() -> None:
    from envkit.probe.runner import ProbeOptions

    assert _args().probe_options() == ProbeOptions()
    fleet = _args(nodelist="a, b,,c", nodes=9).fleet()
    assert fleet.nodelist == ("a", "b", "c") and fleet.nodes == 3 and fleet.scheduler == "slurm"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--slurm", "--compare", "a", "b"], "--compare does not fan out"),
        (["--scheduler", "local", "-o", "x.json"], "a fleet run writes into the store"),
        (["--slurm", "--no-store"], "a fleet run writes into the store"),
        (["--k8s", "--image", "r/x@sha256:" + "a" * 64], "--k8s writes manifests"),
        (["--k8s", "--emit", "out"], "--k8s runs an image"),
        (["a.json"], "unexpected argument 'a.json'"),
        (["--compare"], "--compare needs reports"),
        (["--html", "x.html"], "--html needs --compare A B"),
        (
            ["--python", "/usr/bin/python3", "--image", "x"],
            "--python probes on the host; --image runs the image's own python",
        ),
        (
            ["--compare", "a", "b", "--python", "/usr/bin/python3"],
            "--python does not apply to a compare probe",
        ),
        (["--slurm", "--python", "/usr/bin/python3"], "--python does not apply to a fleet probe"),
    ],
)
def test_each_conflict_is_a_usage_error_before_anything_runs(
    tmp_path: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["probe", "--store", str(tmp_path), *argv, "--json"]) == ExitCode.USAGE
    (error,) = json.loads(capsys.readouterr().out)["errors"]
    assert error["message"] == message and error["hint"]
    assert list(tmp_path.iterdir()) == []  # nothing ran, nothing was written


def test_python_that_is_not_an_executable_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    not_executable = tmp_path / "python"
    not_executable.write_text("#!/bin/sh\n")
    for given in (not_executable, tmp_path / "absent"):
        assert main(["probe", "--store", str(store), "--python", str(given), "--json"]) == ExitCode.USAGE
        (error,) = json.loads(capsys.readouterr().out)["errors"]
        assert error["message"] == f"--python {given}: not an executable file" and error["hint"]
    assert not store.exists()  # nothing ran, nothing was written


def test_ray_fans_out_over_every_node_or_per_gpu() -> None:
    assert mode_of(_args(ray="auto")) == "fleet"
    fleet = _args(ray="auto").fleet()
    assert (fleet.scheduler, fleet.nodes, fleet.tasks_per_node, fleet.gpus_per_task, fleet.address) == (
        "ray",
        0,
        1,
        0,
        None,
    )
    fleet = _args(ray="127.0.0.1:6379", gpus_per_node=2, nodes=3).fleet()
    assert (fleet.nodes, fleet.tasks_per_node, fleet.gpus_per_task, fleet.address) == (
        3,
        2,
        1,
        "127.0.0.1:6379",
    )
    slurm = _args(slurm=True, gpus_per_node=2).fleet()  # --gpus-per-node is Ray's and Kubernetes' only
    assert (slurm.scheduler, slurm.nodes, slurm.tasks_per_node, slurm.gpus_per_task) == ("slurm", 1, 1, 0)


def test_ray_with_compare_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "--ray", "--compare", "a", "b", "--json"]) == ExitCode.USAGE
    assert "--compare does not fan out" in json.loads(capsys.readouterr().out)["errors"][0]["message"]
