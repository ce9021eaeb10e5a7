"""Hostile dumps: truncated, tampered, pickles, foreign, wrong shapes. A clear DumpError naming the file."""

from __future__ import annotations

import json
import pickle
import shutil
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from envkit.cli import main  # noqa: E402
from envkit.errors import DumpError  # noqa: E402
from envkit.guard import Guard  # noqa: E402
from envkit.guard.dump import read_dump, write_manifest  # noqa: E402
from envkit.incident.replay import replay_dump  # noqa: E402

pytestmark = [pytest.mark.frameworks, pytest.mark.filterwarnings("ignore::UserWarning")]


def build(d_out: int = 2) -> tuple[Any, Any, Any]:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, d_out)
    return model, torch.optim.SGD(model.parameters(), lr=0.1), lambda m, b: m(b["x"]).sum()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("guard") / "run"
    model, opt, loss_fn = build()
    guard = Guard(model, opt, run=run, loss_fn=loss_fn)
    x = torch.ones(3, 4)
    x[0, 0] = float("inf")
    with guard.step(0, {"x": x, "ids": [1, 2]}) as g:
        g.backward(loss_fn(model, {"x": x}))
        g.optimizer_step()
    return run / "incidents" / "step-0"


@pytest.fixture
def dump(pristine: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "step-0"
    shutil.copytree(pristine, copy)
    return copy


def rehash(dump: Path, edit: Callable[[dict[str, Any]], None] | None = None) -> None:
    """Hash the files again (an attacker who also rewrites the manifest), then apply ``edit``."""
    manifest = json.loads((dump / "manifest.json").read_text())
    manifest.pop("files")
    write_manifest(dump, manifest)
    if edit:
        manifest = json.loads((dump / "manifest.json").read_text())
        edit(manifest)
        (dump / "manifest.json").write_text(json.dumps(manifest))


def test_the_pristine_dump_reads_and_replays(dump: Path) -> None:
    assert read_dump(dump).framework == "torch"
    assert replay_dump(dump, build).verdict == "reproducible"


def _truncate(name: str, keep: int) -> Callable[[Path], None]:
    def go(d: Path) -> None:
        data = (d / name).read_bytes()
        (d / name).write_bytes(data[:keep])

    return go


def _flip(name: str) -> Callable[[Path], None]:
    def go(d: Path) -> None:
        data = bytearray((d / name).read_bytes())
        data[-1] ^= 0xFF
        (d / name).write_bytes(bytes(data))

    return go


HOSTILE: dict[str, tuple[Callable[[Path], None], str]] = {
    "truncated model": (_truncate("model.safetensors", 40), "truncated or changed"),
    "truncated batch": (_truncate("batch.safetensors", 3), "truncated or changed"),
    "truncated manifest": (_truncate("manifest.json", 30), "not valid JSON"),
    "tampered model byte": (_flip("model.safetensors"), "sha256"),
    "tampered rng": (_flip("rng.json"), "sha256"),
    "tampered records": (_flip("records.json"), "sha256"),
    "deleted batch": (lambda d: (d / "batch.safetensors").unlink(), "missing"),
    "manifest gone": (lambda d: (d / "manifest.json").unlink(), "not an envkit.guard dump"),
    "path in the manifest": (
        lambda d: _add_file(d, "../etc.json"),
        "not a dump file name",
    ),
    "wrong kind": (lambda d: rehash(d, lambda m: m.update(kind="something")), "kind"),
    "future schema": (lambda d: rehash(d, lambda m: m.update(schema=99)), "schema 99"),
    "unknown framework": (lambda d: rehash(d, lambda m: m.update(framework="jax")), "framework 'jax'"),
}


def _add_file(d: Path, name: str) -> None:
    manifest = json.loads((d / "manifest.json").read_text())
    manifest["files"][name] = {"sha256": "0" * 64, "bytes": 1}
    (d / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_dumps_are_refused_with_the_file_named(dump: Path, case: str) -> None:
    damage, message = HOSTILE[case]
    damage(dump)
    with pytest.raises(DumpError, match=message) as info:
        replay_dump(dump, build)
    assert str(dump) in info.value.message


class Boom:
    def __reduce__(self) -> tuple[Any, ...]:
        return (Path("/tmp/envkit-guard-pwned").touch, ())


@pytest.mark.parametrize(
    "name", ["model.safetensors", "batch.safetensors", "rng.safetensors", "records.json"]
)
@pytest.mark.parametrize("protocol", [0, 2, 5])
def test_a_pickle_where_tensors_belong_is_named_and_never_run(dump: Path, name: str, protocol: int) -> None:
    marker = Path("/tmp/envkit-guard-pwned")
    marker.unlink(missing_ok=True)
    (dump / name).write_bytes(pickle.dumps({"w": Boom()}, protocol=protocol))
    rehash(dump)  # the attacker re-hashed it too
    with pytest.raises(DumpError, match="pickle") as info:
        replay_dump(dump, build)
    assert name in info.value.message
    assert not marker.exists()


def test_a_torch_save_zip_is_named(dump: Path) -> None:
    torch.save({"weight": torch.zeros(2, 4)}, dump / "model.safetensors")
    rehash(dump)
    with pytest.raises(DumpError, match="zip archive"):
        replay_dump(dump, build)


@pytest.mark.parametrize(
    "header",
    [
        b"\xff" * 8,  # a header longer than the file
        struct.pack("<Q", 5) + b"nope!",  # not JSON
        struct.pack("<Q", 2) + b"[]",  # not an object
        struct.pack("<Q", 52)
        + b'{"w":{"dtype":"F32","shape":[2,4],"data_offsets":[0,9]}}',  # bytes don't fit
        struct.pack("<Q", 54) + b'{"w":{"dtype":"EVIL","shape":[2,4],"data_offsets":[0,32]}}',
    ],
)
def test_malformed_safetensors_headers(dump: Path, header: bytes) -> None:
    (dump / "model.safetensors").write_bytes(header + b"\0" * 32)
    rehash(dump)
    with pytest.raises(DumpError, match=r"model\.safetensors"):
        replay_dump(dump, build)


def test_wrong_shapes_name_the_tensor(dump: Path) -> None:
    with pytest.raises(
        DumpError, match=r"weight is torch.float32 \[2, 4\], the model's is torch.float32 \[3, 4\]"
    ):
        replay_dump(dump, lambda: build(3))


def test_a_foreign_model_names_the_missing_keys(dump: Path) -> None:
    def other() -> tuple[Any, Any, Any]:
        model = torch.nn.Sequential(torch.nn.Linear(4, 2))
        return model, torch.optim.SGD(model.parameters(), lr=0.1), lambda m, b: m(b["x"]).sum()

    with pytest.raises(DumpError, match=r"missing 0\.bias"):
        replay_dump(dump, other)


def test_the_cli_prints_an_error_not_a_traceback(dump: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _flip("batch.safetensors")(dump)
    assert main(["guard", "replay", str(dump), "--entry", "os:getcwd"]) == 2
    err = capsys.readouterr().err
    assert "sha256" in err and "Traceback" not in err


def test_replay_without_entry_names_the_recorded_one_and_imports_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    model, opt, loss_fn = build()
    guard = Guard(model, opt, run=run, entry="os:system")  # a recorded entry is never imported
    x = torch.full((3, 4), float("nan"))
    with guard.step(0, {"x": x}) as g:
        g.backward(loss_fn(model, {"x": x}))
        g.optimizer_step()
    assert main(["guard", "replay", str(run / "incidents" / "step-0")]) == 2
    err = capsys.readouterr().err
    assert "needs --entry" in err and "--entry os:system" in err
