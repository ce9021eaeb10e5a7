# mypy: disable-error-code="misc, name-defined, no-any-return, no-untyped-call"
"""A word-level LSTM language model trained as pytorch/examples ``word_language_model/main.py`` does.

Written here for envkit's guard regression tests (no code copied): it reproduces that script's
patterns that matter to a guard: ``batchify`` makes one contiguous ``[rows, batch]`` tensor and
``get_batch`` returns two *overlapping views* of it (``source[i:i+n]`` and
``source[i+1:i+1+n].view(-1)``); the hidden state is carried from batch to batch, detached
(``repackage_hidden``); dropout; ``clip_grad_norm_(0.25)``; plain SGD at lr 20, divided by 4 at an
epoch whose validation loss did not improve. Tiny CPU sizes and a generated Markov-chain corpus
(token 0, ``<unk>``, never occurs and its embedding row is zero). The model normalizes its
embeddings (``emb_norm``, parameter-free): a batch holding ``<unk>`` gives a finite forward and a
NaN only in backward (``torch.where`` over an ``rsqrt`` of 0) — the planted fault ``unk``.

``python wlm.py --run DIR [--steps N] [--no-guard] [--fault unk --fault-step K]``; prints a JSON
summary. ``build()`` is the replay entry (``envkit guard replay DUMP --entry wlm:build``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

NTOKENS, EMSIZE, NHID, NLAYERS, BPTT, BATCH = 200, 32, 32, 2, 16, 10
LR, CLIP = 20.0, 0.25


class EmbNorm(nn.Module):
    """Scale each embedding to unit RMS; an all-zero embedding is left as it is (in forward)."""

    def forward(self, x: Any) -> Any:
        ms = x.pow(2).mean(-1, keepdim=True)
        return x * torch.where(ms > 0, ms.rsqrt(), torch.ones_like(ms))


class RNNModel(nn.Module):
    """Embedding → emb_norm → dropout → LSTM → dropout → linear decoder (word_language_model's shape)."""

    def __init__(self) -> None:
        super().__init__()
        self.drop = nn.Dropout(0.2)
        self.encoder = nn.Embedding(NTOKENS, EMSIZE)
        self.emb_norm = EmbNorm()
        self.rnn = nn.LSTM(EMSIZE, NHID, NLAYERS, dropout=0.2)
        self.decoder = nn.Linear(NHID, NTOKENS)
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)
        with torch.no_grad():
            self.encoder.weight[0].zero_()  # <unk>: never in the corpus

    def forward(self, data: Any, hidden: Any) -> tuple[Any, Any]:
        emb = self.drop(self.emb_norm(self.encoder(data)))
        output, hidden = self.rnn(emb, hidden)
        return self.decoder(self.drop(output)), hidden

    def init_hidden(self, bsz: int) -> tuple[Any, Any]:
        return (torch.zeros(NLAYERS, bsz, NHID), torch.zeros(NLAYERS, bsz, NHID))


def corpus(n: int, seed: int) -> Any:
    """Tokens 1..NTOKENS-1 from a sparse Markov chain (each token has 6 likely successors)."""
    g = torch.Generator().manual_seed(seed)
    successors = torch.randint(1, NTOKENS, (NTOKENS, 6), generator=g)
    out = torch.empty(n, dtype=torch.long)
    tok = 1
    choice = torch.randint(0, 6, (n,), generator=g)
    jump = torch.rand(n, generator=g) < 0.1
    anywhere = torch.randint(1, NTOKENS, (n,), generator=g)
    for i in range(n):
        tok = int(anywhere[i]) if jump[i] else int(successors[tok, choice[i]])
        out[i] = tok
    return out


def batchify(data: Any, bsz: int) -> Any:
    rows = data.size(0) // bsz
    return data[: rows * bsz].view(bsz, -1).t().contiguous()


def get_batch(source: Any, i: int) -> tuple[Any, Any]:
    seq_len = min(BPTT, len(source) - 1 - i)
    return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len].view(-1)  # two views of one tensor


def repackage_hidden(h: Any) -> Any:
    return h.detach() if isinstance(h, torch.Tensor) else tuple(repackage_hidden(v) for v in h)


def loss_fn(model: Any, batch: Any) -> Any:
    data, targets, hidden = batch
    output, _ = model(data, hidden)
    return nn.functional.cross_entropy(output.view(-1, NTOKENS), targets)


def build() -> tuple[Any, Any, Any]:
    """The replay entry: the model and optimizer as the run built them (the dump brings the weights)."""
    torch.manual_seed(0)
    model = RNNModel()
    return model, torch.optim.SGD(model.parameters(), lr=LR), loss_fn


def evaluate(model: Any, source: Any) -> float:
    model.eval()
    total, hidden = 0.0, model.init_hidden(BATCH)
    with torch.no_grad():
        for i in range(0, source.size(0) - 1, BPTT):
            data, targets = get_batch(source, i)
            output, hidden = model(data, hidden)
            total += len(data) * float(nn.functional.cross_entropy(output.view(-1, NTOKENS), targets))
    model.train()
    return total / (len(source) - 1)


def train(
    run: Path | None,
    steps: int,
    *,
    fault: str | None = None,
    fault_step: int = 60,
    seed: int = 0,
    guard_options: dict[str, Any] | None = None,
    start: int = 0,
    interleave: bool = False,
) -> dict[str, Any]:
    """Train ``steps`` batches (guarded when ``run`` is given); a summary with the loop's CPU time.

    ``interleave``: with a guard, every odd step runs unguarded (the bench times both kinds of step
    on one model in one process: ``step_cpu_s`` beside ``step_guarded``).

    ``start``: resume there (as from a checkpoint: the batches before it are not trained on; the
    guard's bad-batch ledger is asked before each step)."""
    torch.manual_seed(seed)
    model, optimizer, _ = build()
    torch.manual_seed(seed)
    train_data = batchify(corpus(12_000, seed), BATCH)
    val_data = batchify(corpus(1_600, seed + 1000), BATCH)
    guard = None
    if run is not None:
        from envkit.guard import Guard

        options = {"clip": CLIP, "loss_fn": loss_fn, "entry": "wlm:build", **(guard_options or {})}
        guard = Guard(model, optimizer, run=run, **options)
    hidden, best_val, step, losses = model.init_hidden(BATCH), None, 0, []
    step_cpu: list[float] = []  # each trained step's CPU seconds, and whether the guard ran it
    step_guarded: list[bool] = []
    start_cpu, start_wall = time.process_time(), time.perf_counter()
    while step < steps:
        for i in range(0, train_data.size(0) - 1, BPTT):
            if step >= steps:
                break
            if fault == "unk" and step == fault_step:
                train_data[i + 2, 3] = 0  # an <unk> in the batch: NaN in emb_norm's backward
            data, targets = get_batch(train_data, i)
            hidden = repackage_hidden(hidden)
            step_start = time.process_time()
            if step < start or (guard is not None and guard.skip_batch(step, (data, targets, hidden))):
                step += 1
                continue
            guarded = guard is not None and not (interleave and step % 2)
            if guard is None or not guarded:
                model.zero_grad()
                output, hidden = model(data, hidden)
                loss = nn.functional.cross_entropy(output.view(-1, NTOKENS), targets)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
                optimizer.step()
            else:
                with guard.step(step, (data, targets, hidden)) as g:
                    output, hidden = model(data, hidden)
                    loss = nn.functional.cross_entropy(output.view(-1, NTOKENS), targets)
                    g.backward(loss)
                    g.optimizer_step()
            losses.append(loss.item())
            step_cpu.append(time.process_time() - step_start)
            step_guarded.append(guarded)
            step += 1
        val = evaluate(model, val_data)
        if best_val is not None and val >= best_val:
            for group in optimizer.param_groups:
                group["lr"] /= 4.0
        best_val = val if best_val is None else min(best_val, val)
    cpu, wall = time.process_time() - start_cpu, time.perf_counter() - start_wall
    if guard is not None:
        guard.close()
    incidents = [] if guard is None else [i.to_json() for i in guard.incidents]
    return {"steps": steps, "loss": losses[-1] if losses else None, "cpu_s": cpu, "wall_s": wall,
            "step_cpu_s": step_cpu, "step_guarded": step_guarded, "incidents": incidents}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--no-guard", action="store_true")
    parser.add_argument("--fault")
    parser.add_argument("--fault-step", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--guard-options", type=json.loads, default={}, help="Guard(...) keywords, JSON")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    run = None if args.no_guard else args.run
    out = train(
        run,
        args.steps,
        fault=args.fault,
        fault_step=args.fault_step,
        seed=args.seed,
        guard_options=args.guard_options,
    )
    sys.stdout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
