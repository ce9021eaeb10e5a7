"""Class 3 (issue 26): a conda -> PyPI mapping download is checked whole before anything is written.

`envkit catalog refresh-names --file F` reads F as the download would be read: anything that is not
``{conda name: PyPI name | null}`` (bounded) is a clear error naming the file, exit 3, nothing written.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from envkit.catalog.conda_pypi import MAX_MAPPING_BYTES, MappingInvalid, parse_mapping, read_gzip_bounded

from .conftest import Run

GOOD = {"pytorch": "torch", "pyqt": "pyqt5", "libprotobuf": None, "numpy": "numpy"}

HOSTILE: dict[str, bytes] = {
    "an empty object": b"{}",
    "a list": b'[["pytorch", "torch"]]',
    "a string": b'"pytorch"',
    "not JSON": b"{pytorch: torch",
    "not UTF-8": b'{"py\xfftorch": "torch"}',
    "an integer value": b'{"pytorch": 1}',
    "an object value": b'{"pytorch": {"name": "torch"}}',
    "an empty list value": b'{"pytorch": []}',
    "a list with a number": b'{"pytorch": ["torch", 2]}',
    "a slash in the conda name": b'{"../../etc/passwd": "torch"}',
    "an absolute conda name": b'{"/etc/passwd": "torch"}',
    "a NUL in the conda name": b'{"py\\u0000torch": "torch"}',
    "a slash in the PyPI name": b'{"pytorch": "../torch"}',
    "a NUL in the PyPI name": b'{"pytorch": "tor\\u0000ch"}',
    "an upper-case conda name": b'{"PyTorch": "torch"}',
    "an empty conda name": b'{"": "torch"}',
    "a too long PyPI name": json.dumps({"x": "a" * 300}).encode(),
    "deep nesting": b'{"x": ' + b"[" * 5000 + b"]" * 5000 + b"}",
}


@pytest.mark.parametrize("body", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_mappings_are_refused(body: bytes) -> None:
    with pytest.raises(MappingInvalid):
        parse_mapping(body)


def test_a_huge_mapping_is_refused_before_parsing() -> None:
    with pytest.raises(MappingInvalid, match="larger than"):
        parse_mapping(b" " * (MAX_MAPPING_BYTES + 1))


def test_a_gzip_bomb_is_refused_not_inflated() -> None:
    bomb = gzip.compress(b"0" * (MAX_MAPPING_BYTES + 1), mtime=0)
    with pytest.raises(MappingInvalid, match="once decompressed"):
        read_gzip_bounded(bomb)
    with pytest.raises(MappingInvalid, match="not a gzip file"):
        read_gzip_bounded(b"\x1f\x8bnot really")


def test_both_parselmouth_shapes_read() -> None:
    assert parse_mapping(json.dumps(GOOD).encode()) == GOOD
    # the per-channel files hold lists: the name equal to the conda name wins, else the first
    lists = {"torchserve": ["torchserve", "torchserve-staging"], "faiss-cpu": ["faiss"], "cpuonly": None}
    assert parse_mapping(json.dumps(lists).encode()) == {
        "torchserve": "torchserve",
        "faiss-cpu": "faiss",
        "cpuonly": None,
    }


@pytest.mark.parametrize("body", HOSTILE.values(), ids=HOSTILE.keys())
def test_refresh_names_refuses_a_hostile_download_and_writes_nothing(
    tmp_path: Path, envkit: Callable[..., Run], body: bytes
) -> None:
    src = tmp_path / "compressed_mapping.json"
    src.write_bytes(body)
    out = tmp_path / "out" / "conda_pypi.json.gz"
    run = envkit("catalog", "refresh-names", "--file", str(src), "-o", str(out), "--json")
    assert run.code == 3
    (error,) = run.envelope()["errors"]
    assert str(src) in error["message"] and "nothing was written" in error["message"]
    assert error["hint"]
    assert not (tmp_path / "out").exists()


def test_refresh_names_refuses_a_file_over_the_bound(tmp_path: Path, envkit: Callable[..., Run]) -> None:
    src = tmp_path / "big.json"
    src.write_bytes(b"{" + b" " * MAX_MAPPING_BYTES + b"}")
    out = tmp_path / "conda_pypi.json.gz"
    run = envkit("catalog", "refresh-names", "--file", str(src), "-o", str(out))
    assert run.code == 3 and "larger than" in run.err and not out.exists()


def test_refresh_names_writes_the_download_gzipped_with_its_record(
    tmp_path: Path, envkit: Callable[..., Run]
) -> None:
    body = json.dumps(GOOD).encode()
    src = tmp_path / "compressed_mapping.json"
    src.write_bytes(body)
    out = tmp_path / "data" / "conda_pypi.json.gz"
    first = envkit("catalog", "refresh-names", "--file", str(src), "-o", str(out), "--json")
    assert first.code == 0 and first.envelope()["result"]["changed"] is True
    assert gzip.decompress(out.read_bytes()) == body  # the download byte for byte
    record = json.loads((tmp_path / "data" / "conda_pypi.source.json").read_text())
    assert record["sha256"] == hashlib.sha256(body).hexdigest()
    assert (record["entries"], record["renamed"], record["not_python"]) == (4, 2, 1)
    again = envkit("catalog", "refresh-names", "--file", str(src), "-o", str(out), "--json")
    assert again.envelope()["result"]["changed"] is False  # same download, same bytes
    src.write_bytes(json.dumps({**GOOD, "py-xgboost": "xgboost"}).encode())
    check = envkit("catalog", "refresh-names", "--file", str(src), "-o", str(out), "--check")
    assert check.code == 1 and gzip.decompress(out.read_bytes()) == body  # --check writes nothing


def test_refresh_names_reads_https_only(tmp_path: Path, envkit: Callable[..., Run]) -> None:
    out = tmp_path / "conda_pypi.json.gz"
    run = envkit("catalog", "refresh-names", "--url", "file:///etc/passwd", "-o", str(out))
    assert run.code == 2 and "not an https:// URL" in run.err and not out.exists()


def test_file_and_url_together_are_a_usage_error(tmp_path: Path, envkit: Callable[..., Run]) -> None:
    src = tmp_path / "m.json"
    src.write_text('{"pyqt": "pyqt5"}')
    out = tmp_path / "out.json.gz"
    run = envkit("catalog", "refresh-names", "--file", str(src), "--url", "https://example.org/m.json",
                 "-o", str(out), "--json")  # fmt: skip
    assert run.code == 2 and run.envelope()["errors"][0]["type"] == "UsageError"
    assert not out.exists()
