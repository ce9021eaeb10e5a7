"""The walk of ``envkit init --from`` enters the catalog once (issue 45).

The walk asks the catalog in one call, :func:`envkit.adopt.releases.read_releases`, which reads
each of its tables once and passes typed answers (:class:`envkit.adopt.releases.Releases`) down;
the written spec is validated as ``envkit validate`` does (:func:`envkit.spec.load.load_spec`) on
those tables (``Releases.tables``), not on the catalog again. A catalog that records who reads it
shows it: before, planning read it 26 times from 4 modules (adopt, decide, python_of, refusals) for
one environment.yml beside validate's 20; then 4 reads in planning and validate's 20; now one read
of each table, all in ``read_releases``.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import fields
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from envkit.adopt import adopt
from envkit.catalog import Catalog, load_catalog

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "init"
SOURCES = [
    CORPUS / "environment-yml" / "bark-environment-cuda.yml",
    CORPUS / "requirements" / "graphmolai-requirements-cuda.txt",
    CORPUS / "dockerfile" / "alufia-pytorch260-devel.Dockerfile",  # FROM pytorch/pytorch: a base-image row
]
ENTRIES = {"read_releases", "load_spec"}  # the planner's one entry, and validate's


class _Recording:
    """The shipped catalog, recording for every attribute read the outermost entry it came through."""

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self.entries: Counter[str] = Counter()  # entry function -> attribute reads under it
        self.names: Counter[str] = Counter()  # attribute -> reads, under any entry
        self.outside: list[str] = []  # reads under no entry: module.function of the reader

    def __getattr__(self, name: str) -> Any:
        frame: FrameType | None = sys._getframe(1)
        reader = f"{Path(frame.f_code.co_filename).stem}.{frame.f_code.co_name}" if frame else "?"
        entry = None
        while frame is not None:
            if frame.f_code.co_name in ENTRIES and "envkit" in frame.f_code.co_filename:
                entry = frame.f_code.co_name
            frame = frame.f_back
        if entry is None:
            self.outside.append(f"{reader}: {name}")
        else:
            self.entries[entry] += 1
            self.names[name] += 1
        return getattr(self._catalog, name)


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_the_walk_of_init_from_enters_the_catalog_once(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: Counter[str] = Counter()
    from envkit.adopt.releases import read_releases as real_read
    from envkit.spec.load import load_spec as real_load

    def read_releases(*args: Any, **kwargs: Any) -> Any:
        calls["read_releases"] += 1
        return real_read(*args, **kwargs)

    checked: list[object] = []

    def load_spec(path: Any, catalog: Any = None, **kwargs: Any) -> Any:
        calls["load_spec"] += 1
        checked.append(catalog)
        return real_load(path, catalog, **kwargs)

    monkeypatch.setattr("envkit.adopt.plan.read_releases", read_releases)  # where the plan calls it
    monkeypatch.setattr("envkit.adopt.adoption.load_spec", load_spec)
    catalog = _Recording(load_catalog())
    adopt(str(source), tmp_path, catalog=catalog)  # type: ignore[arg-type]
    assert catalog.outside == []  # nothing of the walk reads the catalog outside read_releases
    assert calls == {"read_releases": 1, "load_spec": 1}  # the spec is still validated, once
    assert checked and all(c is not catalog and isinstance(c, Catalog) for c in checked)  # on the tables
    assert set(catalog.entries) == {"read_releases"}  # validate's 20 reads are gone
    tables = {f.name for f in fields(Catalog)}
    assert set(catalog.names) == tables and set(catalog.names.values()) == {1}  # each table read once
