"""Grade envkit's inventory readers on the real-world corpus (``tests/corpus/inventory``).

Each corpus file is read with :func:`envkit.inventory.read_inventory`; the facts a careful
engineer reads in it (its record's ``expected``, written by hand) are compared with what envkit
reads. A fact envkit states differently, a framework it loses, or an "unknown" it turns into a
value ("no GPU" for "Could not collect") is **wrong**; a fact it leaves unknown, a package count
off, a secondary fact (cuDNN, GPU count) different is **minor**; a reader error is **refused**
(``exact`` when the record expects that refusal and the message names what the file is); any
other exception is a **crash**.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from packaging.version import Version

from envkit.drift.facts import FACTS, major_minor
from envkit.drift.host import host_facts
from envkit.drift.torch_flavour import inventory_os
from envkit.errors import EnvkitError
from envkit.inventory import read_inventory
from envkit.inventory.models import Inventory, Package
from tests.corpus._record import ROOT, Graded, Level, Record, records

__all__ = ["CRITICAL", "facts_of", "grade", "grade_all"]

SURFACE = "inventory"
CRITICAL = frozenset(
    {"kind", "python", "torch", "torch_cuda", "paddle", "paddle_cuda", "cuda", "os", "gpu", "driver"}
)
FRAMEWORKS = frozenset({"torch", "paddle"})
UNKNOWN = "unknown"
# host facts a collect_env records about its machine: absent there means none, unless not collected
_HOST_GPU = ("gpu", "driver")


def grade_all(root: Path = ROOT) -> list[Graded]:
    """Every inventory record of the corpus, graded."""
    return [grade(record) for record in records(SURFACE, root)]


def _read(record: Record, **options: str) -> Inventory:
    return read_inventory(record.path, **options)


def grade(record: Record) -> Graded:
    expected = record.expected
    try:
        inv = _read(record, **_first_options(expected))
    except EnvkitError as e:
        return _refused(record, e)
    except Exception as e:  # the level the corpus exists to catch  # noqa: BLE001
        return Graded(record, "crash", f"{type(e).__name__}: {str(e)[:200]}")
    if "refuse" in expected:
        return Graded(record, "wrong", f"read as {inv.format} ({len(inv.primary())} packages), not refused")
    try:
        measured = facts_of(inv, record)
    except EnvkitError as e:  # a second reading (another platform or Python) refused
        return _refused(record, e)
    except Exception as e:  # noqa: BLE001
        return Graded(record, "crash", f"{type(e).__name__}: {str(e)[:200]}")
    return _compare(record, expected, measured)


def _first_options(expected: Mapping[str, Any]) -> dict[str, str]:
    """A multi-platform (or multi-Python) lock is first read for the first platform (Python) its record
    names: the default, this machine's, may be one the lock has nothing for."""
    options: dict[str, str] = {}
    for key, option in (("packages_by_platform", "platform"), ("packages_by_python", "python")):
        wanted = expected.get(key)
        if isinstance(wanted, Mapping) and wanted:
            options[option] = str(next(iter(wanted)))
    return options


def _refused(record: Record, e: EnvkitError) -> Graded:
    wanted = record.expected.get("refuse")
    text = f"{e.message} {e.hint or ''}".replace(str(record.path), "FILE")  # the file name says nothing
    if wanted and str(wanted).lower() in text.lower():
        return Graded(record, "exact", f"refused as expected: {e.message[:160]}")
    if wanted:
        return Graded(record, "minor", f"refused, without naming {wanted}: {e.message[:160]}")
    return Graded(record, "refused", e.message[:200])


def facts_of(inv: Inventory, record: Record) -> dict[str, Any]:
    """The facts of ``inv`` in the keys of the records' ``expected``."""
    table = inv.primary()
    host = host_facts(inv)
    not_collected = set(filter(None, inv.meta.get("not_collected", "").split(",")))
    facts: dict[str, Any] = {
        "kind": inv.format,
        "python": FACTS["python_minor"](inv, table),
        "torch": table["torch"].version if "torch" in table else None,
        "torch_cuda": FACTS["torch_cuda"](inv, table) if "torch" in table else None,
        "paddle": _paddle(table),
        "paddle_cuda": FACTS["paddle_cuda"](inv, table),
        "cudnn": _cudnn(host, inv, table),
        "os": inventory_os(inv, table),
        "gpu_count": int(inv.meta["gpu_count"]) if "gpu_count" in inv.meta else None,
        "packages": _package_count(inv),
        "environments": 2 if "environments" in inv.meta else 1,
        "python_range": inv.meta.get("requires_python"),
    }
    facts["cuda"] = _cuda(host, not_collected, inv, table)
    for fact in _HOST_GPU:
        if fact in host:
            facts[fact] = host[fact]
        elif fact in not_collected:
            facts[fact] = UNKNOWN
        elif inv.format == "collect-env":
            facts[fact] = "none"  # a collect_env that says nothing of the GPU: read as no GPU
        else:
            facts[fact] = None
    facts.update(_by_option(record, "packages_by_platform", "platform"))
    facts.update(_by_option(record, "packages_by_python", "python"))
    if "projects" in record.expected:
        facts["projects"] = {name: _project(table, name) for name in record.expected["projects"]}
    if "absent_on_linux" in record.expected:
        linux = _read(record, platform="linux-64").primary()
        facts["absent_on_linux"] = sorted(n for n in record.expected["absent_on_linux"] if n not in linux)
    if "cuda_majors" in record.expected:
        facts["cuda_majors"] = _cuda_majors(inv, table)
    if "cuda_libraries" in record.expected:
        facts["cuda_libraries"] = len(_cuda_majors(inv, table))
    return facts


def _package_count(inv: Inventory) -> int:
    """The packages read: rows (a conda list's numpy and numpy-base are two); collect_env's
    ``[pip3]``/``[conda]`` views of one environment once each, of two environments the compared one."""
    if inv.format != "collect-env":
        return len(inv.packages)
    if "environments" in inv.meta:
        active = inv.meta.get("active_env")
        return len({p.project for p in inv.packages if p.env in (active, "header")})
    return len(inv.primary())


def _paddle(table: Mapping[str, Package]) -> str | None:
    for name in ("paddlepaddle-gpu", "paddlepaddle"):
        if name in table:
            return table[name].version
    return None


def _cudnn(host: Mapping[str, str], inv: Inventory, table: dict[str, Package]) -> str | None:
    if "cudnn" in host:
        return host["cudnn"].split(".", 1)[0]
    return FACTS["cudnn_major"](inv, table)


def _cuda(host: Mapping[str, str], not_collected: set[str], inv: Inventory, table: dict[str, Package]) -> Any:
    if "cuda_runtime" in host:
        return major_minor(host["cuda_runtime"])
    if "cuda_runtime" in not_collected:
        return UNKNOWN
    return FACTS["cuda_toolkit"](inv, table)


def _project(table: Mapping[str, Package], name: str) -> str | None:
    for package in table.values():
        if package.name == name:
            return package.project
    return None


def _by_option(record: Record, key: str, option: str) -> dict[str, Any]:
    wanted = record.expected.get(key)
    if not isinstance(wanted, Mapping):
        return {}
    try:
        counts = {str(value): len(_read(record, **{option: str(value)}).primary()) for value in wanted}
    except TypeError:  # a reader without that option: the fact is not read
        return {key: None}
    return {key: counts}


def _cuda_majors(inv: Inventory, table: dict[str, Package]) -> list[str]:
    try:
        from envkit.drift.rules import cuda_library_majors
    except ImportError:  # a drift layer without that function: the fact is not read
        return []
    return sorted(cuda_library_majors(inv, table))


def _compare(record: Record, expected: Mapping[str, Any], measured: Mapping[str, Any]) -> Graded:
    wrong: list[str] = []
    minor: list[str] = []
    for key, want in expected.items():
        if key == "refuse" or (want is None and key not in CRITICAL):
            continue  # a fact the record leaves ungraded (it depends on an option: see packages_by_*)
        got = measured.get(key)
        verdict = _judge(key, want, got)
        if verdict == "ok":
            continue
        line = f"{key}: expected {want!r}, read {got!r}"
        (wrong if verdict == "wrong" else minor).append(line)
    level: Level = "wrong" if wrong else ("minor" if minor else "exact")
    return Graded(record, level, "; ".join(wrong + minor))


_SAME: dict[str, Callable[[Any, Any], bool]] = {
    "python_range": lambda want, got: got is not None and _norm(want) == _norm(got),
}


def _norm(text: Any) -> str:
    return str(text).replace(" ", "")


def _equal(want: Any, got: Any) -> bool:
    return bool(_value(want) == _value(got))


def _judge(key: str, want: Any, got: Any) -> str:
    """``ok``, ``minor`` or ``wrong`` for one fact."""
    same = _SAME.get(key, _equal)
    if same(want, got):
        return "ok"
    critical = key in CRITICAL
    if want == UNKNOWN:
        if got in (None, UNKNOWN):
            return "ok"
        return "wrong" if critical else "minor"  # a value (or "none") where the file says it cannot tell
    if want is None:
        return "wrong" if critical else "minor"  # envkit claims what the file does not have
    if got in (None, UNKNOWN):
        return "wrong" if key in FRAMEWORKS or key == "kind" else "minor"  # a fact left unknown
    if key in FRAMEWORKS and _public(want) is not None and _public(want) == _public(got):
        return "minor"  # one release, one side with a local label (+c068180); the flavour is graded apart
    return "wrong" if critical else "minor"


def _public(text: Any) -> str | None:
    try:
        return Version(str(text)).public
    except ValueError:
        return None


def _value(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_value(v) for v in value]
    return None if value is None else str(value)


def summary(graded: list[Graded]) -> dict[str, int]:
    """Counts per level (for tests and the benchmark)."""
    counts = dict.fromkeys(("exact", "minor", "wrong", "refused", "crash"), 0)
    for g in graded:
        counts[g.level] += 1
    return counts


def as_rows(graded: list[Graded]) -> list[dict[str, Any]]:
    return [dataclasses.asdict(g.record) | {"measured": g.level, "detail": g.detail} for g in graded]
