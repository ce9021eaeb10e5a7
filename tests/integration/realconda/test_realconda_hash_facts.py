"""The catalog's "which conda reads which @EXPLICIT hash fragment" facts, executed per conda release.

For every ``explicit_hashes`` fact about conda and every conda of the bundle: an explicit file of
the locked packages (served over http on 127.0.0.1: conda checks no hash for ``file://``) with that
fragment installs when the release is at least the fact's ``since``, and stops with
``ParseError: Could not parse explicit URL`` before. A fragment that is read is also checked: a
wrong one is refused (``ChecksumMismatchError``). The facts that name these releases in
``executed`` are exactly the ones run here; the rest (micromamba) stay unverified (``?``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from envkit.catalog import ExplicitHashSupport, load_catalog
from envkit.lock.lockfile import EXPLICIT_HASH
from envkit.lock.solver import CondaPackage
from tests.conda_bundle import VERSIONS, RealConda, conda_meta
from tests.integration.realconda.conftest import ExplicitInstalls, Locked

pytestmark = pytest.mark.conda

# the fragment forms of each hash kind: md5 bare; sha256 as `sha256:<hex>` and bare 64 hex (PR #14048)
FORMS = {
    "md5": (lambda p: p.md5,),
    "sha256": (lambda p: f"sha256:{p.sha256}", lambda p: p.sha256),
}
FACTS = [h for h in load_catalog().explicit_hashes if h.tool == "conda"]


def _explicit(packages: tuple[CondaPackage, ...], fragment: object, wrong: str | None = None) -> str:
    lines = ["@EXPLICIT"]
    for p in sorted(packages, key=lambda p: (p.name != "python", p.name)):
        text = fragment(p)  # type: ignore[operator]
        if wrong and p.name == wrong:  # the same length and form, other hex digits
            text = text[:-6] + ("000000" if not text.endswith("000000") else "111111")
        lines.append(f"{p.url}#{text}")
    return "\n".join(lines) + "\n"


def test_the_executed_facts_name_the_bundled_condas() -> None:
    assert {h.hash for h in FACTS} == {"md5", "sha256"}
    for fact in load_catalog().explicit_hashes:
        assert fact.executed == (VERSIONS if fact.tool == "conda" else ())
        assert fact.verified == bool(fact.executed)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("fact", FACTS, ids=lambda h: h.hash)
def test_conda_reads_the_fragment_from_the_catalogs_version_on(
    condas: dict[str, RealConda], locked: Locked, explicit_installs: ExplicitInstalls, tmp_path: Path,
    version: str, fact: ExplicitHashSupport,
) -> None:  # fmt: skip
    conda = condas[version]
    packages = locked.contents.conda["linux-64"]
    reads = Version(version) >= Version(fact.since)
    for number, form in enumerate(FORMS[fact.hash]):
        if fact.hash == EXPLICIT_HASH and number == 0:  # envkit's own lock is this file: installed once
            prefix = explicit_installs.prefix(version)
            assert {n: r["md5"] for n, r in conda_meta(prefix).items()} == {p.name: p.md5 for p in packages}
        else:
            lock = tmp_path / f"explicit-{number}.txt"
            lock.write_text(_explicit(packages, form))
            prefix = tmp_path / f"env-{number}"
            done = conda.run(["create", "-y", "-q", "-p", str(prefix), "--file", str(lock)], tmp_path)
            said = done.stdout + done.stderr
            if reads:
                assert done.returncode == 0, said[-3000:]
                assert set(conda_meta(prefix)) == {p.name for p in packages}
            else:
                assert done.returncode != 0 and "Could not parse explicit URL" in said, said[-3000:]
                assert not (prefix / "conda-meta").is_dir()
        if reads:  # read means checked: a wrong hash of this kind is refused
            bad = tmp_path / f"wrong-{number}.txt"
            bad.write_text(_explicit(packages, form, wrong="tinylib"))
            scratch = tmp_path / f"fresh-{number}"  # an empty package cache: conda downloads again
            args = ["create", "-y", "-q", "-p", str(tmp_path / f"bad-{number}"), "--file", str(bad)]
            done = conda.run(args, scratch)
            assert done.returncode != 0, done.stdout[-2000:]
            assert "ChecksumMismatchError" in done.stdout + done.stderr, (done.stdout + done.stderr)[-3000:]
