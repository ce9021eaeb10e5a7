# mypy: disable-error-code="misc, name-defined"
"""``guard replay`` of a step trained under autocast and a GradScaler (issue 44 item 4).

A real CPU run: an MLP under ``torch.autocast("cpu", bfloat16)`` (and float16) with
``torch.amp.GradScaler("cpu")``, a deterministic data fault planted (one batch ×1000: a loss spike,
finite), the guard's dump, then ``replay_dump`` with the entry: the step replays bitwise
(``reproducible``), with the recorded loss scale and autocast. Before, the replay ran the forward in
float32 and backward unscaled, and the deterministic fault was called ``transient … suspect the
device``. The ``--json`` output is JSON only, though the entry prints (issue 44 item 7).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from envkit.cli import main  # noqa: E402
from envkit.guard import Guard, RunlogOptions, SpikeOptions  # noqa: E402
from envkit.incident.replay import replay_dump  # noqa: E402

pytestmark = [pytest.mark.frameworks, pytest.mark.filterwarnings("ignore::UserWarning")]

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def build() -> tuple[Any, Any, Any]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.GELU(), torch.nn.Linear(64, 4))
    return model, torch.optim.AdamW(model.parameters(), lr=1e-3), ce


def ce(model: Any, batch: Any) -> Any:
    return F.cross_entropy(model(batch[0]), batch[1])


def train(run: Path, autocast: str, steps: int = 31, bad_at: int = 30) -> Path:
    # the fault at the last step: a step after a guard skip under a GradScaler raises until issue
    # 44 item 1 (the guard lets the scaler finish a skipped step) is merged
    model, opt, loss_fn = build()
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)
    guard = Guard(
        model, opt, run=run, scaler=scaler, loss_fn=loss_fn,
        spikes=SpikeOptions(policy="skip", warmup=10), log=RunlogOptions(autocast=autocast),
    )  # fmt: skip
    g = torch.Generator().manual_seed(3)
    for step in range(steps):
        x, y = torch.randn(32, 16, generator=g), torch.randint(0, 4, (32,), generator=g)
        if step == bad_at:
            # a deterministic data fault (the same batch faults every time); fp16's gradients, scaled,
            # overflow at ×1000: the scaler's back-off, not the guard's (issue 44 item 3)
            x = x * (1000.0 if autocast == "bf16" else 30.0)
        with guard.step(step, (x, y)) as s:
            with torch.autocast("cpu", dtype=DTYPES[autocast]):
                loss = loss_fn(model, (x, y))
            s.backward(loss)
            s.optimizer_step()
    guard.close()
    dumps = sorted((run / "incidents").iterdir())
    assert dumps, "the planted batch made no incident"
    return dumps[0]


@pytest.mark.parametrize("autocast", ["bf16", "fp16"])
def test_an_amp_step_replays_bitwise_with_its_scale_and_autocast(tmp_path: Path, autocast: str) -> None:
    dump = train(tmp_path / "run", autocast)
    manifest = json.loads((dump / "manifest.json").read_text())
    assert manifest["autocast"] == autocast
    records = json.loads((dump / "records.json").read_text())
    assert records[-1]["loss_scale"] == 1024.0
    verdict = replay_dump(dump, build)
    assert verdict.verdict == "reproducible", verdict.to_json()
    assert verdict.replays[0]["loss"] == verdict.recorded["loss"]
    assert any(
        "recorded loss scale 1024" in n
        and autocast.replace("bf16", "bfloat16").replace("fp16", "float16") in n
        for n in verdict.notes
    )


def test_replay_json_is_only_json_though_the_entry_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    dump = train(tmp_path / "run", "bf16")
    (tmp_path / "noisy_entry.py").write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from test_guard_amp_replay import build as _build\n"
        "def build():\n"
        "    print('building the model: 3 layers')\n"
        "    return _build()\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    capsys.readouterr()
    code = main(["guard", "replay", str(dump), "--entry", "noisy_entry:build", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert json.loads(out)["result"]["verdict"] == "reproducible"
    assert "building the model" in err
    sys.modules.pop("noisy_entry", None)
