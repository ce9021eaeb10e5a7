"""What ``envkit verify`` reads beside the image: bounded, regular files only, shapes checked.

Findings 7 and 10 of the third review: ``images/NAME/sbom.cdx.json`` was read whole (a sparse
3 GB file cost 3 GB), and a provenance statement whose ``predicate`` is a string crashed with a
traceback. Now each input is read at most its limit + 1 byte, from a regular file (no link, FIFO
or device), parsed from those same bytes, and every field verify uses has its shape checked: a
finding or a clear error naming the file and field, never a traceback.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from envkit.errors import LockError, UsageError
from envkit.lock.locker import MAX_LOCK_FILE_BYTES, current_lock
from envkit.sbom.carried import MAX_SBOM_BYTES
from envkit.sbom.cyclonedx import SBOM_LABEL, SBOM_NAME
from envkit.sbom.provenance import provenance_path, read_provenance
from envkit.spec.load import load_spec
from envkit.verify.attestations import check_provenance, check_sbom
from tests.unit.build.conftest import write_spec
from tests.unit.verify.test_attestations import IMAGE, _lock, _statement

REPO = Path(__file__).resolve().parents[3]
CAP = 512 * 1024 * 1024


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


def _sparse(path: Path, size: int) -> Path:
    with path.open("wb") as fh:
        fh.truncate(size)
    return path


def test_a_sparse_3_gb_sbom_is_a_finding_under_a_512_mib_cap(tmp_path: Path) -> None:
    """The finding: main read the whole file (MemoryError under the cap, 3 GB RSS without)."""
    _sparse(tmp_path / SBOM_NAME, 3 * 1024**3)
    code = (
        "import sys; from pathlib import Path; "
        "from envkit.verify.attestations import check_sbom; "
        "from tests.unit.verify.test_attestations import _lock; "
        f"print(check_sbom(Path({str(tmp_path)!r}), {{}}, _lock()))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, preexec_fn=_capped, timeout=300,
                         check=False)  # fmt: skip
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr[-2000:]
    assert f"larger than {MAX_SBOM_BYTES} bytes" in run.stdout


def _one_finding(tmp_path: Path, labels: dict[str, str] | None = None) -> str:
    findings = check_sbom(tmp_path, labels or {SBOM_LABEL: "0" * 64}, _lock())
    assert findings, "a hostile SBOM must be a finding"
    return findings[0]


def test_sbom_just_past_the_limit(tmp_path: Path) -> None:
    (tmp_path / SBOM_NAME).write_bytes(b" " * (MAX_SBOM_BYTES + 1))
    assert "larger than" in _one_finding(tmp_path)


def test_a_fifo_sbom_is_a_finding_and_does_not_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / SBOM_NAME)
    assert "not a regular file" in _one_finding(tmp_path)


@pytest.mark.parametrize("target", ["/dev/zero", "/proc/self/environ", "{other}"])
def test_a_linked_sbom_is_not_followed(tmp_path: Path, target: str) -> None:
    other = tmp_path / "elsewhere.json"
    other.write_text('{"bomFormat": "CycloneDX", "components": []}')
    (tmp_path / SBOM_NAME).symlink_to(target.format(other=other))
    assert "symbolic link" in _one_finding(tmp_path)


def test_a_folder_sbom(tmp_path: Path) -> None:
    (tmp_path / SBOM_NAME).mkdir()
    finding = _one_finding(tmp_path)
    assert "not a regular file" in finding or "cannot read" in finding


@pytest.mark.parametrize(
    "content",
    [b"\xff\xfe not utf-8", b"[" * 200_000, b'{"bomFormat": "CycloneDX", "components": "x"}', b"null", b""],
)
def test_hostile_sbom_content_is_a_finding(tmp_path: Path, content: bytes) -> None:
    (tmp_path / SBOM_NAME).write_bytes(content)
    findings = check_sbom(tmp_path, {}, _lock())
    assert findings and all(str(tmp_path / SBOM_NAME) in f for f in findings)


def _provenance(tmp_path: Path, statement: object) -> Path:
    path = provenance_path(tmp_path, "x", IMAGE)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(statement))
    return path


def test_a_string_predicate_is_a_clear_error(tmp_path: Path) -> None:
    """The finding: main raised AttributeError ('str' object has no attribute 'get')."""
    path = _provenance(tmp_path, {**_statement(), "predicate": "x"})
    with pytest.raises(UsageError, match="predicate is a str, not an object"):
        read_provenance(path)
    findings = check_provenance(tmp_path, "x", IMAGE, {"io.envkit.lock-sha256": "ab" * 32}, None)
    assert len(findings) == 1 and "predicate" in findings[0] and str(path) in findings[0]


def _with(statement: dict[str, object], *keys: str, value: object) -> dict[str, object]:
    """``statement`` with ``predicate.<keys...>`` replaced by ``value``."""
    data = json.loads(json.dumps(statement))
    node = data
    for key in keys[:-1]:
        node = node[key]
    node[keys[-1]] = value
    return dict(data)


@pytest.mark.parametrize(
    ("keys", "value", "field"),
    [
        (("predicate",), [], "predicate"),
        (("predicate",), None, "predicate"),
        (("predicate",), 7, "predicate"),
        (("predicate", "buildDefinition"), "x", "buildDefinition"),
        (("predicate", "buildDefinition"), [1], "buildDefinition"),
        (("predicate", "buildDefinition", "resolvedDependencies"), {"a": 1}, "resolvedDependencies"),
        (("predicate", "buildDefinition", "resolvedDependencies"), "x", "resolvedDependencies"),
        (("predicate", "buildDefinition", "resolvedDependencies"), ["x"], "resolvedDependencies[0]"),
        (("predicate", "buildDefinition", "resolvedDependencies"), [{"name": 1}], "name"),
        (
            ("predicate", "buildDefinition", "resolvedDependencies"),
            [{"name": "lock", "digest": [1]}],
            "digest",
        ),
        (
            ("predicate", "buildDefinition", "resolvedDependencies"),
            [{"name": "lock", "digest": {"sha256": 5}}],
            "digest",
        ),
        (("subject",), [{"digest": {"sha256": 5}}], "subject"),
        (("subject",), "x", "subject"),
    ],
)
def test_provenance_shape_variants(tmp_path: Path, keys: tuple[str, ...], value: object, field: str) -> None:
    path = _provenance(tmp_path, _with(_statement(), *keys, value=value))
    with pytest.raises(UsageError, match=field.replace("[", r"\[").replace("]", r"\]")):
        read_provenance(path)
    findings = check_provenance(
        tmp_path, "x", IMAGE, {"io.envkit.lock-sha256": "ab" * 32}, "sha256:" + "b" * 64
    )
    assert len(findings) == 1 and str(path) in findings[0]


@pytest.mark.parametrize("kind", ["sparse", "fifo", "link-zero", "link-file"])
def test_provenance_files_that_are_not_statements(tmp_path: Path, kind: str) -> None:
    path = provenance_path(tmp_path, "x", IMAGE)
    path.parent.mkdir(parents=True)
    if kind == "sparse":
        _sparse(path, 3 * 1024**3)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "link-zero":
        path.symlink_to("/dev/zero")
    else:
        other = _provenance(tmp_path / "other", _statement())
        path.symlink_to(other)
    findings = check_provenance(tmp_path, "x", IMAGE, {}, None)
    assert kind == "fifo" or (len(findings) == 1 and str(path) in findings[0]), findings
    if kind == "fifo":  # not a file: no provenance to check (and no hang)
        assert findings == [] or "regular" in findings[0]


def test_a_sparse_lock_file_is_a_clear_error(tmp_path: Path) -> None:
    """The committed lock set verify rebuilds from is read bounded too."""
    write_spec(tmp_path)
    folder = tmp_path / "images" / "tiny"
    folder.mkdir(parents=True)
    _sparse(folder / "requirements.lock", 3 * 1024**3)
    with pytest.raises(LockError, match=f"larger than {MAX_LOCK_FILE_BYTES} bytes"):
        current_lock(load_spec(tmp_path / "environments" / "tiny.yaml"), folder)
