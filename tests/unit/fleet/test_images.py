"""How the image reaches the nodes (fakes): the pushed digest when it is this image, else a store tar."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envkit.engine.push import PushRecord, check_registry, push_image, read_pushed
from envkit.engine.testing import FakeEngine, FakeImageStore
from envkit.errors import ProbeError, UsageError
from envkit.fleet.images import image_for_fleet


def test_push_records_the_digest_and_the_fleet_runs_it_by_digest(tmp_path: Path) -> None:
    engine = FakeEngine()
    info = engine.add_image("envkit/demo:latest", "sha256:" + "1" * 64)
    image_store = FakeImageStore(images={"envkit/demo:0123456789ab": info.id})
    pushed, record = push_image(
        image_store, tmp_path, "demo", "envkit/demo:0123456789ab", info.id, "127.0.0.1:5000"
    )
    assert pushed.ref.startswith("127.0.0.1:5000/envkit/demo@sha256:") and record.is_file()
    expected = {
        "name": "demo", "image": "envkit/demo:0123456789ab", "image_id": info.id,
        "repository": "127.0.0.1:5000/envkit/demo", "tag": "0123456789ab", "digest": pushed.digest,
        "ref": pushed.ref,
    }  # fmt: skip
    assert json.loads(record.read_text()) == expected
    assert record.read_text() == json.dumps(expected, indent=1, sort_keys=True) + "\n"
    read = read_pushed(tmp_path, "demo")
    assert read is not None and read.to_json() == expected
    image = image_for_fleet(engine, image_store, "demo", tmp_path / "store", tmp_path)
    assert image == {"ref": pushed.ref, "id": info.id, "name": "demo"}


def test_a_rebuilt_image_is_not_run_from_an_old_push(tmp_path: Path) -> None:
    engine = FakeEngine()
    engine.add_image("envkit/demo:latest", "sha256:" + "2" * 64)
    image_store = FakeImageStore(images={"old": "sha256:" + "1" * 64})
    push_image(image_store, tmp_path, "demo", "old", "sha256:" + "1" * 64, "reg.example.org/team")
    image = image_for_fleet(engine, image_store, "demo", tmp_path / "store", tmp_path)
    assert image["id"] == "sha256:" + "2" * 64 and Path(image["tar"]).read_text() == image["id"]
    again = image_for_fleet(engine, image_store, "demo", tmp_path / "store", tmp_path)
    assert again == image  # saved once per image id


def test_digest_refs_pass_through_and_missing_images_fail(tmp_path: Path) -> None:
    ref = "reg/x@sha256:" + "f" * 64
    assert image_for_fleet(FakeEngine(), FakeImageStore(), ref, tmp_path, tmp_path) == {
        "ref": ref,
        "name": ref,
    }
    with pytest.raises(ProbeError, match="does not exist"):
        image_for_fleet(FakeEngine(), FakeImageStore(), "nothing", tmp_path, tmp_path)


@pytest.mark.parametrize("bad", ["", "http://", "reg istry", "reg/UPPER", "-x:5000"])
def test_registry_names_are_checked(bad: str) -> None:
    with pytest.raises(UsageError):
        check_registry(bad)
    assert check_registry("http://127.0.0.1:5000/") == "127.0.0.1:5000"


def test_a_push_record_without_a_ref_string_is_no_record(tmp_path: Path) -> None:
    path = tmp_path / ".envkit" / "pushed" / "demo.json"
    path.parent.mkdir(parents=True)
    for text in ("[]", '{"ref": ""}', '{"ref": 5}', "{"):
        path.write_text(text)
        assert read_pushed(tmp_path, "demo") is None, text
    path.write_text('{"ref": "r@sha256:1", "image_id": 3}')
    assert read_pushed(tmp_path, "demo") == PushRecord("r@sha256:1", None)
