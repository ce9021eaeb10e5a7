"""The Ray scheduler's pure parts (a real cluster: tests/integration/test_fleet_ray.py)."""

from __future__ import annotations

from envkit.fleet.ray_scheduler import node_names


def test_node_names_are_ray_names_when_distinct_else_ids() -> None:
    nodes = [
        {"NodeID": "a" * 56, "NodeName": "gpu1", "Alive": True},
        {"NodeID": "b" * 56, "NodeName": "gpu2", "Alive": True},
        {"NodeID": "c" * 56, "NodeName": "gpu3", "Alive": False},
    ]
    assert node_names(nodes) == {"a" * 56: "gpu1", "b" * 56: "gpu2"}
    same = [{**n, "NodeName": "127.0.0.1"} for n in nodes]
    assert node_names(same) == {"a" * 56: "ray-" + "a" * 12, "b" * 56: "ray-" + "b" * 12}
