"""`envkit check` reads every shared object of the environment and names the package of each file
with GPU code (RECORD, conda-meta, a JIT cache entry): crafted environments, each rule's edge."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from envkit.catalog import load_catalog
from envkit.cli import main
from envkit.readiness.check import check, facts_on_host
from envkit.readiness.targets import gpu_target
from tests.unit.readiness.crafted import Library, sm
from tests.unit.readiness.test_payload_site import make_site


def _install(site: Path, dist: str, version: str, files: dict[str, bytes]) -> None:
    info = site / f"{dist}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    record = []
    for rel, data in files.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        record.append(f"{rel},sha256=x,{len(data)}")
    (info / "RECORD").write_text("\n".join(record) + "\n")


def _verdict(site: Path, gpu: str, caches: tuple[str, ...] = ()) -> list[tuple[str, str, str | None]]:
    facts = facts_on_host([str(site)], load_catalog(), caches=list(caches))
    (verdict,) = check(facts, [gpu_target(gpu, load_catalog())], load_catalog(), where="t").verdicts
    return [(f.severity, f.code, f.package) for f in verdict.findings if f.package]


def test_a_package_with_no_code_for_the_target_is_an_error_naming_it(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    _install(site, "gsplat", "1.5.3", {"gsplat/csrc.so": Library(fatbins=[sm(80, 86, 89)] * 4).encode()})
    assert _verdict(site, "RTX5090") == [("error", "package-no-kernel-image", "gsplat 1.5.3")]
    assert _verdict(site, "A100") == []  # sm_80 there


def test_partial_coverage_is_a_warning_and_ptx_a_jit_warning(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    _install(site, "part", "1.0", {"part/_k.so": Library(fatbins=[sm(90), sm(90), sm(80)]).encode()})
    _install(site, "jit", "2.0", {"jit/_k.so": Library(fatbins=[sm(80, ptx=[80])]).encode()})
    assert sorted(_verdict(site, "H100")) == [
        ("warning", "package-few-fatbins-without-code", "part 1.0"),
        ("warning", "package-ptx-jit", "jit 2.0"),
    ]


def test_per_cuda_builds_are_judged_by_the_one_the_runtime_loads(tmp_path: Path) -> None:
    site = make_site(tmp_path)  # torch 2.15.0+cu132
    old, new = Library(fatbins=[sm(70, 80, 90)]).encode(), Library(fatbins=[sm(75, 80, 90, 120)]).encode()
    files = {"bnb/libbnb_cuda126.so": old, "bnb/libbnb_cuda132.so": new}
    _install(site, "bnb", "0.1", files)
    assert _verdict(site, "RTX5090") == []  # cuda126's lack of sm_120 does not count: 13.2 loads cuda132
    assert _verdict(site, "V100") == [("error", "package-no-kernel-image", "bnb 0.1")]
    del files["bnb/libbnb_cuda132.so"]
    (site / "bnb" / "libbnb_cuda132.so").unlink()
    (site / "bnb-0.1.dist-info" / "RECORD").write_text("bnb/libbnb_cuda126.so,,\n")
    # no build for 13.2: every build is judged
    assert _verdict(site, "RTX5090") == [("error", "package-no-kernel-image", "bnb 0.1")]


def test_nvidia_libraries_keep_their_rule(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    nv = Library(fatbins=[sm(75)]).encode()
    _install(site, "nvidia-cufft", "12.0", {"nvidia/cufft/lib/libcufft.so.12": nv})
    _install(site, "vision", "0.1", {"vision.libs/libnvjpeg.abc.so.13": nv})  # vendored by auditwheel
    assert _verdict(site, "H100") == []


def test_an_unowned_library_and_a_jit_cache_entry_are_still_named(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    (site / "loose").mkdir()
    (site / "loose" / "_ext.so").write_bytes(Library(fatbins=[sm(80)]).encode())
    cache = tmp_path / "torch_extensions" / "py311_cu132" / "fused_adam"
    cache.mkdir(parents=True)
    (cache / "fused_adam.so").write_bytes(Library(fatbins=[sm(80)]).encode())
    found = _verdict(site, "H100", (str(tmp_path / "torch_extensions"),))
    assert sorted(found) == [
        ("error", "package-no-kernel-image", "fused_adam"),
        ("error", "package-no-kernel-image", "loose"),
    ]


def test_a_conda_prefix_is_attributed_by_conda_meta(tmp_path: Path) -> None:
    prefix = tmp_path / "env"
    site = make_site(prefix / "lib" / "python3.11")
    (prefix / "lib" / "libmyk.so.1").write_bytes(Library("libmyk.so.1", fatbins=[sm(86)]).encode())
    meta = prefix / "conda-meta"
    meta.mkdir()
    doc = {"name": "mykernels", "version": "3.1", "files": ["lib/libmyk.so.1"]}
    (meta / "mykernels-3.1-h0.json").write_text(json.dumps(doc))
    assert _verdict(site, "H100") == [("error", "package-no-kernel-image", "mykernels 3.1")]


def test_links_and_limits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = make_site(tmp_path)
    _install(site, "p", "1", {"p/_k.so": Library(fatbins=[sm(80)]).encode()})
    os.symlink(site / "p" / "_k.so", site / "p" / "_k_alias.so")  # one file, two names: read once
    os.symlink(tmp_path, site / "p" / "up")  # a link to a directory is not followed (no loop)
    assert _verdict(site, "H100") == [("error", "package-no-kernel-image", "p 1")]
    assert main(["check", "--site", str(site), "--gpu", "H100", "--json"]) == 1
    result: dict[str, Any] = json.loads(capsys.readouterr().out)["result"]
    assert sum(Path(p).name.startswith("_k") for p in result["packages"]) == 1


def test_hostile_metadata_is_ignored_not_a_traceback(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    _install(site, "h", "1", {"h/_k.so": Library(fatbins=[sm(80)]).encode()})
    (site / "h-1.dist-info" / "RECORD").write_bytes(b'"unterminated\x00,\n' * 3)
    bad = site / "bad-1.dist-info"
    bad.mkdir()
    (bad / "RECORD").mkdir()  # a directory where a file should be
    # the file is still judged, as a package of no distribution (its directory's name)
    assert _verdict(site, "H100") == [("error", "package-no-kernel-image", "h")]


def _payload(name: str) -> Any:
    import importlib.util
    import sys

    from envkit.payload import PAYLOAD_DIR

    sys.path.insert(0, str(PAYLOAD_DIR))  # the payload's modules import each other by name
    try:
        spec = importlib.util.spec_from_file_location(f"envkit_payload_{name}", PAYLOAD_DIR / f"{name}.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(PAYLOAD_DIR))


def test_a_walk_that_hits_its_bound_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    packages = _payload("packages")
    site = make_site(tmp_path)
    for i in range(3):
        _install(site, f"p{i}", "1", {f"p{i}/_k.so": Library(fatbins=[sm(80)]).encode()})
    monkeypatch.setattr(packages, "MAX_FILES", 2)
    walk = packages.every_library([str(site)], [], {})["walk"]
    assert walk["cut"] is True and walk["shared_objects"] == 2
    monkeypatch.setattr(packages, "MAX_FILES", 20000)
    monkeypatch.setattr(packages, "MAX_WALK_SECONDS", -1.0)  # the deadline passed before the first file
    libraries: dict[str, Any] = {}
    assert packages.every_library([str(site)], [], libraries)["walk"]["cut"] is True and not libraries
    doc = {
        "kind": "envkit-gpu-readiness",
        "schema": 1,
        "walk": {"roots": [], "shared_objects": 2, "limit": 2, "cut": True},
    }
    from envkit.readiness.facts import parse_facts

    result = check(parse_facts(json.dumps(doc), "t"), [], load_catalog(), where="t")
    assert [f.code for f in result.environment if f.code == "walk-cut"] == ["walk-cut"]


def test_a_fifo_named_like_a_library_never_blocks(tmp_path: Path) -> None:
    elfscan = _payload("elfscan")
    fifo = tmp_path / "libfifo.so"
    os.mkfifo(fifo)
    assert elfscan.scan(str(fifo))["problem"] == "not a regular file"
    site = make_site(tmp_path / "env")
    os.mkfifo(site / "torch" / "lib" / "libplanted.so")
    assert _verdict(site, "H100") == []  # walked past, no hang, nothing to judge
