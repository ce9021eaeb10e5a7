"""The fleet fast path of ``diff_packages`` (distinct packages, shared tables) finds what the
label-by-label comparison finds, finding for finding, on random fleets."""

from __future__ import annotations

import random

import pytest

from envkit.drift import diff_inventories, load_rules
from envkit.drift.diff import _diff_by_label, diff_packages
from envkit.inventory import parse_inventory
from envkit.inventory.models import Inventory, Package

VERSIONS = ["1.0", "1.0+cu121", "1.0+cpu", "1.1", "2.0", "2024.1", "", "not a version"]


def _package(rng: random.Random, project: str) -> Package:
    if rng.random() < 0.3:
        build = rng.choice(["py311_0", "h123_1", None])
        channel = rng.choice(["conda-forge", "pkgs/main", None])
        return Package(project, project, rng.choice(VERSIONS), "conda", build, channel, None, 3)
    return Package(project, project, rng.choice(VERSIONS), "pip", None, None, None, rng.choice([1, 2]))


def _fleet(seed: int) -> list[Inventory]:
    rng = random.Random(seed)
    projects = [f"p{i}" for i in range(rng.randint(1, 8))]
    images = []
    for _ in range(rng.randint(1, 4)):  # a few images, each shared by many hosts
        picked = [_package(rng, p) for p in projects if rng.random() < 0.9]
        images.append(tuple(sorted(picked)))
    fmt = rng.choice(["pip-freeze", "conda-list", "snapshot"])
    fleet = []
    for h in range(rng.randint(2, 12)):
        packages = rng.choice(images)
        if rng.random() < 0.2:  # a host of its own: equal packages, other objects
            packages = tuple(Package(*vars(p).values()) for p in packages)
        label = f"h{h}" if rng.random() < 0.95 else "h0"  # now and then a label twice
        fleet.append(Inventory(label, f"{label}.txt", rng.choice([fmt, "pip-freeze"]), packages))
    return fleet


@pytest.mark.parametrize("seed", range(300))
def test_the_fast_path_finds_what_the_label_by_label_path_finds(seed: int) -> None:
    fleet = _fleet(seed)
    policy = load_rules().policy
    tables = [inv.primary() for inv in fleet]
    assert diff_packages(fleet, policy) == _diff_by_label(fleet, tables, policy)


def test_hosts_read_from_one_text_share_one_table_and_the_diff_is_unchanged() -> None:
    text = "numpy==1.26.4\ntorch==2.4.1+cu121\nrequests==2.31.0\n"
    same = [parse_inventory(text, path=f"h{i}.txt", label=f"h{i}") for i in range(5)]
    other = parse_inventory(text.replace("1.26.4", "2.0.1"), path="odd.txt", label="odd")
    assert same[0].packages is same[1].packages and same[0].primary() is same[4].primary()
    fleet = [*same, other]
    report = diff_inventories(fleet)
    (numpy,) = [f for f in report.findings if f.package == "numpy"]
    assert numpy.values == {**{f"h{i}": "1.26.4" for i in range(5)}, "odd": "2.0.1"}
    assert numpy.message.startswith("numpy: version majority 1.26.4 (5/6); outliers: odd 2.0.1")
    tables = [inv.primary() for inv in fleet]
    assert diff_packages(fleet, load_rules().policy) == _diff_by_label(fleet, tables, load_rules().policy)
