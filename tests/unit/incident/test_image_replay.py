"""``envkit guard replay DUMP --image NAME`` with the fake engine: mounts, strict parse, verdicts.

The fake engine answers each run by running the real in-image half (``envkit.incident.image_side``)
in this process on the mounted, staged dump, so the JSON parsed is what an image prints.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("safetensors")

from envkit.cli import main
from envkit.cli._services import Services
from envkit.engine.protocol import RunResult
from envkit.engine.testing import FakeEngine, FakeRun
from envkit.errors import DumpError, GuardError
from envkit.guard import example
from envkit.guard.dump import read_dump
from envkit.incident import image_side
from envkit.incident.image_replay import CONTAINER_DUMP, replay_in_image

pytestmark = [pytest.mark.frameworks, pytest.mark.filterwarnings("ignore::UserWarning")]

IMAGE = "envkit/demo-cpu:latest"
ENTRY = "envkit.guard.example:build"


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("guard") / "run"
    example.train(run, bad_at=3)
    return run / "incidents" / "step-3"


def side(edit: Callable[[dict[str, Any]], None] | None = None) -> Callable[[FakeRun], RunResult]:
    """The real in-image half on the staged dump (its mount), its output edited by ``edit``."""

    def answer(run: FakeRun) -> RunResult:
        staged = next(m.source for m in run.mounts if m.target == CONTAINER_DUMP)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = image_side.main([staged, run.argv[-1]])
        text = out.getvalue()
        if edit is not None and code == 0:
            data = json.loads(text)
            edit(data)
            text = json.dumps(data)
        return RunResult(code, text, err.getvalue())

    return answer


def engine(handler: Callable[[FakeRun], RunResult]) -> FakeEngine:
    fake = FakeEngine(handler=handler)
    fake.add_image(IMAGE, "sha256:" + "ab" * 32)
    return fake


def test_reproducible_inside_the_image_read_only_no_network(dump: Path) -> None:
    fake = engine(side())
    verdict = replay_in_image(fake, IMAGE, dump, ENTRY)
    assert verdict.verdict == "reproducible"
    assert verdict.localization["first_nonfinite_module"]["module"] == "head"
    (run,) = fake.runs
    assert run.image == IMAGE and not run.network and not run.gpus
    assert all(m.read_only for m in run.mounts)
    targets = {m.target: Path(m.source) for m in run.mounts}
    assert targets["/opt/envkit-src/envkit"] == Path(__file__).resolve().parents[3] / "envkit"
    assert targets["/opt/envkit-code"] == Path.cwd().resolve()
    assert run.argv[-2:] == (CONTAINER_DUMP, ENTRY)
    assert not targets[CONTAINER_DUMP].exists()  # the staged copy is gone after the run
    assert verdict.notes[-1] == f"replayed in {IMAGE} (sha256:abababababab)"


def test_a_different_result_with_another_torch_is_environment(dump: Path) -> None:
    def other(data: dict[str, Any]) -> None:
        for r in data["replays"]:
            r["loss"], r["grad_norm"] = (1.5).hex(), (2.25).hex()
        data["info"]["version"] = "0.0.1+other"

    verdict = replay_in_image(engine(side(other)), IMAGE, dump, ENTRY)
    assert verdict.verdict == "environment"
    assert [r["loss"] for r in verdict.replays] == [1.5, 1.5]
    assert any("0.0.1+other" in c["message"] for c in verdict.causes), verdict.causes


def test_two_replays_in_the_image_that_differ_are_nondeterministic_code(dump: Path) -> None:
    """Not repeatable in one place: the code (an unseeded generator), never "a faulty device"."""

    def flaky(data: dict[str, Any]) -> None:
        data["replays"][1]["loss"] = (1.5).hex()

    verdict = replay_in_image(engine(side(flaky)), IMAGE, dump, ENTRY)
    assert verdict.verdict == "nondeterministic"
    assert verdict.notes[0].startswith(f"two replays in {IMAGE} differ from each other")
    assert "non-deterministic code" in verdict.notes[0] and "device" not in verdict.notes[0]


@pytest.mark.parametrize(
    ("stdout", "what"),
    [
        ("", "no result"),
        ("Traceback (most recent call last):", "no result"),
        ('{"kind": "other", "schema": 1}', "not a envkit-guard-image-replay"),
        (
            '{"kind": "envkit-guard-image-replay", "schema": 1, "replays": [{"loss": 1.0}]}',
            "replays that are not two objects",
        ),
        (
            json.dumps(
                {
                    "kind": "envkit-guard-image-replay",
                    "schema": 1,
                    "replays": [{"loss": "0x1p+0", "grad_norm": 1.0}] * 2,
                    "localization": {},
                    "fingerprint": {},
                    "info": {},
                }
            ),
            "a grad_norm that is not a hex float",
        ),
        ("[" * 100000, "no result"),
    ],
)
def test_the_in_image_output_is_parsed_strictly(dump: Path, stdout: str, what: str) -> None:
    fake = engine(lambda run: RunResult(0, stdout, ""))
    with pytest.raises(GuardError, match=what):
        replay_in_image(fake, IMAGE, dump, ENTRY)


def test_a_failed_run_shows_the_images_stderr(dump: Path) -> None:
    fake = engine(lambda run: RunResult(3, "", "cannot import envkit.guard.example: boom\nhint: x"))
    with pytest.raises(GuardError, match=r"failed in envkit/demo-cpu:latest \(exit 3\):\ncannot import"):
        replay_in_image(fake, IMAGE, dump, ENTRY)


def test_a_root_image_and_a_missing_image_are_refused(dump: Path) -> None:
    root = FakeEngine(user="root", handler=side())
    root.add_image(IMAGE)
    with pytest.raises(GuardError, match="runs as root"):
        replay_in_image(root, IMAGE, dump, ENTRY)
    missing = FakeEngine(handler=side())
    with pytest.raises(GuardError, match="does not exist"):
        replay_in_image(missing, IMAGE, dump, ENTRY)
    assert root.runs == [] and missing.runs == []


def test_a_changed_batch_is_refused_before_any_container(dump: Path, tmp_path: Path) -> None:
    changed = tmp_path / "step-3"
    shutil.copytree(dump, changed)
    data = bytearray((changed / "batch.safetensors").read_bytes())
    data[-1] ^= 0x01
    (changed / "batch.safetensors").write_bytes(bytes(data))
    fake = engine(side())
    with pytest.raises(DumpError, match=r"batch\.safetensors"):
        replay_in_image(fake, IMAGE, changed, ENTRY)
    assert fake.runs == []
    read_dump(dump)  # the original is untouched


def test_the_cli_takes_image_and_prints_the_verdict(dump: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake = engine(side())
    code = main(
        ["guard", "replay", str(dump), "--entry", ENTRY, "--image", IMAGE, "--json"],
        services=Services(engine_factory=lambda: fake),
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["result"]["verdict"] == "reproducible"


def test_a_code_directory_the_images_user_cannot_read_is_refused(dump: Path, tmp_path: Path) -> None:
    """Mounted as is, a 0700 directory would make the import fail inside the image: said before any run."""
    code = tmp_path / "private"
    code.mkdir(mode=0o700)
    code.chmod(0o700)
    fake = engine(side())
    with pytest.raises(GuardError, match=r"cannot read this directory \(mode 700\)") as info:
        replay_in_image(fake, IMAGE, dump, ENTRY, code=code)
    assert "chmod o+rx" in str(info.value.hint) and not fake.runs
    code.chmod(0o755)
    assert replay_in_image(fake, IMAGE, dump, ENTRY, code=code).verdict == "reproducible"


@pytest.mark.parametrize(
    "extra", [["--nodes", "3"], ["--store", "s", "--time", "5"], ["--image", IMAGE, "--run-id", "r"]]
)
def test_fleet_options_without_a_scheduler_are_a_usage_error(
    dump: Path, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    fake = engine(side())
    code = main(
        ["guard", "replay", str(dump), "--entry", ENTRY, *extra, "--json"],
        services=Services(engine_factory=lambda: fake),
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 2 and out["errors"][0]["type"] == "UsageError", out
    assert extra[-2] in out["errors"][0]["message"] and "only with --slurm" in out["errors"][0]["message"]
    assert not fake.runs
