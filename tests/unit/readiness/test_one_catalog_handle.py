"""Readiness takes one catalog handle (issue 49): GPU facts come from ``Catalog.gpu``, never as a
parameter of their own beside the catalog."""

from __future__ import annotations

import ast
from pathlib import Path

import envkit.readiness
from envkit.catalog import load_catalog
from envkit.catalog.gpu import load_gpu_facts

READINESS = Path(envkit.readiness.__file__).parent


def test_no_readiness_function_takes_gpu_facts_as_a_parameter() -> None:
    found = []
    for path in sorted(READINESS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
                found += [
                    f"{path.name}:{node.name}({a.arg})"
                    for a in args
                    if a.annotation and "GpuFacts" in ast.unparse(a.annotation)
                ]
    assert found == []


def test_the_catalog_hands_out_the_one_cached_gpu_facts() -> None:
    assert load_catalog().gpu is load_gpu_facts()
    assert load_catalog().gpu.gpu("H100") is not None
