"""The payload's stdlib-only parts, loaded by file path (the payload is never imported as envkit)."""

from __future__ import annotations

import ast
import importlib.util
import math
import sys
from types import ModuleType

import pytest

from envkit.payload import PAYLOAD_DIR
from envkit.probe import report, runner


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"envkit_payload_{name}", PAYLOAD_DIR / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


portable = load("portable")
fingerprint = load("fingerprint")


def test_generator_is_stable_across_runs_and_versions() -> None:
    # Pinned numbers: a change here changes every report's initial weights (a new probe schema).
    assert portable.splitmix64(0) == 0xE220A8397B1DCDAF
    assert portable.uniform(0, "x", 3, 1.0) == portable.uniform(0, "x", 3, 1.0)
    assert portable.uniform(0, "x", 3, 1.0) != portable.uniform(1, "x", 3, 1.0)
    assert portable.uniform(0, "x", 2, 1.0) == portable.uniform(0, "x", 5, 1.0)[:2]


def test_values_are_in_range() -> None:
    xs = portable.uniform(7, "w", 1000, 0.5)
    assert all(-0.5 <= x < 0.5 for x in xs) and len(set(xs)) == 1000
    ids = portable.integers(7, "ids", 1000, 10)
    assert set(ids) == set(range(10))


def test_workload_shapes_match_the_design() -> None:
    rnn = {n: s for n, s, _, _ in portable.param_specs("rnn")}
    assert rnn["rnn.weight_ih"] == (50, 10) and rnn["fc.weight"] == (1, 50)
    bert = portable.param_specs("bert")
    assert bert[0][1] == (1000, 128) and sum(n.endswith("attn.q.weight") for n, *_ in bert) == 2
    ids, mask, labels = portable.bert_batch(0, 1)
    assert len(ids) == 8 * 64 and len(mask) == 8 * 64 and set(labels) <= {0, 1}


def test_json_float() -> None:
    assert portable.json_float(math.nan) == "nan" and portable.json_float(-math.inf) == "-inf"
    assert portable.json_float(1.5) == 1.5


def test_env_allow_list_keeps_knobs_and_drops_secrets() -> None:
    env = {
        "OMP_NUM_THREADS": "2",
        "FLAGS_cudnn_deterministic": "1",
        "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
        "AWS_SECRET_ACCESS_KEY": "x",
        "HF_TOKEN": "x",
        "FLAGS_api_key": "x",
        "HOME": "/root",
        "PATH": "/bin",
    }
    assert fingerprint.allowed_env(env) == {
        "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
        "FLAGS_cudnn_deterministic": "1",
        "OMP_NUM_THREADS": "2",
    }


@pytest.mark.parametrize(
    "value",
    [
        "https://user:s3cr3t@mirror.example/simple",
        "Bearer abcdef",
        "ghp_0123456789abcdefghij",
        "hf_abcdefghijklmnop",
        "AKIAABCDEFGHIJKLMNOP",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
    ],
)
def test_credentials_in_allowed_variables_are_redacted(value: str) -> None:
    env = {"NCCL_SOCKET_IFNAME": "eth0", "FLAGS_custom": value}
    assert fingerprint.allowed_env(env) == {
        "FLAGS_custom": fingerprint.REDACTED,
        "NCCL_SOCKET_IFNAME": "eth0",
    }


def test_fingerprint_collects_without_frameworks() -> None:
    data = fingerprint.collect()
    assert {"host", "time", "python", "cpu", "env", "distributions"} <= set(data)
    assert data["python"]["version"] == ".".join(map(str, sys.version_info[:3]))


# Names the payload must not use: they appeared after Python 3.8, the oldest Python it runs on.
PY39_PLUS = {"removeprefix", "removesuffix", "is_relative_to", "cache", "lcm", "nextafter", "ulp"}


def test_payload_runs_on_python_3_8() -> None:
    for path in sorted(PAYLOAD_DIR.glob("*.py")):
        tree = ast.parse(path.read_text(), str(path), feature_version=(3, 8))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                assert node.attr not in PY39_PLUS, f"{path.name}:{node.lineno}: .{node.attr} is 3.9+"
            if isinstance(node, ast.Call):
                assert all(k.arg != "strict" for k in node.keywords), f"{path.name}:{node.lineno}: strict="


def test_payload_and_envkit_agree_on_names() -> None:
    tree = ast.parse((PAYLOAD_DIR / "run.py").read_text())
    wanted = {"SCHEMA", "KIND", "FRAMEWORKS", "WORKLOADS"}
    found = {
        t.id: ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name) and t.id in wanted
    }
    assert found == {
        "SCHEMA": report.SCHEMA,
        "KIND": report.KIND,
        "FRAMEWORKS": runner.FRAMEWORKS,
        "WORKLOADS": runner.WORKLOADS,
    }


def test_distributions_read_from_header_lines_match_importlib_metadata() -> None:
    """The fingerprint's fast reader gives exactly what the email-parsing importlib.metadata gives."""
    from importlib import metadata

    expected: dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            expected[name.lower().replace("_", "-")] = dist.version
    assert fingerprint.distributions() == dict(sorted(expected.items()))
    assert len(expected) > 10
