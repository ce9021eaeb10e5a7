"""The readiness facts in the probe fingerprint: the payload's compact form, its parse, the "why"."""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from types import ModuleType
from typing import Any

import pytest

from envkit.comparison.causes import likely_causes
from envkit.engine.protocol import RunResult
from envkit.engine.testing import FakeEngine
from envkit.errors import ReportError
from envkit.payload import PAYLOAD_DIR
from envkit.probe.additions import DriverCheck
from envkit.probe.report import report_from_json
from envkit.probe.runner import ProbeOptions, run_in_image, run_on_host
from envkit.readiness.check import fingerprint_facts
from envkit.readiness.facts import parse_facts
from tests.unit.probe.conftest import make_report
from tests.unit.readiness.test_rules import paddle_doc, torch_doc


def _ready() -> ModuleType:
    """The payload's ready.py, loaded by path as the probe runs it (with elfscan beside it)."""
    sys.path.insert(0, str(PAYLOAD_DIR))
    try:
        spec = importlib.util.spec_from_file_location("envkit_payload_ready", PAYLOAD_DIR / "ready.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(PAYLOAD_DIR))


def _docs() -> list[dict[str, Any]]:
    cudnn9 = paddle_doc()
    cudnn9["frameworks"]["paddle"]["loaded"]["versions"].update(
        {"cudnn": 91002, "cufft": 10900, "curand": 10300, "cublasLt": 110800, "cudart": 11080, "x": None}
    )
    cudnn9["frameworks"]["paddle"]["links"].append(
        {"from": "a", "name": "libcudart.so.11.0", "to": "/x/libcudart.so.11.0", "host": False}
    )
    nameless = paddle_doc()
    lib = next(iter(nameless["libraries"].values()))
    lib["soname"] = None
    return [paddle_doc(), torch_doc(), torch_doc(cuda=None), cudnn9, nameless]


@pytest.mark.parametrize("doc", _docs(), ids=["paddle", "torch", "cpu-torch", "versions", "no-soname"])
def test_the_payloads_summary_is_the_hosts_fingerprint_facts(doc: dict[str, Any]) -> None:
    """The probe payload (stdlib) compacts the report as readiness.check does on the typed facts."""
    expected = fingerprint_facts(parse_facts(json.dumps(doc), "test"))
    assert _ready().summary(copy.deepcopy(doc)) == expected


def _with_readiness(summary: Any, **kw: Any) -> dict[str, Any]:
    report = make_report(**kw)
    report["fingerprint"]["cuda_readiness"] = summary
    return report


def test_a_report_with_readiness_facts_parses_and_one_without_still_does() -> None:
    facts = fingerprint_facts(parse_facts(json.dumps(paddle_doc()), "t"))
    report = report_from_json(_with_readiness(facts), "r")
    assert report.fact("cuda_readiness")["gpu_code"] == facts["gpu_code"]
    old = make_report()
    assert "cuda_readiness" not in old["fingerprint"]
    assert report_from_json(old, "old").fact("cuda_readiness") == {}
    # a payload whose scan failed records why, and the report still parses
    assert report_from_json(_with_readiness({"error": "OSError: x"}), "r").fact("cuda_readiness")


@pytest.mark.parametrize(
    "bad",
    [
        [],
        "sm_90",
        {"frameworks": []},
        {"frameworks": {"paddle": "2.6"}},
        {"frameworks": {"paddle": {"loaded": ["cudnn"]}}},
        {"gpu_code": {"libphi.so": {"sass": "sm_90"}}},
        {"gpu_code": {"lib\nforged: line": 3}},
        {"gpu_code": {"x" * 100_000: {"ptx": {"compute_90": 1}}}},
    ],
)
def test_hostile_readiness_shapes_are_a_report_error(bad: Any) -> None:
    with pytest.raises(ReportError) as err:
        report_from_json(_with_readiness(bad), "planted.json")
    message = err.value.message
    assert "cuda_readiness" in message and "\nforged" not in message and len(message) < 1000


def _facts(doc: dict[str, Any]) -> dict[str, Any]:
    return fingerprint_facts(parse_facts(json.dumps(doc), "t"))


def test_why_names_the_loaded_cudnn_the_gpu_code_and_the_driver_floor() -> None:
    a_doc, b_doc = paddle_doc(), paddle_doc()
    b_doc["frameworks"]["paddle"]["loaded"]["versions"]["cudnn"] = 8907
    phi = next(k for k in b_doc["libraries"] if k.endswith("libphi.so"))
    b_doc["libraries"][phi]["sass"]["sm_100"] = 666
    b_doc["libraries"][phi]["ptx"]["compute_100"] = 666
    a = report_from_json(_with_readiness(_facts(a_doc), host="a"), "a")
    b = report_from_json(_with_readiness(_facts(b_doc), host="b"), "b")
    b = b.with_driver(DriverCheck("12.4", "550.54.14", "525.60.13", None, "no-driver"))
    a = a.with_driver(DriverCheck("11.8", "520.61.05", "450.80.02", None, "no-driver"))
    messages = [c.message for c in likely_causes(a, b, ("a", "b"))]
    assert "paddle loads cudnn 8.6.0 vs 8.9.7" in messages
    sass = next(m for m in messages if m.startswith("libphi.so SASS"))
    assert "sm_100" in sass.split(" vs ")[1] and "sm_100" not in sass.split(" vs ")[0]
    assert "libphi.so PTX none vs compute_100" in messages
    assert "driver floor 520.61.05 vs 550.54.14" in messages
    assert "driver floor (minor-version compat) 450.80.02 vs 525.60.13" in messages
    # the same facts on both sides, or facts on one side only: nothing about them
    same = likely_causes(a, report_from_json(_with_readiness(_facts(a_doc), host="c"), "c"), ("a", "c"))
    older = likely_causes(a, report_from_json(make_report(host="d"), "d"), ("a", "d"))
    for causes in (same, older):
        assert not [c for c in causes if c.kind in ("cuda-library", "gpu-code")]


def _payload_report(argv: list[str]) -> str:
    fw = argv[argv.index("--frameworks") + 1]
    report = make_report(host="box")
    report["frameworks"] = {fw: report["frameworks"]["torch"]}
    if "--readiness" in argv:
        json.loads(argv[argv.index("--readiness") + 1])  # the catalog's extract, as JSON
        report["fingerprint"]["cuda_readiness"] = _facts(torch_doc())
    return json.dumps(report)


@pytest.mark.parametrize(("cuda", "asked"), [("13.2", True), ("cpu", False), (None, False)])
def test_a_cuda_image_is_probed_with_the_readiness_scan_in_one_payload(cuda: str | None, asked: bool) -> None:
    engine = FakeEngine(handler=lambda run: RunResult(0, _payload_report(list(run.argv)), ""))
    engine.add_image("envkit/t:latest", "sha256:abc", labels={"io.envkit.cuda": cuda} if cuda else {})
    report = run_in_image(engine, "envkit/t:latest", ProbeOptions(), label="i", host="h", gpus=False)
    scans = ["--readiness" in run.argv for run in engine.runs]
    assert scans == ([True, False] if asked else [False, False])  # the first framework's only
    assert bool(report.fact("cuda_readiness")) is asked
    if asked:
        gpu_code: Any = report.fact("cuda_readiness")["gpu_code"]
        assert gpu_code["libtorch_cuda.so"]["sass"]


def test_the_host_probe_scans_only_when_asked_or_a_driver_is_there() -> None:
    seen: list[list[str]] = []

    def fake_run(argv: Any, **kw: Any) -> Any:
        from envkit import _proc

        seen.append(list(argv))
        return _proc.ProcResult(tuple(argv), 0, _payload_report(list(argv)), "")

    run_on_host(ProbeOptions(frameworks=("torch",), readiness=True), label="x", run=fake_run)
    run_on_host(ProbeOptions(frameworks=("torch",), readiness=False), label="x", run=fake_run)
    assert ["--readiness" in argv for argv in seen] == [True, False]


def _torch_with_orphan(linked: bool) -> dict[str, Any]:
    """torch 2.15.0's wheel ships torch/lib/libgfortran.so.5, which needs libquadmath.so.0 (absent
    in the Debian image) and which nothing torch loads links (found in the cuda13.2-torch2.15 image)."""
    doc = torch_doc()
    fw = doc["frameworks"]["torch"]
    site = fw["dir"]
    c_ext, cuda, fortran = (
        f"{site}/_C.cpython-311-x86_64-linux-gnu.so",
        f"{site}/lib/libtorch_cuda.so",
        (f"{site}/lib/libgfortran.so.5"),
    )
    fw["roots"] = [c_ext, cuda, fortran]
    fw["links"] = [
        {"from": c_ext, "name": "libtorch_cuda.so", "to": cuda, "host": False},
        *fw["links"],
        {"from": fortran, "name": "libquadmath.so.0", "to": None, "host": False},
    ]
    if linked:
        fw["links"].append({"from": cuda, "name": "libgfortran.so.5", "to": fortran, "host": False})
    return doc


def test_a_missing_library_of_a_shipped_but_unloaded_file_is_a_warning_not_a_failure() -> None:
    from envkit.catalog import load_catalog
    from envkit.readiness.check import check

    catalog = load_catalog()
    orphan = check(parse_facts(json.dumps(_torch_with_orphan(False)), "t"), [], catalog, where="t")
    found = {f.code: f for f in orphan.environment}
    assert "library-missing" not in found and found["library-missing-unloaded"].severity == "warning"
    assert "libquadmath.so.0 missing for libgfortran.so.5" in found["library-missing-unloaded"].message
    assert orphan.ok
    linked = check(parse_facts(json.dumps(_torch_with_orphan(True)), "t"), [], catalog, where="t")
    errors = [f for f in linked.environment if f.code == "library-missing"]
    assert errors and "libquadmath.so.0 missing: torch fails to load" in errors[0].message
    assert not linked.ok
