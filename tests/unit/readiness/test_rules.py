"""Verdicts from payload documents shaped like the real ones: the planted faults of issue 31, each named.

The documents use the facts read from the real wheels (paddlepaddle-gpu 2.6.2's libphi.so groups,
torch 2.15.0's libtorch_cuda.so groups, cuBLAS 11.11's PTX) so the messages are the ones a user
of those images gets; ``test_real_wheels.py`` checks the payload produces such documents.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from envkit.catalog import load_catalog
from envkit.readiness.check import CheckResult, check, fingerprint_facts
from envkit.readiness.facts import ReadinessError, parse_facts
from envkit.readiness.rules import format_version
from envkit.readiness.targets import Target, gpu_target

SITE = "/usr/local/lib/python3.10/dist-packages"
NV = f"{SITE}/nvidia"
PHI_GROUPS: list[dict[str, Any]] = [
    {"archs": ["sm_61", "sm_70", "sm_75", "sm_80", "sm_86"], "fatbins": 665},
    {"archs": ["sm_35", "sm_50", "sm_52", "sm_60", "sm_61", "sm_70", "sm_90"], "fatbins": 1},
]
TORCH_GROUPS: list[dict[str, Any]] = [
    {"archs": ["sm_100", "sm_120", "sm_75", "sm_80", "sm_86", "sm_90"], "fatbins": 415},
    {"archs": ["sm_100", "sm_100a", "sm_103", "sm_120", "sm_75", "sm_80", "sm_86", "sm_90"], "fatbins": 61},
]


def _lib(path: str, groups: list[dict[str, Any]], soname: str | None = None) -> dict[str, Any]:
    sass: dict[str, int] = {}
    ptx: dict[str, int] = {}
    for g in groups:
        for a in g["archs"]:
            target = ptx if a.startswith("compute_") else sass
            target[a] = target.get(a, 0) + g["fatbins"]
    return {
        "soname": soname or path.rsplit("/", 1)[-1],
        "needed": [],
        "rpath": [],
        "runpath": [],
        "fatbins": sum(g["fatbins"] for g in groups),
        "sass": sass,
        "ptx": ptx,
        "groups": groups,
        "problem": None,
        "size": 1,
    }


def _opened(lib: str, names: list[str], to: str | None, soname: str | None = None) -> dict[str, Any]:
    return {
        "lib": lib,
        "names": names,
        "opened_as": names[-1] if to else None,
        "to": to,
        "soname": soname or (to.rsplit("/", 1)[-1] if to else None),
    }


def paddle_doc(**changes: Any) -> dict[str, Any]:
    """paddlepaddle-gpu 2.6.2 on NVIDIA's cu11 wheels: everything resolves and loads."""
    cudnn = f"{NV}/cudnn/lib/libcudnn.so.8"
    dyn = [_opened("cudnn", ["libcudnn.so", "libcudnn.so.8"], cudnn)]
    for lib, soname in [
        ("cublas", "libcublas.so.11"),
        ("cublasLt", "libcublasLt.so.11"),
        ("curand", "libcurand.so.10"),
        ("cusolver", "libcusolver.so.11"),
        ("cusparse", "libcusparse.so.11"),
        ("cufft", "libcufft.so.10"),
        ("nccl", "libnccl.so.2"),
    ]:
        dyn.append(_opened(lib, [f"lib{lib}.so", soname], f"{NV}/{lib.lower()}/lib/{soname}"))
    fw = {
        "dir": f"{SITE}/paddle",
        "distribution": "paddlepaddle-gpu",
        "version": "2.6.2",
        "cuda": "11.8",
        "cudnn": "8.6.0",
        "roots": [f"{SITE}/paddle/libs/libphi.so"],
        "dynload_from": f"{SITE}/paddle/libs/libphi.so",
        "links": [
            {
                "from": f"{SITE}/paddle/base/libpaddle.so",
                "name": "libphi.so",
                "to": f"{SITE}/paddle/libs/libphi.so",
                "host": False,
            }
        ],
        "dynload": dyn,
        "loaded": {
            "versions": {"cudnn": 8600, "cublas": "11.11.3", "nccl": 21602},
            "errors": {},
            "maps": {"cudnn": [cudnn]},
        },
    }
    fw.update(changes.pop("framework", {}))
    doc = {
        "kind": "envkit-gpu-readiness",
        "schema": 1,
        "python": "3.10.12",
        "sites": [SITE],
        "frameworks": {"paddle": fw},
        "libraries": {
            f"{SITE}/paddle/libs/libphi.so": _lib(f"{SITE}/paddle/libs/libphi.so", PHI_GROUPS),
            f"{NV}/cublas/lib/libcublasLt.so.11": _lib(
                f"{NV}/cublas/lib/libcublasLt.so.11",
                [
                    {"archs": ["compute_90", "sm_80", "sm_90"], "fatbins": 500},
                    {"archs": ["sm_35"], "fatbins": 35},
                ],
            ),
        },
        "cuda_present": [f"{NV}/cuda_runtime/lib/libcudart.so.11.0"],
        "compat_libcuda": [],
        "ld_library_path": [],
    }
    doc.update(changes)
    return doc


def torch_doc(cuda: str | None = "13.2", groups: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    lib = f"{SITE}/torch/lib/libtorch_cuda.so"
    libraries = {lib: _lib(lib, TORCH_GROUPS if groups is None else groups)} if cuda else {}
    fw = {
        "dir": f"{SITE}/torch",
        "distribution": "torch",
        "version": "2.15.0",
        "cuda": cuda,
        "cudnn": None,
        "roots": [lib] if cuda else [],
        "dynload_from": lib,
        "dynload": [],
        "links": [
            {"from": lib, "name": "libcudart.so.13", "to": f"{NV}/cu13/lib/libcudart.so.13", "host": False},
            {"from": lib, "name": "libcuda.so.1", "to": None, "host": True},
        ]
        if cuda
        else [],
        "loaded": {"versions": {"cudart": 13020} if cuda else {}, "errors": {}, "maps": {}},
    }
    return {
        "kind": "envkit-gpu-readiness",
        "schema": 1,
        "python": "3.11",
        "sites": [SITE],
        "frameworks": {"torch": fw},
        "libraries": libraries,
        "cuda_present": [f"{NV}/cu13/lib/libcudart.so.13"],
        "compat_libcuda": [],
    }


def run(doc: dict[str, Any], *targets: Target) -> CheckResult:
    facts = parse_facts(json.dumps(doc), "test")
    return check(facts, list(targets), load_catalog(), where="test")


def gpu(name: str, driver: str | None = None) -> Target:
    return gpu_target(name, load_catalog(), driver)


def errors(result: CheckResult, i: int = 0) -> list[str]:
    return [f.message for f in result.verdicts[i].findings if f.severity == "error"]


def warnings(result: CheckResult, i: int = 0) -> list[str]:
    return [f.message for f in result.verdicts[i].findings if f.severity == "warning"]


def notes(result: CheckResult, i: int = 0) -> list[str]:
    return [f.message for f in result.verdicts[i].findings if f.severity == "note"]


def test_paddle_flagship_on_h100_has_no_kernel_image_and_on_a100_is_ready() -> None:
    result = run(paddle_doc(), gpu("H100"), gpu("A100"))
    h100, a100 = result.verdicts
    assert h100.status == "will-fail"
    assert errors(result, 0) == [
        "no kernel image for sm_90 in libphi.so (665 of 666 fatbins): Paddle carries sm_61, sm_70, sm_75, "
        "sm_80, sm_86 (and sm_35, sm_50, sm_52, sm_60, sm_90 in a few fatbins) and no PTX"
    ]
    assert a100.status == "ready"
    assert warnings(result, 1) == [
        "1 of 666 fatbins of libphi.so have no code for sm_80 (they carry sm_35, sm_50, sm_52, sm_60, sm_61, "
        "sm_70, sm_90): their kernels fail with 'no kernel image' if used"
    ]
    assert (
        "loaded cuDNN 8.6.0 (/usr/local/lib/python3.10/dist-packages/nvidia/cudnn/lib/libcudnn.so.8)"
        in notes(result, 1)
    )


def test_cudnn_removed_is_paddles_dynload_failing_at_the_first_conv() -> None:
    doc = paddle_doc()
    doc["frameworks"]["paddle"]["dynload"][0] = _opened("cudnn", ["libcudnn.so", "libcudnn.so.8"], None)
    result = run(doc, gpu("A100"))
    assert result.verdicts[0].status == "will-fail"
    assert errors(result) == [
        "libcudnn.so.8 missing: Paddle's dynload fails at the first conv (tried libcudnn.so, libcudnn.so.8)"
    ]


def test_paddle_cu118_on_a_cuda12_base_misses_cublas_11_and_opens_the_wrong_cudnn() -> None:
    doc = paddle_doc()
    dyn = doc["frameworks"]["paddle"]["dynload"]
    dyn[0] = _opened(
        "cudnn", ["libcudnn.so", "libcudnn.so.8"], f"{NV}/cudnn/lib/libcudnn.so", "libcudnn.so.9"
    )
    dyn[0]["opened_as"] = "libcudnn.so"
    dyn[1] = _opened("cublas", ["libcublas.so", "libcublas.so.11"], None)
    result = run(doc)
    found = errors(result)
    assert (
        "libcublas.so.11 missing: Paddle's dynload fails at the first matmul (tried libcublas.so, "
        "libcublas.so.11)" in found
    )
    assert any(
        m.startswith("libcudnn.so opens ")
        and "(libcudnn.so.9) but Paddle 2.6.2 was built for libcudnn.so.8" in m
        for m in found
    )


def test_a_cpu_torch_in_a_cuda_image_is_an_error_and_alone_a_note() -> None:
    result = run(torch_doc(cuda=None), gpu("H100"))
    assert result.verdicts[0].status == "will-fail"
    assert errors(result)[0].startswith(
        "CPU-only torch 2.15.0 in a CUDA image (1 CUDA runtime libraries present)"
    )
    alone = torch_doc(cuda=None) | {"cuda_present": []}
    assert run(alone).verdicts[0].status == "ready"
    assert notes(run(alone)) == ["torch 2.15.0 is a CPU-only build"]


def test_a_gpu_newer_than_the_sass_without_ptx_fails_and_with_ptx_warns() -> None:
    # torch 2.15.0 carries sm_75 ... sm_120 and no PTX: a (hypothetical) sm_130 has no kernel image
    result = run(torch_doc(), gpu("sm_130"), gpu("RTX5090"), gpu("B200"), gpu("V100"))
    assert errors(result, 0) == [
        "no kernel image for sm_130 in libtorch_cuda.so (476 of 476 fatbins): torch carries sm_75, sm_80, "
        "sm_86, sm_90, sm_100, sm_120 (and sm_100a, sm_103 in a few fatbins) and no PTX"
    ]
    assert [v.status for v in result.verdicts] == ["will-fail", "ready", "ready", "will-fail"]
    with_ptx = [{"archs": [*g["archs"], "compute_120"], "fatbins": g["fatbins"]} for g in TORCH_GROUPS]
    jit = run(torch_doc(groups=with_ptx), gpu("sm_130"))
    assert jit.verdicts[0].status == "ready"
    assert warnings(jit) == [
        "libtorch_cuda.so: no SASS for sm_130 in 476 of 476 fatbins; PTX compute_120 only: "
        "kernels JIT-compile "
        "at first use, minutes (then cached in ~/.nv/ComputeCache)"
    ]


def test_ptx_jit_needs_the_toolkits_own_driver_not_the_minor_version_floor() -> None:
    with_ptx = [{"archs": [*g["archs"], "compute_120"], "fatbins": g["fatbins"]} for g in TORCH_GROUPS]
    result = run(torch_doc(groups=with_ptx), gpu("sm_130", "585.05"))
    assert result.verdicts[0].status == "will-fail"
    assert errors(result) == [
        "libtorch_cuda.so: driver 585.05 cannot JIT CUDA 13.2's PTX (needs >= 595.45.04; minor-version "
        "compatibility does not cover PTX JIT)"
    ]


def test_driver_below_the_minor_version_floor_fails() -> None:
    result = run(torch_doc(), Target("driver 470.82", driver="470.82"), gpu("RTX5090", "470.82"))
    assert [v.status for v in result.verdicts] == ["will-fail", "will-fail"]
    assert errors(result, 0) == [
        "driver 470.82 on a CUDA 13.x runtime: below the 580.65.06 floor of CUDA 13 "
        "minor-version compatibility "
        "(a data-center GPU could run it with NVIDIA's cuda-compat forward-compatibility package; "
        "GeForce/RTX "
        "cannot)"
    ]
    assert errors(result, 1)[0].endswith("minor-version compatibility")  # an RTX: no forward-compat hint


def test_the_issues_example_cuda12_on_470() -> None:
    doc = torch_doc()
    doc["frameworks"]["torch"]["links"][0]["name"] = "libcudart.so.12"
    doc["frameworks"]["torch"]["loaded"]["versions"] = {"cudart": 12040}
    result = run(doc, Target("driver 470.82", driver="470.82"))
    assert errors(result)[0].startswith(
        "driver 470.82 on a CUDA 12.x runtime: below the 525.60.13 floor of CUDA 12 "
        "minor-version compatibility"
    )


def test_forward_compatibility_package_in_the_image_on_a_data_center_gpu_is_a_warning() -> None:
    doc = torch_doc() | {"compat_libcuda": ["/usr/local/cuda-13.2/compat/libcuda.so.595.45.04"]}
    result = run(doc, gpu("H100", "550.54.14"), gpu("RTX5090", "550.54.14"))
    assert result.verdicts[0].status == "ready"
    assert "runs only through the forward-compatibility libcuda in the image" in warnings(result, 0)[0]
    assert result.verdicts[1].status == "will-fail"


def test_above_the_floor_below_the_toolkit_driver_is_ready_with_what_it_excludes() -> None:
    result = run(paddle_doc(), gpu("A100", "470.82"))
    assert result.verdicts[0].status == "ready"
    (note,) = [m for m in notes(result) if "minor-version" in m]
    assert note.startswith(
        "driver 470.82 is below CUDA 11.8's own 520.61.05 but at or above 450.80.02, the floor of CUDA 11 "
        "minor-version compatibility: it runs, but PTX produced by a newer toolkit than the driver cannot be "
        "JIT-compiled"
    )


def test_driver_libraries_are_expected_from_the_host_never_an_error() -> None:
    result = run(torch_doc(), gpu("B200"))
    assert result.verdicts[0].status == "ready"
    assert "libcuda.so.1 comes from the host's NVIDIA driver (NVIDIA Container Toolkit)" in notes(result)


def test_a_missing_linked_library_fails_naming_who_links_it() -> None:
    doc = torch_doc()
    doc["frameworks"]["torch"]["links"][0]["to"] = None
    assert errors(run(doc)) == ["libcudart.so.13 missing: torch fails to load (libtorch_cuda.so links it)"]


def test_a_library_that_aborts_when_loaded_is_an_error_with_its_message() -> None:
    doc = paddle_doc()
    doc["frameworks"]["paddle"]["loaded"]["errors"] = {
        "cudnn": "loading /x/libcudnn.so.8: killed by signal 6: "
        "Could not load library libcudnn_ops_infer.so.8. "
        "Error: libnvrtc.so: cannot open shared object file: No such file or directory"
    }
    found = errors(run(doc))
    assert found and found[0].startswith(
        "loading cuDNN fails, as it will at its first use: loading /x/libcudnn.so.8"
    )


def test_version_encodings() -> None:
    assert format_version("cudart", 11080) == "11.8"
    assert format_version("cudart", 13020) == "13.2"
    assert format_version("cudnn", 8600) == "8.6.0"
    assert format_version("cudnn", 91002) == "9.10.2"
    assert format_version("nccl", 21602) == "2.16.2"
    assert format_version("cublas", "11.11.3") == "11.11.3"
    assert format_version("cufft", 10900) == "10.9.0"
    assert format_version("curand", 10300) == "10.3.0"


def test_fingerprint_facts_carry_loaded_versions_and_archs() -> None:
    facts = parse_facts(json.dumps(paddle_doc()), "t")
    summary = fingerprint_facts(facts)
    assert summary["frameworks"]["paddle"]["loaded"] == {
        "cublas": "11.11.3",
        "cudnn": "8.6.0",
        "nccl": "2.16.2",
    }
    assert summary["gpu_code"]["libphi.so"]["ptx"] == []
    assert summary["gpu_code"]["libcublasLt.so.11"]["ptx"] == ["compute_90"]


@pytest.mark.parametrize(
    "doc",
    [
        "not json",
        "[]",
        json.dumps({"kind": "envkit-probe-report", "schema": 1}),
        json.dumps({"kind": "envkit-gpu-readiness", "schema": 1, "frameworks": []}),
        json.dumps(
            {"kind": "envkit-gpu-readiness", "schema": 1, "libraries": {"x": {"sass": {"sm_80": "many"}}}}
        ),
        json.dumps(paddle_doc(framework={"links": [{"from": 1}]})),
        "[" * 100_000,
    ],
)
def test_a_report_of_the_wrong_shape_is_a_readiness_error(doc: str) -> None:
    with pytest.raises(ReadinessError):
        parse_facts(doc, "an image")


def test_a_gpu_older_than_the_toolkits_targets_is_named_once() -> None:
    result = run(torch_doc(), gpu("V100"))
    assert errors(result)[0] == (
        "CUDA 13.2 does not support sm_70 (its targets: sm_75, sm_80, sm_86, sm_89, sm_90, sm_100, sm_103, "
        "sm_110, sm_120, sm_121): torch 2.15.0 cannot use this GPU (its image's "
        "NVIDIA_REQUIRE_ARCH=arch>=7.5 refuses it at start)"
    )


def test_an_nvidia_library_without_code_for_the_gpu_is_a_warning_not_a_verdict() -> None:
    result = run(paddle_doc(), gpu("V100"))  # cuBLASLt here: SASS sm_35/80/90, PTX compute_90 only
    (warning,) = [m for m in warnings(result) if "libcublasLt.so.11" in m]
    assert warning.startswith("no kernel image for sm_70 in libcublasLt.so.11 (535 of 535 fatbins)")
    assert warning.endswith("(in its .nv_fatbin; an NVIDIA library may carry kernels elsewhere)")
