"""``ENVKIT_TEST_PERTURB``: the planted fault the fleet tests use (a real payload run, torch rnn on CPU)."""

from __future__ import annotations

import importlib.util
import struct
import sys
from dataclasses import replace
from types import ModuleType

import pytest

from envkit.payload import PAYLOAD_DIR
from envkit.probe.runner import ProbeOptions, run_on_host


def _load(name: str) -> ModuleType:
    """A payload module by file path, registered (its dataclasses look their module up)."""
    spec = importlib.util.spec_from_file_location(f"envkit_payload_{name}", PAYLOAD_DIR / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


perturb = _load("perturb")

RNN = ProbeOptions(frameworks=("torch",), workloads=("rnn",), steps=4, threads=1, readiness=False)


def _losses(env: dict[str, str]) -> tuple[list[object], dict[str, object]]:
    report = run_on_host(replace(RNN, env=env), label="t")
    steps = report.frameworks["torch"].workloads["rnn"].steps
    return [s.loss for s in steps], dict(report.config.values)


def test_parse_reads_every_planting_and_names_a_bad_one() -> None:
    a, b = perturb.parse("p=0.3,seed=7,task=node2; threads=2,node=node3")
    assert (a.p, a.seed, a.task, a.threads) == (0.3, 7, "node2", None)
    assert (b.p, b.node, b.threads) == (1.0, "node3", 2)
    with pytest.raises(ValueError, match="'colour=red'"):
        perturb.parse("p=0.3,colour=red")
    with pytest.raises(ValueError, match=r"p=1\.5"):
        perturb.parse("p=1.5")


def test_a_planting_fires_on_its_share_of_runs_reproducibly() -> None:
    (plant,) = perturb.parse("p=0.3,seed=11")
    fired = [perturb._draw(plant, f"run-{i}/node1/0", "fire") < plant.p for i in range(2000)]
    assert 0.26 < sum(fired) / len(fired) < 0.34
    again = [perturb._draw(plant, f"run-{i}/node1/0", "fire") < plant.p for i in range(2000)]
    assert fired == again


def test_only_the_named_task_node_or_gpu_is_planted() -> None:
    env = {"ENVKIT_FLEET_RUN": "r1", "ENVKIT_FLEET_TASK": "node2", "ENVKIT_NODE": "node2",
           "CUDA_VISIBLE_DEVICES": "1"}  # fmt: skip
    for spec, hit in [("task=node2", True), ("task=node1", False), ("node=node2", True), ("gpu=1", True),
                      ("gpu=0", False), ("task=node1;gpu=1", True)]:  # fmt: skip
        assert (perturb.planted({**env, perturb.ENV: spec}, 5) is not None) is hit, spec
    assert perturb.planted(env, 5) is None


def test_flip_low_bit_changes_one_bit_of_the_dtype() -> None:
    x = 0.7317
    f32 = perturb.flip_low_bit(x, "float32")
    (a,), (b,) = struct.unpack("<i", struct.pack("<f", x)), struct.unpack("<i", struct.pack("<f", f32))
    assert a ^ b == 1 and abs(f32 - x) / x < 1e-7
    assert perturb.flip_low_bit(perturb.flip_low_bit(x, "float64"), "float64") == x


def test_the_payload_flips_one_step_of_a_planted_run_and_says_so() -> None:
    clean, config = _losses({})
    assert "planted" not in config
    flipped, config = _losses({perturb.ENV: "p=1,seed=3"})
    planted = config["planted"]
    assert isinstance(planted, dict) and planted["fired"] is True
    differing = [i + 1 for i, (a, b) in enumerate(zip(clean, flipped, strict=True)) if a != b]
    assert differing == [planted["step"]]  # exactly the planted step's loss, by one low bit
    quiet, config = _losses({perturb.ENV: "p=0,seed=3"})
    assert quiet == clean and config["planted"] == {"spec": "p=0,seed=3", "fired": False, "step": None,
                                                      "threads": None}  # fmt: skip


def test_a_thread_planting_is_recorded_in_the_config() -> None:
    _, config = _losses({perturb.ENV: "threads=2"})
    assert config["threads"] == 2


def test_a_malformed_planting_fails_the_payload_naming_it() -> None:
    from envkit.errors import ProbeError

    with pytest.raises(ProbeError, match="colour"):
        _losses({perturb.ENV: "colour=red"})
