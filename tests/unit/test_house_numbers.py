"""The house's numbers (issue 49 item 4), measured from the source and held at ceilings that only go down.

``python -m tests.unit.test_house_numbers`` prints them. Each ceiling is the number measured when it was
last lowered: a change that adds an untyped dict, a function over 60 lines, a private name imported
across modules or a second class for one concept fails here and says where.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "envkit"

UNTYPED = re.compile(r"\b(?:dict|Mapping|MutableMapping)\[str, ?Any\]")
LONG = 60  # lines, from ``def`` to the last line of the body (decorators not counted)

# Ceilings: the numbers measured on this branch; lower them when a change lowers the count.
MAX_UNTYPED = 155
MAX_LONG = 6
MAX_PRIVATE_IMPORTS = 0
# Generic names once defined in several packages for several concepts: each concept now has its own name.
GENERIC = ("Finding", "Verdict", "Severity")
# Public class names still defined in two modules (two concepts sharing a name): none may be added.
KNOWN_TWICE = {
    "GuardCallback",  # guard.hapi and guard.lightning: one callback per framework, imported one at a time
    "Installer",  # inventory.models (a Literal) and spec.models (the spec's enum): one concept, two layers
    "Kind",  # audit and drift findings' kinds, lock.variant's, a pack file's
    "LossFn",  # guard.localize and guard.loop (guard/ is another session's this round)
    "Wheel",  # catalog.models (a published wheel) and offline.wheelhouse (a fetched one)
}


def modules() -> list[tuple[str, Path, ast.Module]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        found.append((name, path, ast.parse(path.read_text("utf-8"))))
    return found


def untyped_dicts() -> Counter[str]:
    """``dict[str, Any]`` / ``Mapping[str, Any]`` per file (annotations and aliases alike)."""
    counts: Counter[str] = Counter()
    for path in sorted(PACKAGE.rglob("*.py")):
        n = len(UNTYPED.findall(path.read_text("utf-8")))
        if n:
            counts[str(path.relative_to(PACKAGE.parent))] = n
    return counts


def long_functions() -> list[tuple[int, str]]:
    """(lines, module:function) of every function longer than :data:`LONG`, longest first."""
    found = []
    for name, _, tree in modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > LONG:
                    found.append((lines, f"{name}:{node.name}"))
    return sorted(found, reverse=True)


def private_imports() -> list[str]:
    """``from envkit.a import _name`` in a module other than ``envkit.a``, and ``from envkit.pkg._mod import
    …`` outside ``envkit.pkg`` (the shared top-level modules such as ``envkit._proc`` are not counted)."""
    module_names = {name for name, _, _ in modules()}
    found = []
    for name, _, tree in modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("envkit"):
                for alias in node.names:
                    private = alias.name.startswith("_") and not alias.name.startswith("__")
                    if private and f"{node.module}.{alias.name}" not in module_names and node.module != name:
                        found.append(f"{name} <- {node.module}.{alias.name}")
                # a package's private module (envkit.inventory._collect) imported from another package
                parts = node.module.split(".")
                inner = [i for i, part in enumerate(parts) if i >= 2 and part.startswith("_")]
                owner = ".".join(parts[: inner[0]]) if inner else ""
                if inner and name != owner and not name.startswith(owner + "."):
                    found.append(f"{name} <- {node.module}")
    return sorted(found)


def class_homes() -> dict[str, list[str]]:
    """Public class (or ``Literal``/alias) name -> the modules defining it at top level; the scripts that run
    inside images (``envkit/payload/scripts``, standard library only, never imported together) left out."""
    homes: dict[str, list[str]] = {}
    for name, _, tree in modules():
        if name.startswith("envkit.payload.scripts"):
            continue
        for node in tree.body:
            names: list[str] = []
            if isinstance(node, ast.ClassDef):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name) and t.id[:1].isupper()]
                names = [n for n in names if not n.isupper()]  # constants are not types
            for found in names:
                if not found.startswith("_"):
                    homes.setdefault(found, []).append(name)
    return homes


def test_untyped_dicts_do_not_grow() -> None:
    counts = untyped_dicts()
    total = sum(counts.values())
    assert total <= MAX_UNTYPED, (
        f"{total} untyped dicts (ceiling {MAX_UNTYPED}); most: {counts.most_common(5)}"
    )


def test_long_functions_do_not_grow() -> None:
    found = long_functions()
    assert len(found) <= MAX_LONG, f"{len(found)} functions over {LONG} lines (ceiling {MAX_LONG}): {found}"


def test_private_names_are_not_imported_across_modules() -> None:
    found = private_imports()
    assert len(found) <= MAX_PRIVATE_IMPORTS, f"{len(found)} (ceiling {MAX_PRIVATE_IMPORTS}): {found}"


def test_one_name_per_concept() -> None:
    homes = class_homes()
    generic = {n: homes[n] for n in GENERIC if n in homes}
    assert not generic, f"a generic name is back (name the concept: AuditFinding, CompareVerdict): {generic}"
    twice = {n: where for n, where in homes.items() if len(where) > 1 and n not in KNOWN_TWICE}
    assert not twice, f"one class name for two concepts: {twice}"
    manifests = sorted(str(m.relative_to(PACKAGE)) for m in PACKAGE.rglob("manifest.py"))
    assert manifests == ["store/manifest.py"], f"one manifest.py (the run's); name the others: {manifests}"


def test_the_measures_see_what_they_count(tmp_path: Path) -> None:
    """The regular expression and the line count catch what they are meant to (not a vacuous ceiling)."""
    assert UNTYPED.findall("a: dict[str, Any]; b: Mapping[str,Any]; c: dict[str, int]") == [
        "dict[str, Any]",
        "Mapping[str,Any]",
    ]
    body = "\n".join(f"    x{i} = {i}" for i in range(LONG))
    tree = ast.parse(f"def f():\n{body}\n")
    node = tree.body[0]
    assert isinstance(node, ast.FunctionDef) and (node.end_lineno or 0) - node.lineno + 1 == LONG + 1
    assert sum(untyped_dicts().values()) > 0 and long_functions()


if __name__ == "__main__":
    print(f"untyped dicts: {sum(untyped_dicts().values())}")
    print(f"functions over {LONG} lines: {len(long_functions())}")
    for lines, where in long_functions():
        print(f"  {lines:4} {where}")
    print(f"private names imported across modules: {len(private_imports())}")
    for line in private_imports():
        print(f"  {line}")
    print("class names defined in more than one module:")
    for name, homes in sorted(class_homes().items()):
        if len(homes) > 1:
            print(f"  {name}: {', '.join(homes)}")
