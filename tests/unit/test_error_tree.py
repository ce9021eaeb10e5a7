"""Every exception class envkit defines is in the ``EnvkitError`` tree (``envkit/errors.py``): one
that reaches the CLI prints ``error:``/``hint:`` and its exit code, not a traceback; the rest say why."""

from __future__ import annotations

import ast
import builtins
import importlib
from pathlib import Path

import pytest

from envkit import errors
from envkit.errors import CatalogError, EnvkitError, ExitCode, UsageError

PACKAGE = Path(__file__).resolve().parents[2] / "envkit"

# Outside the tree on purpose: (module, class) -> why.
OUTSIDE = {
    # runs inside an image with the standard library only: it cannot import envkit.errors
    ("envkit.payload.scripts.elfscan", "ElfProblem"): "payload",
    # a module's private signal, caught in that module
    ("envkit._json", "_Unusual"): "private",
    ("envkit.audit.osv_dir", "_Corrupt"): "private",
    ("envkit.audit.index", "_Corrupt"): "private",
    ("envkit.inventory.read", "_Uncached"): "private",
    ("envkit.guard.dump", "_Duplicate"): "private",
}


def exception_classes() -> list[tuple[str, str]]:
    """(module, class) of every class in envkit/ deriving from an exception: found by their bases' names
    (a builtin exception, or a class found so), then imported and checked; only those modules are imported."""
    classes: list[tuple[str, str, set[str]]] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.parse(path.read_text("utf-8")).body:
            if isinstance(node, ast.ClassDef) and module != "envkit.errors":
                bases = {
                    b.id if isinstance(b, ast.Name) else b.attr
                    for b in node.bases
                    if isinstance(b, ast.Name | ast.Attribute)
                }
                classes.append((module, node.name, bases))
    known = {
        n
        for n in dir(builtins)
        if isinstance(getattr(builtins, n), type) and issubclass(getattr(builtins, n), BaseException)
    }
    known |= set(vars(errors))
    while True:
        more = {name for _, name, bases in classes if bases & known} - known
        if not more:
            break
        known |= more
    found = []
    for module, name, bases in classes:
        if bases & known:
            value = getattr(importlib.import_module(module), name)
            assert isinstance(value, type) and issubclass(value, BaseException), f"{module}.{name}"
            found.append((module, name))
    return found


def test_every_error_class_is_in_the_tree_or_says_why() -> None:
    classes = exception_classes()
    assert len(classes) >= 10
    outside = []
    for module, name in classes:
        value = getattr(importlib.import_module(module), name)
        if not issubclass(value, EnvkitError) and (module, name) not in OUTSIDE:
            outside.append(f"{module}.{name}")
    assert not outside, f"exception classes outside envkit.errors.EnvkitError: {outside}"


def test_the_exceptions_listed_outside_still_exist_and_are_outside() -> None:
    found = set(exception_classes())
    for module, name in OUTSIDE:
        assert (module, name) in found, f"{module}.{name} is gone: drop it from OUTSIDE"
        assert not issubclass(getattr(importlib.import_module(module), name), EnvkitError)


def test_a_yaml_problem_keeps_its_message_and_line_and_is_a_usage_error() -> None:
    from envkit._yaml import YamlProblem, load_bounded

    with pytest.raises(YamlProblem) as caught:
        load_bounded("a: &x [1]\nb: *x\n", max_bytes=1024)
    problem = caught.value
    assert isinstance(problem, UsageError) and problem.exit_code == ExitCode.USAGE
    assert problem.line == 2 and str(problem) == problem.message and "alias" in problem.message
    assert problem.hint is None


def test_an_invalid_mapping_is_a_catalog_error_and_still_a_value_error() -> None:
    from envkit.catalog.conda_pypi import MappingInvalid, parse_mapping

    with pytest.raises(MappingInvalid) as caught:
        parse_mapping(b"[]")
    assert isinstance(caught.value, CatalogError) and isinstance(caught.value, ValueError)
    assert caught.value.exit_code == ExitCode.FAILURE
    assert str(caught.value) == caught.value.message == "not a JSON object of conda names (a list)"


def test_the_bounded_reads_refusals_are_usage_errors_and_not_regular_is_still_an_os_error(
    tmp_path: Path,
) -> None:
    from envkit._io import NotRegular, TooLarge, read_bytes_bounded

    big = tmp_path / "big"
    big.write_bytes(b"x" * 10)
    with pytest.raises(TooLarge) as too_large:
        read_bytes_bounded(big, 4)
    assert isinstance(too_large.value, UsageError) and too_large.value.exit_code == ExitCode.USAGE
    assert str(too_large.value) == too_large.value.message == f"{big}: larger than 4 bytes"
    with pytest.raises(NotRegular) as not_regular:
        read_bytes_bounded(tmp_path, 4)
    error = not_regular.value
    assert isinstance(error, UsageError) and isinstance(error, OSError)
    assert error.filename == str(tmp_path) and error.errno is not None and error.strerror
    assert error.strerror in str(error)
    assert error.message == f"{tmp_path}: {error.strerror}" and error.hint is None
