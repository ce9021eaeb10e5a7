"""The image's NVIDIA Container Toolkit constraints and `envkit check` agree on every catalog GPU and
driver: the expressions `envkit render` writes (`NVIDIA_REQUIRE_ARCH`, and `NVIDIA_REQUIRE_CUDA` of
a `cuda_runtime: pypi` image) evaluated as the toolkit does (`envkit.catalog.require`), against the
verdicts of `envkit check` for a framework on that CUDA release."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envkit.catalog import load_catalog
from envkit.catalog.models import CudaRelease
from envkit.catalog.require import (
    ARCH_ENV,
    PROPERTIES,
    compare_versions,
    driver_cuda,
    nvidia_arch_env,
    satisfies,
)
from envkit.readiness.check import check
from envkit.readiness.facts import parse_facts
from envkit.readiness.targets import Target
from envkit.render.dockerfile import nvidia_contract
from envkit.spec.resolve import ResolvedSpec

CATALOG = load_catalog()
GPU = CATALOG.gpu
RELEASES = [r for r in CATALOG.cuda if r.archs]
DRIVERS = sorted(
    {d for r in CATALOG.cuda for d in (r.min_driver, r.compat_driver)},
    key=lambda d: [int(p) for p in d.split(".")],
)


def _facts(cuda: str) -> Any:
    torch = {"dir": "/site/torch", "version": "2.x", "cuda": cuda, "links": [], "roots": []}
    doc = {"kind": "envkit-gpu-readiness", "schema": 1, "frameworks": {"torch": torch}, "libraries": {}}
    return parse_facts(json.dumps(doc), "test")


def _errors(cuda: str, target: Target, code: str) -> list[str]:
    (verdict,) = check(_facts(cuda), [target], CATALOG, where="t").verdicts
    return [f.message for f in verdict.findings if f.severity == "error" and f.code == code]


@pytest.mark.parametrize("release", RELEASES, ids=lambda r: r.version)
def test_the_image_arch_requirement_agrees_with_check_on_every_catalog_gpu(release: CudaRelease) -> None:
    (value,) = nvidia_arch_env(True, release, lambda v: v).values()
    for gpu in GPU.gpus.list:
        admitted = satisfies(value, arch=gpu.cc)
        target = Target(gpu.name, gpu=gpu.name, cc=gpu.capability, data_center=gpu.data_center)
        refused = _errors(release.version, target, "toolkit-drops-gpu")
        assert admitted == (not refused), (release.version, gpu.name, value)


@pytest.mark.parametrize("release", RELEASES, ids=lambda r: r.version)
def test_the_image_cuda_requirement_agrees_with_check_on_every_catalog_driver(release: CudaRelease) -> None:
    resolved = ResolvedSpec.__new__(ResolvedSpec)  # only what nvidia_contract reads
    object.__setattr__(resolved, "spec", type("S", (), {"cuda": release.version})())
    object.__setattr__(resolved, "cuda_release", release)
    requirement = nvidia_contract(resolved)["NVIDIA_REQUIRE_CUDA"]
    for driver in DRIVERS:
        admitted = satisfies(requirement, driver=driver, cuda=driver_cuda(driver, CATALOG.cuda))
        target = Target(f"driver {driver}", driver=driver, data_center=False)
        refused = _errors(release.version, target, "driver-too-old")
        assert admitted == (not refused), (release.version, driver, requirement)


def test_cpu_images_and_unknown_releases_carry_no_arch_requirement() -> None:
    assert nvidia_arch_env(False, RELEASES[-1], str) == {}
    assert nvidia_arch_env(True, None, str) == {}
    assert nvidia_arch_env(True, RELEASES[-1], lambda v: f'"{v}"') == {ARCH_ENV: '"arch>=7.5"'}


def test_the_catalog_records_the_properties_the_toolkit_tests() -> None:
    assert tuple(GPU.container_toolkit.properties) == PROPERTIES
    assert GPU.container_toolkit.verified and "libnvidia-container" in GPU.container_toolkit.source


@pytest.mark.parametrize(
    ("requirement", "host", "expected"),
    [
        ("arch>=7.5", {"arch": "7.0"}, False),
        ("arch>=7.5", {"arch": "12.0"}, True),
        ("arch>=7.5", {}, True),  # no device visible: the toolkit lets it pass
        ("cuda>=12.8 driver>=525.60.13", {"cuda": "12.2", "driver": "535.104.05"}, True),
        ("cuda>=12.8 driver>=580", {"cuda": "12.2", "driver": "535.104.05"}, False),
        (
            "cuda>=11.8 brand=tesla,driver>=470,driver<471",
            {"cuda": "11.4", "driver": "470.82", "brand": "Tesla"},
            True,
        ),
        ("brand=tesla,driver>=470,driver<471", {"driver": "470.82", "brand": "GeForce"}, False),
        ("arch>=7.5,arch<8 arch>=9.0", {"arch": "8.6"}, False),
        ("arch>=7.5,arch<8 arch>=9.0", {"arch": "7.5"}, True),
        ("arch=12", {"arch": "12.0"}, True),  # trailing .0 ignored, as dsl_compare_version does
    ],
)
def test_satisfies_follows_the_toolkit(requirement: str, host: dict[str, str], expected: bool) -> None:
    assert satisfies(requirement, **host) is expected


@pytest.mark.parametrize("bad", ["arch~7.5", "gpu>=7.5", "arch>=x", "brand>=tesla"])
def test_an_invalid_condition_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        satisfies(bad, arch="7.5", brand="Tesla")


def test_version_comparison_is_numeric() -> None:
    assert compare_versions("12.10", ">", "12.9") and compare_versions("580.65.06", ">=", "580")
    assert driver_cuda("595.45.04", CATALOG.cuda) == "13.2" and driver_cuda("100", CATALOG.cuda) is None


def _in_image(tmp_path: Any, env: dict[str, str]) -> Any:
    """The payload as `check IMAGE` runs it (no --sandbox), the image's ENV given as its environment."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from envkit.payload import PAYLOAD_DIR
    from tests.unit.readiness.test_payload_site import make_site

    site = make_site(Path(tmp_path))
    argv = [sys.executable, str(PAYLOAD_DIR / "ready.py"), "--site", str(site)]
    full = {"PATH": os.environ.get("PATH", ""), **env}
    return parse_facts(
        subprocess.run(argv, capture_output=True, text=True, check=True, env=full).stdout, "img"
    )


def test_check_evaluates_the_requirements_the_image_carries(tmp_path: Any) -> None:
    facts = _in_image(
        tmp_path, {"NVIDIA_REQUIRE_ARCH": "arch>=7.5", "NVIDIA_REQUIRE_CUDA": "cuda>=13.2 driver>=580.65.06"}
    )
    assert dict(facts.nvidia_require) == {
        "NVIDIA_REQUIRE_ARCH": "arch>=7.5",
        "NVIDIA_REQUIRE_CUDA": "cuda>=13.2 driver>=580.65.06",
    }
    targets = [
        Target("V100", gpu="V100", cc=(7, 0)),
        Target("H100", gpu="H100", cc=(9, 0)),
        Target("driver 535", driver="535.104.05"),
        Target("driver 580", driver="580.65.06"),
    ]
    unmet = {
        v.target.label: [f.message for f in v.findings if f.code == "toolkit-requirement-unmet"]
        for v in check(facts, targets, CATALOG, where="img").verdicts
    }
    assert unmet["V100"] == [
        "the image's NVIDIA_REQUIRE_ARCH=arch>=7.5 is not met here: the NVIDIA Container Toolkit refuses "
        "to start it ('requirement error: unsatisfied condition')"
    ]
    assert unmet["H100"] == [] and unmet["driver 580"] == []
    assert unmet["driver 535"] and "NVIDIA_REQUIRE_CUDA" in unmet["driver 535"][0]


def test_a_hostile_requirement_is_a_warning_on_one_line(tmp_path: Any) -> None:
    facts = _in_image(tmp_path, {"NVIDIA_REQUIRE_X": "arch~7\nH100 (sm_90): READY"})
    (verdict,) = check(facts, [Target("H100", gpu="H100", cc=(9, 0))], CATALOG, where="img").verdicts
    (warning,) = [f.message for f in verdict.findings if f.code == "toolkit-requirement-invalid"]
    assert "\n" not in warning and "NVIDIA_REQUIRE_X=arch~7\\nH100" in warning


def _committed() -> list[tuple[str, str, dict[str, str]]]:
    """(image, its CUDA, its NVIDIA_REQUIRE_* values) of every committed CUDA image's Dockerfile."""
    import re

    from envkit.spec.load import load_spec

    root = Path(__file__).resolve().parents[3]
    out = []
    for dockerfile in sorted((root / "images").glob("*/Dockerfile")):
        spec_path = root / "environments" / f"{dockerfile.parent.name}.yaml"
        if not spec_path.is_file():
            continue
        loaded = load_spec(spec_path)
        found = dict(re.findall(r'(NVIDIA_REQUIRE_[A-Z]+)="([^"]*)"', dockerfile.read_text()))
        if found:
            out.append((dockerfile.parent.name, loaded.spec.cuda, found))
    return out


COMMITTED = _committed()


ROOT = Path(__file__).resolve().parents[3]
FROM_RELEASE = [c for c in COMMITTED if not (ROOT / "images" / c[0] / "gpu-code.json").is_file()]
FROM_FATBINS = [c for c in COMMITTED if (ROOT / "images" / c[0] / "gpu-code.json").is_file()]


@pytest.mark.parametrize(("image", "cuda", "require"), FROM_RELEASE, ids=[c[0] for c in FROM_RELEASE])
def test_committed_images_carry_the_arch_requirement_check_agrees_with(
    image: str, cuda: str, require: dict[str, str]
) -> None:
    """An image whose lock recorded no framework fatbins: the CUDA release's bound, check's rule."""
    assert ARCH_ENV in require, f"images/{image}/Dockerfile carries no {ARCH_ENV}"
    for gpu in GPU.gpus.list:
        target = Target(gpu.name, gpu=gpu.name, cc=gpu.capability, data_center=gpu.data_center)
        admitted = satisfies(require[ARCH_ENV], arch=gpu.cc)
        assert admitted == (not _errors(cuda, target, "toolkit-drops-gpu")), (image, gpu.name)


@pytest.mark.parametrize(("image", "cuda", "require"), COMMITTED, ids=[c[0] for c in COMMITTED])
def test_committed_images_cuda_requirement_agrees_with_check_on_every_catalog_driver(
    image: str, cuda: str, require: dict[str, str]
) -> None:
    """Every CUDA image, on NVIDIA's PyPI wheels or on an nvidia/cuda base: the driver floor the image
    carries is the one `check` applies (minor-version compatibility included; the nvidia/cuda base's
    own per-branch alternatives are replaced, docs/guides/check.md)."""
    for driver in DRIVERS:
        admitted = satisfies(
            require["NVIDIA_REQUIRE_CUDA"], driver=driver, cuda=driver_cuda(driver, CATALOG.cuda)
        )
        refused = _errors(
            cuda, Target(f"driver {driver}", driver=driver, data_center=False), "driver-too-old"
        )
        assert admitted == (not refused), driver


@pytest.mark.parametrize(("image", "cuda", "require"), FROM_FATBINS, ids=[c[0] for c in FROM_FATBINS])
def test_the_image_constraints_from_fatbins_agree_with_check_on_every_gpu_and_driver(
    image: str, cuda: str, require: dict[str, str]
) -> None:
    """The flagship (and every image whose lock recorded its framework's fatbins): the Dockerfile's
    NVIDIA_REQUIRE_ARCH is the expression derived from images/NAME/gpu-code.json, and the toolkit's
    evaluation of the Dockerfile's NVIDIA_REQUIRE_* on every catalog GPU x driver agrees with what
    `envkit check --lock images/NAME --gpu G --driver D` decides for that pair (read_gpu_code and
    lock_verdicts, as the command calls them): with its verdict, and with its framework rule alone
    (the fatbin counts of wheel-no-kernel-image, no expression involved)."""
    from envkit.catalog.require import gpu_code_arch_requirement
    from envkit.readiness.lockcheck import lock_verdicts, read_gpu_code
    from envkit.readiness.targets import gpu_target

    folder = ROOT / "images" / image
    derived = gpu_code_arch_requirement(json.loads((folder / "gpu-code.json").read_text()))
    assert require[ARCH_ENV] == derived.value, "re-render: `envkit render NAME`"
    code = read_gpu_code(folder)
    pairs = [(gpu, driver) for gpu in GPU.gpus.list for driver in DRIVERS]
    verdicts = lock_verdicts(code, [gpu_target(g.name, CATALOG, d) for g, d in pairs], CATALOG)
    refused = set()
    for (gpu, driver), verdict in zip(pairs, verdicts, strict=True):
        arch_ok = satisfies(require[ARCH_ENV], arch=gpu.cc)
        driver_ok = satisfies(
            require["NVIDIA_REQUIRE_CUDA"], driver=driver, cuda=driver_cuda(driver, CATALOG.cuda)
        )
        errors = [f for f in verdict.findings if f.severity == "error"]
        framework = [f for f in errors if f.code == "wheel-no-kernel-image"]
        assert (verdict.status == "ready") == (arch_ok and driver_ok), (gpu.name, driver, errors)
        assert (not framework) == arch_ok, (gpu.name, framework)
        if not arch_ok:
            refused.add(gpu.name)
    assert len(verdicts) == len(GPU.gpus.list) * len(DRIVERS) > 100
    if image == "cuda11.8-paddle2.6":  # Paddle 2.6.2's libphi.so: sm_61 ... sm_86 (no sm_60, no sm_90)
        assert require[ARCH_ENV] == "arch>=6.1,arch<9.0"
        assert {"P100", "H100", "B200", "RTX5090"} <= refused and not {"V100", "T4", "A100"} & refused
