"""The image's NVIDIA_REQUIRE_ARCH from the framework's fatbins (`gpu-code.json`), not the CUDA release:
the expression admits exactly the compute capabilities `envkit check`'s framework rule runs on, and
a malformed `gpu-code.json` is an error naming the field."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest

from envkit.catalog import load_catalog
from envkit.catalog.require import (
    fatbin_arch_requirement,
    framework_runs,
    gpu_code_arch_requirement,
    satisfies,
)

GPU = load_catalog().gpu
# every capability from 3.0 to 13.9: the catalog's GPUs and the ones between
CAPABILITIES = [(major, minor) for major in range(3, 14) for minor in range(10)]

TORCH_215 = [  # torch 2.15.0+cu132's libtorch_cuda.so (476 fatbins) as envkit and readelf read it
    ({"sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"}, 413),
    ({"sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_103", "sm_120"}, 59),
    ({"sm_75", "sm_80", "sm_86", "sm_90", "sm_90a", "sm_100", "sm_120"}, 4),
]
PADDLE_262 = [  # paddlepaddle-gpu 2.6.2's libphi.so: sm_61 ... sm_86, one stray fatbin of older/newer archs
    ({"sm_61", "sm_70", "sm_75", "sm_80", "sm_86"}, 665),
    ({"sm_35", "sm_50", "sm_52", "sm_60", "sm_61", "sm_70", "sm_90"}, 1),
]


@pytest.mark.parametrize(
    ("libraries", "expected"),
    [
        ([(TORCH_215, 476)], "arch>=7.5,arch<11.0 arch>=12.0,arch<13.0"),
        ([(PADDLE_262, 666)], "arch>=6.1,arch<9.0"),
        ([([({"sm_80", "compute_80"}, 3)], 3)], "arch>=8.0"),  # PTX: every later GPU, by JIT
        ([([({"sm_90a"}, 2)], 2)], "arch>=9.0,arch<9.1"),  # 'a' SASS: its exact capability only
        ([([({"sm_80"}, 1)], 1), ([({"sm_86"}, 1)], 1)], "arch>=8.6,arch<9.0"),  # every library must run
        ([([({"sm_70"}, 1), ({"sm_80"}, 1)], 2)], "arch>=7.0,arch<9.0"),  # half without: a warning only
        ([([({"sm_70"}, 1), ({"sm_80"}, 2)], 3)], "arch>=8.0,arch<9.0"),  # most without: no kernel image
        ([([({"sm_80"}, 1)], 1), ([({"sm_90"}, 1)], 1)], "arch<0.0"),  # no GPU runs both
        ([], None),
    ],
)
def test_the_expression_from_fatbins(libraries: Any, expected: str | None) -> None:
    assert fatbin_arch_requirement(libraries) == expected


@pytest.mark.parametrize(
    "libraries",
    [
        [(TORCH_215, 476)],
        [(PADDLE_262, 666)],
        [(TORCH_215, 476), ([({"sm_80", "sm_90"}, 33)], 33)],
        [([({"sm_50", "compute_50"}, 5), ({"sm_86"}, 4)], 9)],
        [([({"sm_52"}, 3), ({"sm_60", "sm_70"}, 3), ({"sm_90a", "compute_90a"}, 2)], 8)],
    ],
)
def test_the_expression_admits_exactly_where_the_framework_rule_runs(libraries: Any) -> None:
    expression = fatbin_arch_requirement(libraries)
    assert expression is not None
    for cc in itertools.chain(CAPABILITIES, (g.capability for g in GPU.gpus.list)):
        runs = all(framework_runs(groups, n, cc) for groups, n in libraries)
        assert satisfies(expression, arch=f"{cc[0]}.{cc[1]}") is runs, (expression, cc)


def _doc() -> dict[str, Any]:
    groups = [{"archs": sorted(a), "fatbins": n} for a, n in TORCH_215]
    lib = {"member": "torch/lib/libtorch_cuda.so", "fatbins": 476, "groups": groups, "problem": None}
    op = {
        "member": "torch/lib/libtorch_cuda_linalg.so",
        "fatbins": 1,
        "groups": [{"archs": ["sm_80"], "fatbins": 1}],
    }
    ext = {"member": "ext/_k.so", "fatbins": 1, "groups": [{"archs": ["sm_90"], "fatbins": 1}]}
    return {
        "kind": "envkit-gpu-code",
        "version": 1,
        "wheels": [
            {"name": "torch", "version": "2.15.0", "sha256": "a" * 64, "libraries": [lib, op],
             "linked": ["torch/lib/libtorch_cuda.so"]},
            {"name": "ext", "version": "1.0", "sha256": "b" * 64, "libraries": [ext]},
        ],
    }  # fmt: skip


def test_only_what_the_framework_loads_at_import_and_no_other_wheel_decide() -> None:
    found = gpu_code_arch_requirement(_doc(), pinned={"a" * 64})
    assert found.value == "arch>=7.5,arch<11.0 arch>=12.0,arch<13.0"
    assert found.source == "the fatbins of torch 2.15.0: libtorch_cuda.so (gpu-code.json)"
    doc = _doc()
    del doc["wheels"][0]["linked"]  # a file from before `linked`: every torch library counts
    assert gpu_code_arch_requirement(doc).value == "arch>=8.0,arch<9.0"


def test_a_file_of_another_lock_or_without_the_framework_gives_no_expression() -> None:
    stale = gpu_code_arch_requirement(_doc(), pinned={"c" * 64})
    assert stale.value is None and "sha256 the lock does not pin" in stale.source
    doc = _doc()
    doc["wheels"] = doc["wheels"][1:]
    assert gpu_code_arch_requirement(doc).source.startswith("gpu-code.json records no framework wheel")
    doc = _doc()
    doc["wheels"][0]["libraries"][0]["problem"] = "more than 4294967296 bytes: not read"
    assert gpu_code_arch_requirement(doc).source == (
        "torch 2.15.0 in gpu-code.json was not read whole "
        "(torch/lib/libtorch_cuda.so: more than 4294967296 bytes: not read)"
    )


def _lib(doc: dict[str, Any]) -> dict[str, Any]:
    lib: dict[str, Any] = doc["wheels"][0]["libraries"][0]
    return lib


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda d: d.update(kind="x"), "not an envkit-gpu-code version 1 document"),
        (lambda d: d.update(wheels={}), "wheels is not a list"),
        (lambda d: d["wheels"][0].update(name=3), "wheels[0].name is not a str"),
        (lambda d: d["wheels"][0].update(linked="torch"), "wheels[0].linked is not a list"),
        (lambda d: _lib(d).update(fatbins="476"), "wheels[0].libraries[0].fatbins is not an int"),
        (lambda d: _lib(d).update(fatbins=True), "wheels[0].libraries[0].fatbins is not an int"),
        (lambda d: _lib(d)["groups"][0].update(archs=[1]), "libraries[0].groups[0].archs is not a list of"),
        (lambda d: _lib(d).update(fatbins=3), "libraries[0]: its groups hold more fatbins than its 3"),
        (lambda d: d["wheels"][0]["libraries"].append(None), "libraries[2] is not a dict"),
    ],
)  # fmt: skip
def test_a_malformed_document_names_the_field(edit: Any, words: str) -> None:
    doc = copy.deepcopy(_doc())
    edit(doc)
    with pytest.raises(ValueError, match=r".*") as e:
        gpu_code_arch_requirement(doc)
    assert words in str(e.value)
