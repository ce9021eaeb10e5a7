"""``envkit guard replay DUMP --image NAME`` in the demo's real Docker image (real torch in and out).

The image is ``make demo``'s CPU image (torch 2.13.0+cpu, no safetensors: the in-image side reads
the dump with :mod:`envkit.incident.st_reader`), built once per session by ``conftest.py``. The host
has its own torch (2.15 here). Dumps come from the demo's guarded training with two planted
incidents: a finite loss spike (step 6) and an outlier batch whose loss is inf (step 8). They are
made on the host, and, for the same-environment claim, inside the image itself (the host's
safetensors mounted read-only there for the writing only).
"""

from __future__ import annotations

import importlib
import json
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
safetensors = pytest.importorskip("safetensors")

from envkit.cli import main  # noqa: E402
from envkit.engine.docker_api import DockerEngine  # noqa: E402
from envkit.engine.protocol import Mount  # noqa: E402
from envkit.incident.image_replay import SOURCE  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.frameworks, pytest.mark.filterwarnings("ignore::UserWarning")]

ENTRY = "envkit.guard.example:build"
TRAIN = '''
"""The demo's guarded training with two incidents: a finite loss spike (step 6), an inf loss (step 8)."""
import sys
from pathlib import Path

import torch

from envkit.guard.example import build
from envkit.guard.loop import Guard
from envkit.guard.options import SpikeOptions


def train(run):
    model, optimizer, loss_fn = build()
    guard = Guard(model, optimizer, run=Path(run), clip=1.0, loss_fn=loss_fn, spikes=SpikeOptions(warmup=3),
                  entry="envkit.guard.example:build")
    g = torch.Generator().manual_seed(1)
    for step in range(10):
        x, y = torch.randn(16, 8, generator=g), torch.randint(0, 4, (16,), generator=g)
        batch = {"x": x * {6: 8.0, 8: 1000.0}.get(step, 1.0), "y": y}
        with guard.step(step, batch) as gs:
            gs.backward(loss_fn(model, batch))
            gs.optimizer_step()
    guard.close()


if __name__ == "__main__":
    train(sys.argv[1])
'''


@pytest.fixture(scope="module")
def code(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("guard-code")
    (folder / "guard_image_train.py").write_text(textwrap.dedent(TRAIN))
    folder.chmod(0o755)  # mounted into the image: its non-root user reads the code
    return folder


@pytest.fixture(scope="module")
def host_run(tmp_path_factory: pytest.TempPathFactory, code: Path) -> Path:
    """The training on this host (the host's torch)."""
    run = tmp_path_factory.mktemp("host") / "run"
    sys.path.insert(0, str(code))
    try:
        importlib.import_module("guard_image_train").train(str(run))
    finally:
        sys.path.remove(str(code))
        sys.modules.pop("guard_image_train", None)
    assert sorted(p.name for p in (run / "incidents").iterdir()) == ["step-6", "step-8"]
    return run


def _replay(capsys: pytest.CaptureFixture[str], dump: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    code = main(["guard", "replay", str(dump), "--entry", ENTRY, *extra, "--json"])
    return code, json.loads(capsys.readouterr().out)


def _copy(dump: Path, tmp_path: Path) -> Path:
    target = tmp_path / dump.name
    shutil.copytree(dump, target)
    return target


@pytest.mark.slow  # the demo image (conftest.py): minutes to build, once per session
def test_a_host_dump_replays_reproducible_in_the_demo_image(
    demo_torch_image: dict[str, Any], host_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The must-show: the inf-loss step of a host run, replayed inside the image: reproducible, head named."""
    tag = demo_torch_image["tag"]
    code, out = _replay(capsys, host_run / "incidents" / "step-8", "--image", tag)
    assert code == 0 and out["ok"], out
    result = out["result"]
    assert result["verdict"] == "reproducible"
    assert result["recorded"] == {"loss": "inf", "grad_norm": "nan", "kind": "nonfinite-loss"}
    assert result["replays"] == [{"loss": "inf", "grad_norm": "nan", "error": None}] * 2
    assert result["localization"]["first_nonfinite_module"]["module"] == "head"
    assert result["localization"]["first_nonfinite_module"]["type"] == "NaiveLogSoftmax"
    info = DockerEngine().inspect(tag)
    assert info is not None and f"replayed in {tag} ({info.id[:19]})" in result["notes"]


@pytest.mark.slow  # the demo image (conftest.py): minutes to build, once per session
def test_a_finite_spike_from_the_host_torch_in_the_image(
    demo_torch_image: dict[str, Any], host_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A finite loss from the host's torch, replayed by the image's torch 2.13.0: the bits decide.

    Measured here: bitwise the same loss and norm (reproducible). Where another CPU makes the two
    torch builds differ, the verdict must be `environment` with the torch versions as a cause.
    """
    dump = host_run / "incidents" / "step-6"
    recorded = json.loads((dump / "manifest.json").read_text())["outcome"]
    assert all(isinstance(v, float) for v in recorded.values())  # a finite outcome: bits matter
    code, out = _replay(capsys, dump, "--image", demo_torch_image["tag"])
    result = out["result"]
    first = result["replays"][0]
    assert result["replays"][1] == first  # two replays in the image agree
    if (first["loss"], first["grad_norm"]) == (recorded["loss"], recorded["grad_norm"]):
        assert (code, result["verdict"], result["causes"]) == (0, "reproducible", [])
    else:
        assert code == 1 and result["verdict"] == "environment", result
        assert any("2.13.0" in json.dumps(c) for c in result["causes"]), result["causes"]


@pytest.mark.slow  # the demo image (conftest.py): minutes to build, once per session
def test_a_recorded_outcome_the_image_does_not_give_is_environment_with_causes(
    demo_torch_image: dict[str, Any], host_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As if the recording host had computed another loss: the image's fingerprint gives the ranked causes."""
    from envkit.guard.dump import write_manifest

    dump = _copy(host_run / "incidents" / "step-6", tmp_path)
    manifest = json.loads((dump / "manifest.json").read_text())
    manifest.pop("files")
    manifest["outcome"]["loss"] = 1.25
    write_manifest(dump, manifest)  # re-hashed: the dump is consistent, only its outcome differs
    code, out = _replay(capsys, dump, "--image", demo_torch_image["tag"])
    result = out["result"]
    assert code == 1 and result["verdict"] == "environment", result
    kinds = {c["kind"] for c in result["causes"]}
    assert kinds, result
    text = json.dumps(result["causes"])
    assert torch.__version__.split("+")[0] in text and "2.13.0" in text, text  # recorded vs in-image torch


@pytest.mark.slow  # the demo image (conftest.py): minutes to build, once per session
def test_a_dump_made_in_the_image_replays_reproducible_there_and_here(
    demo_torch_image: dict[str, Any], code: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same environment both ways: trained inside the image, replayed inside it: reproducible."""
    tag = demo_torch_image["tag"]
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out_dir.chmod(0o777)  # the image's non-root user writes the run here
    library = Path(safetensors.__file__).resolve().parent  # abi3: the image's python 3.11 loads it
    mounts = [
        Mount(str(SOURCE), "/opt/envkit-src/envkit"),
        Mount(str(library), "/opt/st/safetensors"),
        Mount(str(code), "/opt/envkit-code"),
        Mount(str(out_dir), "/out", read_only=False),
    ]
    env = {"PYTHONPATH": "/opt/envkit-src:/opt/st:/opt/envkit-code", "PYTHONDONTWRITEBYTECODE": "1"}
    script = "python -m guard_image_train /out/run && chmod -R a+rX /out/run"
    ran = DockerEngine().run(tag, ["sh", "-c", script], mounts=mounts, env=env, network=False)
    assert ran.exit_code == 0, ran.stderr
    run = out_dir / "run"
    recorded = json.loads((run / "incidents" / "step-6" / "env.json").read_text())
    assert recorded["info"]["version"].startswith("2.13.0")  # recorded by the image's torch

    for step in ("step-6", "step-8"):
        code_in, inside = _replay(capsys, run / "incidents" / step, "--image", tag)
        assert code_in == 0 and inside["result"]["verdict"] == "reproducible", inside
    # here, with the host's torch: the inf step is the data's doing on any torch
    code_here, here = _replay(capsys, run / "incidents" / "step-8")
    assert code_here == 0 and here["result"]["verdict"] == "reproducible", here


@pytest.mark.slow  # the demo image (conftest.py): minutes to build, once per session
def test_a_changed_batch_is_refused_before_any_container(
    demo_torch_image: dict[str, Any], host_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from safetensors.torch import load_file, save_file

    dump = _copy(host_run / "incidents" / "step-8", tmp_path)
    batch = load_file(str(dump / "batch.safetensors"))
    batch["b0"][0, 0] = 0.0
    save_file(batch, str(dump / "batch.safetensors"))
    code, out = _replay(capsys, dump, "--image", demo_torch_image["tag"])
    assert code == 2 and not out["ok"], out
    error = out["errors"][0]
    assert error["type"] == "DumpError"
    assert "batch.safetensors" in error["message"] and "sha256" in error["message"], error


def test_a_missing_image_is_a_clear_error(
    host_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _replay(capsys, host_run / "incidents" / "step-8", "--image", "envkit-test/does-not-exist:1")
    assert code == 3 and not out["ok"], out
    error = out["errors"][0]
    assert error["type"] == "GuardError"
    assert "image envkit-test/does-not-exist:1 does not exist" in error["message"]
    assert "envkit build" in error["hint"]
