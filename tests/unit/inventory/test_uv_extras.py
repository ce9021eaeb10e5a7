"""Class 6 (issue 26), part: uv.lock extras (the cpu / cu128 layout of uv's PyTorch guide) are
listed when not read, and chosen with ``--environment EXTRA[,EXTRA]`` (as ``uv sync --extra``)."""

from __future__ import annotations

import pytest

from envkit.errors import InventoryError
from envkit.inventory import parse_inventory

# The layout docs.astral.sh/uv/guides/integration/pytorch/ ("Configuring accelerators with optional
# dependencies") locks: one torch per extra, each from its own index, the extras declared conflicting.
UV_LOCK = """\
version = 1
revision = 2
requires-python = ">=3.12"
conflicts = [[
    { package = "project", extra = "cpu" },
    { package = "project", extra = "cu128" },
]]

[[package]]
name = "numpy"
version = "2.2.6"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "project"
version = "0.1.0"
source = { virtual = "." }
dependencies = [
    { name = "numpy" },
]

[package.optional-dependencies]
cpu = [
    { name = "torch", version = "2.7.0+cpu", source = { registry = "https://download.pytorch.org/whl/cpu" } },
]
cu128 = [
    { name = "torch", version = "2.7.0+cu128", source = { registry = "@CU128@" } },
]

[[package]]
name = "torch"
version = "2.7.0+cpu"
source = { registry = "https://download.pytorch.org/whl/cpu" }

[[package]]
name = "torch"
version = "2.7.0+cu128"
source = { registry = "https://download.pytorch.org/whl/cu128" }
""".replace("@CU128@", "https://download.pytorch.org/whl/cu128")


def _read(environment: str | None) -> tuple[dict[str, str], str]:
    inv = parse_inventory(
        UV_LOCK, path="uv.lock", label="lock", format="uv-lock", platform="linux-64", environment=environment
    )
    return {p.name: p.version for p in inv.packages}, inv.meta["selected"]


def test_extras_not_chosen_are_named() -> None:
    packages, selected = _read(None)
    assert packages == {"numpy": "2.2.6"}
    assert "extras not read: cpu, cu128 (choose with --environment EXTRA[,EXTRA])" in selected


@pytest.mark.parametrize(("extra", "torch"), [("cpu", "2.7.0+cpu"), ("cu128", "2.7.0+cu128")])
def test_an_extra_is_chosen(extra: str, torch: str) -> None:
    packages, selected = _read(extra)
    assert packages == {"numpy": "2.2.6", "torch": torch}
    assert f"extras {extra}" in selected


def test_an_unknown_extra_is_an_error_listing_them() -> None:
    with pytest.raises(InventoryError, match="no extra 'cu126'") as info:
        _read("cu126")
    assert info.value.hint is not None and "cpu, cu128" in info.value.hint
