from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from envkit.audit.findings import AuditFinding, AuditReport, apply_ignores, audit_inventory
from envkit.audit.service import Dep, Vuln
from envkit.audit.testing import FakeVulnService
from envkit.errors import ExitCode
from envkit.inventory import parse_inventory, read_inventory
from envkit.inventory.models import Inventory, Package
from envkit.inventory.names import project_of
from envkit.spec.models import AuditIgnore

EXPORT = """\
name: old
dependencies:
  - openssl=1.1.1s=h7f8727e_0
  - zstd=1.5.2=ha4553b6_0
  - pillow=9.2.0=py39hace64e9_1
  - pytorch=1.11.0=py3.9_cuda11.3_cudnn8.2.0_0
  - typing_extensions=4.3.0=py39h06a4308_0
  - python=3.9.13=haa1d7c7_2
  - pip:
    - requests==2.28.1
    - zstd==1.5.2.6
"""

V = Vuln(id="PYSEC-1", summary="bad", aliases=("CVE-1",), fixed_in=("9.3.0",))


def test_conda_c_libraries_are_not_covered_never_matched(tmp_path: Path) -> None:
    path = tmp_path / "env.yml"
    path.write_text(EXPORT, "utf-8")
    inventory = read_inventory(path)
    # The service would flag any zstd or openssl asked about: conda's C libraries must never be asked.
    service = FakeVulnService({("zstd", "1.5.2"): [V], ("openssl", "1.1.1s"): [V], ("zstd", "1.5.2.6"): [V]})
    findings, checked, not_checked, not_covered = audit_inventory(inventory, service)
    asked = {(d.name, d.version) for d in service.queried}
    assert ("zstd", "1.5.2") not in asked
    assert ("openssl", "1.1.1s") not in asked
    assert {"openssl", "zstd", "python"} <= {n.name for n in not_covered}
    assert {
        ("pillow", "9.2.0"),
        ("torch", "1.11.0"),
        ("typing-extensions", "4.3.0"),
        ("requests", "2.28.1"),
    } <= asked
    # the pip-installed zstd binding *is* the PyPI project and is checked
    assert [(f.package, f.version) for f in findings] == [("zstd", "1.5.2.6")]
    assert findings[0].line == 11
    assert checked == 5
    assert not_checked == []


def test_project_mapping() -> None:
    assert project_of("pytorch", "conda", "py3.9_cuda11.3_cudnn8.2.0_0") == "torch"
    assert project_of("pillow", "conda", "pyhd8ed1ab_0") == "pillow"
    assert project_of("zstd", "conda", "ha4553b6_0") == "conda:zstd"
    assert project_of("zstd", "conda", None) == "conda:zstd"
    assert project_of("Typing_Extensions", "pip") == "typing-extensions"


def test_pip_lines_url_and_editable_are_not_checked() -> None:
    text = (
        "a==1.0\nb @ file:///x/y\n-e git+https://h/r.git#egg=Cee\n--index-url x\n# c\n"
        "d===2.0 ; python_version>'3'\ne @ git+https://h/e.git@0123456789abcdef0123\n"
    )
    packages = parse_inventory(text, path="x.txt", label="x", format="pip-freeze").packages
    assert [(p.name, p.version, p.line) for p in packages] == [
        ("a", "1.0", 1),
        ("b", "", 2),
        ("cee", "", 3),
        ("d", "2.0", 6),
        ("e", "0+git.0123456789ab", 7),
    ]
    inventory = Inventory("x", "x.txt", "pip-freeze", packages)
    _, checked, not_checked, _ = audit_inventory(inventory, FakeVulnService())
    assert checked == 2
    assert {n.name for n in not_checked} == {"b", "cee", "e"}  # a VCS checkout is not release 0


def test_skipped_dependencies_are_not_checked_not_clean() -> None:
    packages = (Package("torch", "torch", "2.1.0+cu121", "pip"), Package("numpy", "numpy", "1.26.4", "pip"))
    service = FakeVulnService(skip={"torch": "Dependency not found on PyPI"})
    findings, checked, not_checked, _ = audit_inventory(Inventory("x", "x", "pip", packages), service)
    assert checked == 1
    assert [(n.name, n.reason) for n in not_checked] == [("torch", "Dependency not found on PyPI")]
    assert findings == []


class _Forgetful(FakeVulnService):
    """A service whose batch answer leaves a dependency out."""

    def query_all(self, deps: Iterable[Dep]) -> Iterator[tuple[Dep, list[Vuln]]]:
        for dep in deps:
            if dep.name != "torch":
                yield self.query(dep)


def test_dependencies_a_service_does_not_answer_are_not_checked_not_clean() -> None:
    packages = (Package("torch", "torch", "2.1.0", "pip"), Package("numpy", "numpy", "1.26.4", "pip"))
    findings, checked, not_checked, _ = audit_inventory(Inventory("x", "x", "pip", packages), _Forgetful())
    assert checked == 1
    assert [(n.name, n.version, n.reason) for n in not_checked] == [("torch", "2.1.0", "fake gave no answer")]
    assert findings == []


def test_aliases_are_deduplicated_and_fix_is_the_next_release() -> None:
    ghsa = Vuln(id="GHSA-x", summary="same", aliases=("CVE-1",), fixed_in=("9.3.0",))
    service = FakeVulnService({("pillow", "9.2.0"): [ghsa, V]})
    inventory = Inventory("x", "x", "pip", (Package("pillow", "pillow", "9.2.0", "pip", line=3),))
    findings, *_ = audit_inventory(inventory, service)
    assert [f.id for f in findings] == ["PYSEC-1"]
    assert findings[0].fix == "upgrade pillow to 9.3.0 or later"


def _finding(fid: str, severity: str, aliases: tuple[str, ...] = ()) -> AuditFinding:
    return AuditFinding("vulnerability", fid, severity, "m", "f", aliases=aliases)  # type: ignore[arg-type]


def test_ignores_keep_the_finding_with_its_reason() -> None:
    findings = [_finding("PYSEC-1", "high", ("CVE-1",)), _finding("PYSEC-2", "low")]
    marked = apply_ignores(findings, [AuditIgnore(id="CVE-1", reason="not reachable: no network use")])
    assert marked[0].ignored == "not reachable: no network use"
    assert marked[1].ignored is None


@pytest.mark.parametrize(
    ("fail_on", "code"),
    [
        ("low", ExitCode.FINDINGS),
        ("medium", ExitCode.FINDINGS),
        ("high", ExitCode.OK),
        ("critical", ExitCode.OK),
    ],
)
def test_fail_on_threshold_and_unknown_counts_as_medium(fail_on: str, code: ExitCode) -> None:
    report = AuditReport("t", "inventory", {}, (_finding("A", "unknown"), _finding("B", "low")), 2)
    assert report.exit_code(fail_on) == code


def test_ignored_findings_do_not_fail() -> None:
    report = AuditReport(
        "t",
        "inventory",
        {},
        tuple(apply_ignores([_finding("A", "critical")], [AuditIgnore(id="A", reason="r")])),
        1,
    )
    assert report.exit_code("low") == ExitCode.OK
    assert report.counts()["critical"] == 0


def test_dep_names_are_canonical() -> None:
    assert Dep("Typing_Extensions", "1").name == "typing-extensions"


def test_conda_c_libraries_without_build_strings_are_not_covered(tmp_path: Path) -> None:
    # `conda env export --no-builds`: only the name decides; brotli/zstd are the C libraries,
    # brotli-python is PyPI Brotli, pytorch is PyPI torch.
    path = tmp_path / "env.yml"
    path.write_text(
        "name: nb\ndependencies:\n  - brotli=1.0.7\n  - brotli-python=1.0.7\n  - zstd=1.5.2\n"
        "  - openssl=1.1.1s\n  - cudnn=8.2.1\n  - pytorch=1.11.0\n",
        "utf-8",
    )
    service = FakeVulnService({("brotli", "1.0.7"): [V]})
    findings, _, _, not_covered = audit_inventory(read_inventory(path), service)
    assert {n.name for n in not_covered} == {"brotli", "zstd", "openssl", "cudnn"}
    assert {(d.name, d.version) for d in service.queried} == {("brotli", "1.0.7"), ("torch", "1.11.0")}
    assert [(f.package, f.line) for f in findings] == [("brotli", 4)]
