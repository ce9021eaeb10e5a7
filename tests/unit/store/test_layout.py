"""The store's layout: reports filed by host and label, resolved back from what a user types."""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.errors import ReportError, UsageError
from envkit.store.layout import (
    check_run_id,
    default_store,
    resolve_report,
    safe_name,
    save_to_store,
    store_path,
    task_name,
)


def test_store_layout_and_resolution(tmp_path: Path) -> None:
    store = tmp_path / "store"
    path = save_to_store('{"a": 1}\n', store, "gpu-a", "latest")
    assert path == store / "gpu-a" / "latest.json"
    assert path.read_text() == '{"a": 1}\n'
    assert resolve_report("gpu-a", store) == path
    assert resolve_report("gpu-a/latest", store) == path
    other = save_to_store("{}\n", store, "gpu-b", "tf32")
    assert resolve_report("gpu-b", store) == other  # the only report of that host
    save_to_store("{}\n", store, "gpu-b", "strict")
    with pytest.raises(ReportError, match="several reports"):
        resolve_report("gpu-b", store)
    with pytest.raises(ReportError, match="neither a report file nor a host"):
        resolve_report("nowhere", store)


def test_default_store_honours_env(tmp_path: Path) -> None:
    assert default_store(tmp_path, {}) == tmp_path / ".envkit" / "reports"
    assert default_store(tmp_path, {"ENVKIT_STORE": "/shared/r"}) == Path("/shared/r")


@pytest.mark.parametrize(
    ("host", "label", "where"),
    [
        ("../../etc", "passwd", "etc/passwd.json"),
        ("a/b", "../c", "a_b/c.json"),
        ("", "", "unnamed/unnamed.json"),
        ("..", ".hidden", "unnamed/hidden.json"),
        ("gpu 7\n", "x;rm -rf", "gpu_7/x_rm_-rf.json"),
    ],
)
def test_hostile_names_stay_one_level_inside_the_store(
    tmp_path: Path, host: str, label: str, where: str
) -> None:
    assert store_path(tmp_path, host, label) == tmp_path / where
    assert "/" not in safe_name(host) and safe_name(host) not in ("", ".", "..")


def test_a_report_without_a_host_is_filed_as_unknown(tmp_path: Path) -> None:
    assert save_to_store("{}", tmp_path, None, "x") == tmp_path / "unknown" / "x.json"


@pytest.mark.parametrize("bad", ["", "../x", ".hidden", "a/b", "x" * 81, "run id", "-x"])
def test_run_ids_are_plain_names(bad: str) -> None:
    with pytest.raises(UsageError, match="invalid run id"):
        check_run_id(bad)


def test_task_names() -> None:
    assert task_name("gpu/7", 3, 1) == "gpu_7"
    assert task_name("gpu7", 3, 4) == "gpu7-3"
    assert task_name("..", 0, 1) == "node"
