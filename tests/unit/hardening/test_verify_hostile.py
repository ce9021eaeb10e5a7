"""``envkit verify IMAGE`` on an image someone else made (finding 3 of the third review).

Verifying an image you did not build is what verify is for, so nothing of the image may choose a
file or move a tag: the ``io.envkit.name`` label was opened as a *path* (a planted ``NAME.yaml``
with ``base_image:`` set to the image under test kept the lock fresh), and the ``--no-cache``
rebuild re-pointed ``envkit/NAME:latest`` to a build FROM the untrusted image. Now the label is a
name in the spec grammar or refused, the spec is the project's ``environments/NAME.yaml``, and the
rebuild sets ``envkit/NAME:rebuilt`` only (checked on the engine's calls).
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO

import pytest

from envkit.build.builder import NAME_LABEL, Builder, BuildOptions
from envkit.cli import Services, main
from envkit.engine.protocol import ImageInfo
from envkit.engine.testing import FakeEngine, FakeImageStore
from envkit.lock.testing import FakeCondaSolver
from envkit.spec.load import load_spec
from envkit.verify.image import verify_image
from tests.unit.build.conftest import FakePip, PinResolver, fake_locker, write_spec


class EngineArchive(FakeImageStore):
    """``docker save`` of a FakeEngine's images: one layer holding the image's id."""

    def __init__(self, engine: FakeEngine) -> None:
        super().__init__()
        self.engine = engine

    def facts(self, image: str) -> ImageInfo | None:
        info = self.engine.inspect(image)
        if info is None:
            return None
        return replace(info, diff_ids=(self._diff_id(info.id),), history=1)

    @staticmethod
    def _layer(image_id: str) -> bytes:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            data = image_id.encode()
            info = tarfile.TarInfo("id.txt")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        return buf.getvalue()

    def _diff_id(self, image_id: str) -> str:
        return "sha256:" + hashlib.sha256(self._layer(image_id)).hexdigest()

    def save(self, image: str, path: Path) -> None:
        dest = path
        facts = self.facts(image)
        assert facts is not None
        layer = self._layer(facts.id)
        config = json.dumps({"rootfs": {"type": "layers", "diff_ids": [self._diff_id(facts.id)]}}).encode()
        manifest = json.dumps([{"Config": "c.json", "Layers": ["l/layer.tar"]}]).encode()
        with tarfile.open(dest, "w") as tar:
            for name, data in (("l/layer.tar", layer), ("c.json", config), ("manifest.json", manifest)):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))

    def load(self, archive: Path | BinaryIO) -> tuple[str, ...]:
        raise AssertionError("verify loads nothing")


@pytest.fixture
def built(tmp_path: Path) -> tuple[Builder, FakeEngine, str]:
    """The project's honest build of ``tiny`` (lock committed), and its ``envkit/tiny:latest`` id."""
    write_spec(tmp_path)
    engine = FakeEngine()
    builder = Builder(engine, tmp_path, locker=fake_locker(), pip_runner=FakePip())
    result = builder.build(load_spec(tmp_path / "environments" / "tiny.yaml"), BuildOptions(offline=True))
    engine.tagged.clear()
    return builder, engine, result.image_id


def test_a_rebuild_from_the_untrusted_image_does_not_move_the_project_tag(
    tmp_path: Path, built: tuple[Builder, FakeEngine, str]
) -> None:
    """The finding: a rebuild of a spec other than the committed one (as a planted file said); on main
    it re-pointed ``envkit/tiny:latest`` (and its digest tag) to that build."""
    builder, engine, honest = built
    engine.add_image("evil/app:1", "sha256:" + "e" * 64, labels={NAME_LABEL: "tiny"})
    planted = tmp_path / "planted" / "tiny.yaml"
    planted.parent.mkdir()
    # the project's spec with a change the committed lock does not see (on main the label could
    # name such a file; a base_image: of the venv installer is a lock input, of conda ones not)
    planted.write_text((tmp_path / "environments" / "tiny.yaml").read_text() + "description: planted\n")
    project_tags = {t: i.id for t, i in engine.images_by_tag.items() if t.startswith("envkit/tiny:")}
    result = verify_image(
        builder, EngineArchive(engine), load_spec(planted), "evil/app:1", BuildOptions(offline=True)
    )
    assert not result.equal
    for tag, image_id in project_tags.items():
        assert engine.images_by_tag[tag].id == image_id, f"{tag} moved"
    assert engine.images_by_tag["envkit/tiny:latest"].id == honest
    assert [b.tag for b in engine.builds[-1:]] == ["envkit/tiny:rebuilt"]  # the one tag it builds under
    assert all(tag == "envkit/tiny:rebuilt" for _, tag in engine.tagged), engine.tagged
    assert engine.images_by_tag["evil/app:1"].id == "sha256:" + "e" * 64  # its own tag neither


@pytest.mark.parametrize("verified", ["envkit/tiny:latest", "other/copy:2", "sha256:" + "d" * 64])
def test_verify_moves_no_tag_whatever_it_verifies(
    built: tuple[Builder, FakeEngine, str], verified: str
) -> None:
    """The project's own image, a copy under another name, an untagged id: tags stay where they were."""
    builder, engine, _ = built
    if verified != "envkit/tiny:latest":
        engine.add_image(verified if ":" in verified and not verified.startswith("sha256:") else "x:y",
                         "sha256:" + "d" * 64, labels={NAME_LABEL: "tiny"})  # fmt: skip
    before = {t: i.id for t, i in engine.images_by_tag.items()}
    loaded = load_spec(builder.root / "environments" / "tiny.yaml")
    verify_image(builder, EngineArchive(engine), loaded, verified, BuildOptions(offline=True))
    after = {t: i.id for t, i in engine.images_by_tag.items()}
    assert {t: v for t, v in after.items() if t != "envkit/tiny:rebuilt"} == before


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[FakeEngine, Callable[..., tuple[int, str]]]:
    write_spec(tmp_path)
    monkeypatch.setenv("ENVKIT_ROOT", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    engine = FakeEngine()
    services = Services(
        engine_factory=lambda: engine,
        store_factory=lambda e: EngineArchive(engine),
        solver_factory=lambda: (FakeCondaSolver(), PinResolver()),
        pip_runner=FakePip(),
    )

    def run(*argv: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
        code = main(list(argv), services=services)
        out, err = capsys.readouterr()
        assert "Traceback" not in out + err
        return code, out + err

    return engine, run


@pytest.mark.parametrize(
    "label",
    [
        "{planted}",  # an absolute path to a planted spec
        "../planted/tiny.yaml",
        "planted/tiny.yaml",
        "tiny.yaml",  # a name with a suffix is a path to resolve_spec_path
        "tiny.yml",
        "~/tiny",
        "Tiny",
        "tiny\n",
        "tiny/../tiny",
        "",
        "-tiny",
        "tiny\x1b[2J",
        "a" * 5000,
    ],
)
def test_a_label_that_is_not_a_name_is_refused(
    tmp_path: Path,
    cli: tuple[FakeEngine, Callable[..., tuple[int, str]]],
    capsys: pytest.CaptureFixture[str],
    label: str,
) -> None:
    engine, run = cli
    planted = tmp_path / "planted" / "tiny.yaml"
    planted.parent.mkdir()
    planted.write_text("name: tiny\npython: '3.11'\ncuda: cpu\nbogus_field_SECRET_VALUE: 1\n")
    (tmp_path / "tiny.yaml").write_text(planted.read_text())
    engine.add_image("evil/app:1", "sha256:" + "e" * 64, labels={NAME_LABEL: label.format(planted=planted)})
    code, output = run("verify", "evil/app:1", capsys=capsys)
    assert code == 2, output
    assert not engine.builds  # nothing rebuilt, no tag touched
    assert not engine.tagged
    assert "SECRET_VALUE" not in output  # the planted file was never opened
    assert "\x1b" not in output
    if label:
        assert "not an environment name" in output or "no spec for" in output


def test_a_name_the_project_has_no_spec_for_is_refused(
    cli: tuple[FakeEngine, Callable[..., tuple[int, str]]], capsys: pytest.CaptureFixture[str]
) -> None:
    engine, run = cli
    engine.add_image("evil/app:1", "sha256:" + "e" * 64, labels={NAME_LABEL: "other"})
    code, output = run("verify", "evil/app:1", capsys=capsys)
    assert code == 2 and "no spec for" in output and not engine.builds
