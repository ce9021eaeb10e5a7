# mypy: disable-error-code="misc, name-defined"
"""``guard replay`` of a step that accumulated gradients over micro-batches (nanoGPT's loop).

A real CPU run as nanoGPT's ``train.py`` writes it: 4 micro-batches an iteration, each loss divided by
4, ``scaler.scale(loss).backward()`` per micro-batch under autocast (bf16 and fp16) and a
``GradScaler("cpu")``, dropout drawing from the generator between them; the guard's batch is the
iteration's list of micro-batches. One micro-batch of step 30 is ×1000 (a deterministic data
fault: a finite loss spike the guard skips). The replay entry's ``loss_fn`` takes one micro-batch, as
the script's own does: before, the replay ran it on the list and refused ("the entry's step raised");
now it runs the 4 in order, accumulates, sums the losses as the guard did, and is bitwise
``reproducible``. The whole batch is tried first: a step that saw two losses of one batch (a GAN's D,
real and fake: the corpus's dcgan) with an entry that takes the batch replays it whole, as before.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from envkit.errors import UsageError  # noqa: E402
from envkit.guard import Guard, RunlogOptions, SpikeOptions  # noqa: E402
from envkit.incident.replay import replay_dump  # noqa: E402

pytestmark = [pytest.mark.frameworks, pytest.mark.filterwarnings("ignore::UserWarning")]

MICRO = 4
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def net() -> Any:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(16, 64), torch.nn.GELU(), torch.nn.Dropout(0.1), torch.nn.Linear(64, 4)
    )


def micro_loss(model: Any, batch: Any) -> Any:
    """One micro-batch's loss, divided as the loop divides it (the forward's autocast is declared)."""
    return F.cross_entropy(model(batch[0]), batch[1]) / MICRO


def build() -> tuple[Any, Any, Any]:
    model = net()
    return model, torch.optim.AdamW(model.parameters(), lr=1e-3), micro_loss


def train(run: Path, autocast: str, steps: int = 31, bad_at: int = 30) -> Path:
    model, opt, _ = build()
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)
    guard = Guard(
        model, opt, run=run, scaler=scaler,
        spikes=SpikeOptions(policy="skip", warmup=10), log=RunlogOptions(autocast=autocast),
    )  # fmt: skip
    g = torch.Generator().manual_seed(3)
    for step in range(steps):
        batches: list[Any] = []
        with guard.step(step, batches) as s:
            for micro in range(MICRO):
                x, y = torch.randn(32, 16, generator=g), torch.randint(0, 4, (32,), generator=g)
                if step == bad_at and micro == 2:
                    x = x * (1000.0 if autocast == "bf16" else 30.0)
                batches.append((x, y))
                with torch.autocast("cpu", dtype=DTYPES[autocast]):
                    loss = micro_loss(model, (x, y))
                s.backward(loss)
            s.optimizer_step()
    guard.close()
    dumps = sorted((run / "incidents").iterdir())
    assert dumps, "the planted micro-batch made no incident"
    return dumps[0]


@pytest.mark.parametrize("autocast", ["bf16", "fp16"])
def test_an_accumulating_amp_step_replays_bitwise_as_its_micro_batches(tmp_path: Path, autocast: str) -> None:
    dump = train(tmp_path / "run", autocast)
    manifest = json.loads((dump / "manifest.json").read_text())
    assert manifest["step"] == 30 and manifest["backwards"] == MICRO
    verdict = replay_dump(dump, build)
    assert verdict.verdict == "reproducible", verdict.to_json()
    assert [r["loss"] for r in verdict.replays] == [verdict.recorded["loss"]] * 2
    assert [r["grad_norm"] for r in verdict.replays] == [verdict.recorded["grad_norm"]] * 2
    said = "\n".join(verdict.notes)
    assert f"replayed as the step's {MICRO} micro-batches" in said and "recorded loss scale 1024" in said


def test_an_entry_that_fits_neither_the_batch_nor_a_micro_batch_is_still_refused(tmp_path: Path) -> None:
    dump = train(tmp_path / "run", "bf16")

    def wrong() -> tuple[Any, Any, Any]:
        model, opt, _ = build()
        return model, opt, lambda m, batch: F.cross_entropy(m(batch["x"]), batch["y"])

    with pytest.raises(UsageError, match="the entry's step raised"):
        replay_dump(dump, wrong)
