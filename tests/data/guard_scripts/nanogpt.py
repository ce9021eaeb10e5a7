# mypy: disable-error-code="misc, name-defined, no-any-return"
"""A character-level GPT trained as karpathy/nanoGPT ``train.py`` (with its ``model.py``) does.

Written here for envkit's guard regression tests (no code copied): a tiny GPT (2 layers, 2 heads,
d 32, ``block_size`` 32, tied embeddings, causal ``scaled_dot_product_attention``, the loss
computed inside ``forward`` with ``ignore_index=-1``), AdamW over two parameter groups (weight
decay on the ≥2-D tensors only, betas 0.9/0.99), linear warm-up then cosine decay of the lr set by
hand into every group each iteration (``get_lr``), gradient accumulation over 2 micro-batches,
``clip_grad_norm_(1.0)``; random windows of a generated text (``get_batch`` with the global
generator). Planted faults: ``lr`` (``get_lr`` returns 5000× at ``--fault-step``), ``ignored``
(every target of a micro-batch is -1: the mean over no tokens is NaN), ``unseeded`` (the
embeddings get noise from a generator of their own that nobody seeds: the step cannot be repeated);
``--fault lr,unseeded`` plants both.

``python nanogpt.py --run DIR [--steps N] [--no-guard] [--fault lr --fault-step K] [--compile]
[--warmup W]``; prints a JSON summary (``cpu_s`` and ``wall_s`` of the loop from step W on, over
``timed_steps`` = N − W steps: ``torch.compile`` compiles in the first steps). ``build()`` is the
replay entry.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

BLOCK, VOCAB, N_EMBD, N_HEAD, N_LAYER = 32, 48, 32, 2, 2
BATCH, ACCUM, LR, MIN_LR, WARMUP, CLIP = 8, 2, 1e-3, 1e-4, 10, 1.0


class Block(nn.Module):
    """LayerNorm → causal self-attention → LayerNorm → MLP, each with its residual."""

    def __init__(self) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(N_EMBD)
        self.c_attn = nn.Linear(N_EMBD, 3 * N_EMBD)
        self.c_proj = nn.Linear(N_EMBD, N_EMBD)
        self.ln_2 = nn.LayerNorm(N_EMBD)
        self.c_fc = nn.Linear(N_EMBD, 4 * N_EMBD)
        self.mlp_proj = nn.Linear(4 * N_EMBD, N_EMBD)

    def forward(self, x: Any) -> Any:
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(N_EMBD, dim=2)
        q, k, v = (z.view(b, t, N_HEAD, c // N_HEAD).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    """Token + position embeddings, the blocks, a final LayerNorm, the tied head; the loss inside."""

    def __init__(self, noise: Any = None) -> None:
        super().__init__()
        self.wte = nn.Embedding(VOCAB, N_EMBD)
        self.wpe = nn.Embedding(BLOCK, N_EMBD)
        self.h = nn.ModuleList([Block() for _ in range(N_LAYER)])
        self.ln_f = nn.LayerNorm(N_EMBD)
        self.lm_head = nn.Linear(N_EMBD, VOCAB, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as nanoGPT does
        self.noise = noise
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * N_LAYER) if name.endswith("c_proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx: Any, targets: Any) -> tuple[Any, Any]:
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        if self.noise is not None and self.training:
            x = x + 1e-3 * torch.randn(x.shape, generator=self.noise)
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return logits, F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1), ignore_index=-1)


def text(n: int, seed: int) -> Any:
    """Character ids of generated 'sentences' of words drawn from a small fixed lexicon."""
    g = torch.Generator().manual_seed(seed)
    words = [torch.randint(1, VOCAB, (int(torch.randint(2, 8, (1,), generator=g)),), generator=g)
             for _ in range(60)]  # fmt: skip
    out: list[Any] = []
    size = 0
    while size < n:
        w = words[int(torch.randint(0, len(words), (1,), generator=g))]
        out += [w, torch.zeros(1, dtype=torch.long)]  # id 0: the space
        size += len(w) + 1
    return torch.cat(out)[:n]


def get_batch(data: Any) -> tuple[Any, Any]:
    ix = torch.randint(len(data) - BLOCK - 1, (BATCH,))
    x = torch.stack([data[i : i + BLOCK] for i in ix.tolist()])
    y = torch.stack([data[i + 1 : i + 1 + BLOCK] for i in ix.tolist()])
    return x, y


def get_lr(it: int, steps: int) -> float:
    if it < WARMUP:
        return LR * (it + 1) / (WARMUP + 1)
    ratio = min(1.0, (it - WARMUP) / max(1, steps - WARMUP))
    return MIN_LR + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (LR - MIN_LR)


def configure_optimizers(model: Any) -> Any:
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=LR, betas=(0.9, 0.99))


def loss_fn(model: Any, batch: Any) -> Any:
    return sum(model(x, y)[1] / ACCUM for x, y in batch)


def build(unseeded: bool = False) -> tuple[Any, Any, Any]:
    """The replay entry: the model and optimizer as the run built them (the dump brings the weights)."""
    torch.manual_seed(0)
    noise = None
    if unseeded:
        noise = torch.Generator()
        noise.seed()  # nobody seeds it: a different stream each time
    model = GPT(noise)
    return model, configure_optimizers(model), loss_fn


def build_unseeded() -> tuple[Any, Any, Any]:
    """The replay entry of a run with the ``unseeded`` fault."""
    return build(unseeded=True)


def train(
    run: Path | None,
    steps: int,
    *,
    fault: str | None = None,
    fault_step: int = 30,
    seed: int = 0,
    compile_model: bool = False,
    guard_options: dict[str, Any] | None = None,
    warmup: int = 0,
    interleave: bool = False,
) -> dict[str, Any]:
    """Train ``steps`` iterations (guarded when ``run`` is given); a summary with the loop's CPU time
    from iteration ``warmup`` on (the first ``warmup`` iterations run, untimed). ``interleave``: with a
    guard, every odd iteration runs unguarded (``step_cpu_s`` beside ``step_guarded``, for the bench)."""
    if not 0 <= warmup < max(steps, 1):
        raise ValueError(f"warmup {warmup}: must be at least 0 and below the {steps} steps")
    faults = set((fault or "").split(","))
    model, optimizer, _ = build("unseeded" in faults)
    torch.manual_seed(seed)
    data = text(20_000, seed)
    stepped: Any = torch.compile(model) if compile_model else model
    guard = None
    if run is not None:
        from envkit.guard import Guard

        entry = "nanogpt:build_unseeded" if "unseeded" in faults else "nanogpt:build"
        options = {"clip": CLIP, "loss_fn": loss_fn, "entry": entry, **(guard_options or {})}
        guard = Guard(stepped, optimizer, run=run, **options)
    losses: list[float] = []
    step_cpu: list[float] = []  # each timed step's CPU seconds, and whether the guard ran it
    step_guarded: list[bool] = []
    start_cpu, start_wall = time.process_time(), time.perf_counter()
    for it in range(steps):
        if it == warmup:  # the timed window starts here (with 0: at the first step, as before)
            start_cpu, start_wall = time.process_time(), time.perf_counter()
        step_start = time.process_time()
        lr = get_lr(it, steps) * (5000.0 if "lr" in faults and it == fault_step else 1.0)
        for group in optimizer.param_groups:
            group["lr"] = lr
        micro = [get_batch(data) for _ in range(ACCUM)]
        if "ignored" in faults and it == fault_step:
            micro[1][1].fill_(-1)
        guarded = guard is not None and not (interleave and it % 2)
        if guard is None or not guarded:
            total = 0.0
            for x, y in micro:
                _, loss = stepped(x, y)
                (loss / ACCUM).backward()
                total += loss.item() / ACCUM
            torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(total)
        else:
            with guard.step(it, micro) as g:
                for x, y in micro:
                    _, loss = stepped(x, y)
                    g.backward(loss / ACCUM)
                g.optimizer_step()
            losses.append(g.loss.item())
        if it >= warmup:
            step_cpu.append(time.process_time() - step_start)
            step_guarded.append(guarded)
    cpu, wall = time.process_time() - start_cpu, time.perf_counter() - start_wall
    if guard is not None:
        guard.close()
    incidents = [] if guard is None else [i.to_json() for i in guard.incidents]
    return {"steps": steps, "timed_steps": steps - warmup, "loss": losses[-1] if losses else None,
            "cpu_s": cpu, "wall_s": wall, "step_cpu_s": step_cpu, "step_guarded": step_guarded,
            "incidents": incidents}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--no-guard", action="store_true")
    parser.add_argument("--fault")
    parser.add_argument("--fault-step", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--guard-options", type=json.loads, default={}, help="Guard(...) keywords, JSON")
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--warmup", type=int, default=0, help="untimed steps first (torch.compile compiles)")
    args = parser.parse_args(argv)
    if not 0 <= args.warmup < args.steps:
        parser.error(f"--warmup {args.warmup}: must be at least 0 and below --steps {args.steps}")
    torch.set_num_threads(args.threads)
    torch.backends.cuda.matmul.allow_tf32 = True  # as nanoGPT's train.py sets them, on any device
    torch.backends.cudnn.allow_tf32 = True
    run = None if args.no_guard else args.run
    out = train(run, args.steps, fault=args.fault, fault_step=args.fault_step, seed=args.seed,
                compile_model=args.compile, guard_options=args.guard_options, warmup=args.warmup)  # fmt: skip
    sys.stdout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
