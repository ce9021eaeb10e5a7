"""``envkit verify``'s report when the rebuild differs: with diffoscope and without it (issue 30).

The engine is a FakeEngine (its rebuild under ``envkit/tiny:rebuilt`` always gets another id) and
the archive saves each image as one layer holding its id, so the file ``id.txt`` differs. What is
real: the comparison of the two saved images, the text the CLI prints, and diffoscope itself (the
program on PATH, or no such program on PATH). The Docker test of both paths is
``tests/integration/test_reproducible_images.py``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from envkit.build.builder import Builder, BuildOptions
from envkit.cli.verify_cmd import _text
from envkit.engine.testing import FakeEngine
from envkit.spec.load import load_spec
from envkit.verify.image import VerifyResult, verify_image
from tests.unit.build.conftest import FakePip, fake_locker, write_spec
from tests.unit.hardening.test_verify_hostile import EngineArchive

MISSING = (
    "diffoscope is not installed: no byte-level report of the differing files "
    "(install it: apt-get install diffoscope-minimal, or pip install diffoscope)"
)


def _verify(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str) -> VerifyResult:
    """Build ``tiny``, then verify ``envkit/tiny:latest`` with PATH set to ``path``."""
    write_spec(tmp_path)
    engine = FakeEngine()
    builder = Builder(engine, tmp_path, locker=fake_locker(), pip_runner=FakePip())
    loaded = load_spec(tmp_path / "environments" / "tiny.yaml")
    builder.build(loaded, BuildOptions(offline=True))
    monkeypatch.setenv("PATH", path)
    result = verify_image(
        builder, EngineArchive(engine), loaded, "envkit/tiny:latest", BuildOptions(offline=True)
    )
    assert [b.tag for b in engine.builds][-1] == "envkit/tiny:rebuilt" and len(engine.builds) == 2
    assert not result.ok
    return result


def test_without_diffoscope_the_files_are_named_and_the_text_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "bin"  # a PATH with no diffoscope on it
    empty.mkdir()
    result = _verify(tmp_path, monkeypatch, str(empty))
    found = result.to_json()
    assert found["diffoscope_missing"] is True and found["diffoscope"] == []
    assert [(f["path"], f["change"]) for f in found["diff"]["files"]] == [("id.txt", "changed")]
    lines = _text(result)
    assert lines[0].startswith("envkit/tiny:latest: NOT reproduced: image sha256:"), lines
    assert any(line.startswith("  file id.txt: changed (sha256 ") for line in lines), lines
    assert lines[-1] == MISSING, lines
    assert not any(line.startswith("diffoscope id.txt") for line in lines), lines


def test_with_diffoscope_its_report_is_shown_and_nothing_says_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("diffoscope") is None:
        pytest.skip("diffoscope is not installed here (.ci/run installs it: diffoscope-minimal)")
    result = _verify(tmp_path, monkeypatch, os.environ["PATH"])
    assert result.diffoscope_missing is False
    assert [d.path for d in result.diffoscope] == ["id.txt"]
    text = "\n".join(_text(result))
    report = text.split("\ndiffoscope id.txt:\n", 1)[1].splitlines()
    image, rebuilt = result.image_id, result.rebuilt_id
    assert f"  -{image}" in report and f"  +{rebuilt}" in report, report
    assert MISSING not in text
