"""Hand-written OSV records for the audit's unit tests."""

from __future__ import annotations

from pathlib import Path

import pytest

RECORDS = {
    "demo/PYSEC-0001.yaml": """
id: PYSEC-0001
details: Demo before 1.5.0 leaks secrets. More text here.
aliases: [CVE-0001-0001, GHSA-aaaa-bbbb-cccc]
affected:
- package: {name: demo, ecosystem: PyPI}
  ranges:
  - type: ECOSYSTEM
    events: [{introduced: "0"}, {fixed: 1.5.0}]
  - type: GIT
    repo: https://example.invalid/demo
    events: [{introduced: "0"}, {fixed: abcdef}]
""",
    "demo/PYSEC-0002.yaml": """
id: PYSEC-0002
details: Two branches fixed separately.
affected:
- package: {name: demo, ecosystem: PyPI}
  ranges:
  - type: ECOSYSTEM
    events: [{introduced: 2.0.0}, {fixed: 2.0.3}, {introduced: 2.1.0}, {fixed: 2.1.1}]
severity:
- {type: CVSS_V3, score: "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H"}
""",
    "demo/PYSEC-0003.yaml": """
id: PYSEC-0003
details: Only listed versions.
affected:
- package: {name: demo, ecosystem: PyPI}
  versions: [3.0.0, "3.0.1"]
database_specific: {severity: MODERATE}
""",
    "demo/PYSEC-0004.yaml": """
id: PYSEC-0004
details: Withdrawn.
withdrawn: "2023-01-01T00:00:00Z"
affected:
- package: {name: demo, ecosystem: PyPI}
  ranges:
  - type: ECOSYSTEM
    events: [{introduced: "0"}]
""",
    "demo/PYSEC-0005.yaml": """
id: PYSEC-0005
details: last_affected bound.
affected:
- package: {name: demo, ecosystem: PyPI}
  ranges:
  - type: ECOSYSTEM
    events: [{introduced: 4.0.0}, {last_affected: 4.2.0}]
- package: {name: demo, ecosystem: npm}
  ranges:
  - type: ECOSYSTEM
    events: [{introduced: "0"}]
""",
    "zstd/PYSEC-0006.yaml": """
id: PYSEC-0006
details: The PyPI zstd binding, every version.
affected:
- package: {name: zstd, ecosystem: PyPI}
  ranges:
  - type: ECOSYSTEM
    events: [{introduced: "0"}]
""",
    "Torch_Thing/PYSEC-0007.yaml": """
id: PYSEC-0007
details: Odd folder name, odd fix version.
affected:
- package: {name: torch-thing, ecosystem: PyPI}
  ranges:
  - type: ECOSYSTEM
    events: [{introduced: "1.0"}, {fixed: "2.0-n653"}]
""",
}


@pytest.fixture
def osv_db(tmp_path: Path) -> Path:
    root = tmp_path / "db"
    for rel, text in RECORDS.items():
        path = root / "vulns" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.lstrip(), "utf-8")
    return root
