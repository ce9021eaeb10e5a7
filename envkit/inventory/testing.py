"""Fakes for the inventory stage's tests (one convention: a stage's fakes live in its ``testing.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["FakeSource"]


@dataclass
class FakeSource:
    """A fixed environment for tests."""

    hostname: str = "fake-host"
    python_version: str = "3.11.9"
    platform_name: str = "linux-x86_64"
    conda: list[dict[str, Any]] | None = None
    dists: list[tuple[str, str]] = field(default_factory=list)
    host_facts: dict[str, str] = field(default_factory=dict)

    def host(self) -> str:
        return self.hostname

    def python(self) -> str:
        return self.python_version

    def platform(self) -> str:
        return self.platform_name

    def conda_records(self) -> list[dict[str, object]] | None:
        return self.conda

    def distributions(self) -> list[tuple[str, str]]:
        return list(self.dists)

    def facts(self) -> dict[str, str]:
        return dict(self.host_facts)
