# mypy: ignore-errors
# ruff: noqa: C408, RUF059  (vendored: the original's lines and idioms)
# MIT License
#
# Copyright (c) 2022 Andrej Karpathy
#
# Permission is hereby granted, free of charge, to any person obtaining a copy of this software and
# associated documentation files (the "Software"), to deal in the Software without restriction,
# including without limitation the rights to use, copy, modify, merge, publish, distribute,
# sublicense, and/or sell copies of the Software, and to permit persons to whom the Software is
# furnished to do so, subject to the following conditions: The above copyright notice and this
# permission notice shall be included in all copies or substantial portions of the Software.
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED.
"""karpathy/nanoGPT ``train.py`` and ``model.py`` (commit 3adf61e154c3fe3fca428ad6bc3818b27a3b8291), guarded.

Source: https://github.com/karpathy/nanoGPT/blob/3adf61e154c3fe3fca428ad6bc3818b27a3b8291/train.py
Kept: the training loop as written: ``get_lr`` (linear warm-up, then cosine to ``min_lr``) set by hand
on every group each iteration, ``gradient_accumulation_steps`` micro-batches each divided by it, the
next batch fetched during the forward, ``GradScaler(enabled=(dtype == 'float16'))`` with
``scaler.unscale_`` + ``clip_grad_norm_(grad_clip=1.0)``, AdamW over two groups (``configure_optimizers``:
decay for ≥ 2-D tensors), ``get_batch`` of random windows; the GPT of ``model.py`` (weight-tied
``lm_head``, ``scaled_dot_product_attention``, the ``c_proj`` init).
Changed for the corpus: ``config/train_shakespeare_char.py``'s schedule scaled to a CPU: dtype float16
autocast on the CPU (``torch.amp.GradScaler("cpu")``), 2 layers × 2 heads × 32, block 32, batch 8,
gradient accumulation 4, ``max_iters`` 500 (``lr_decay_iters`` 500, ``warmup_iters`` 20, lr 1e-3,
``min_lr`` 1e-4, beta2 0.99); a generated 65-token Markov text; no eval, checkpoints or wandb; the
guard around the iteration (``g.backward`` per micro-batch, ``scaler=``, ``clip=``) as docs/guides/guard.md
shows; ``_plant`` hooks.
"""

import argparse
import json
import math

import _data
import _plant
import numpy as np
import torch
import torch.nn as nn
from torch.nn import functional as F

n_layer, n_head, n_embd, block_size, vocab_size, dropout = 2, 2, 32, 32, 65, 0.0
batch_size, gradient_accumulation_steps = 8, 4
learning_rate, min_lr, warmup_iters, lr_decay_iters = 1e-3, 1e-4, 20, 500
weight_decay, beta1, beta2, grad_clip = 1e-1, 0.9, 0.99, 1.0
dtype = "float16"


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.resid_dropout = nn.Dropout(dropout)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(n_embd, dim=2)
        k = k.view(B, T, n_head, C // n_head).transpose(1, 2)
        q = q.view(B, T, n_head, C // n_head).transpose(1, 2)
        v = v.view(B, T, n_head, C // n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * n_embd, n_embd)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = MLP()

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = nn.ModuleDict(
            dict(
                wte=nn.Embedding(vocab_size, n_embd),
                wpe=nn.Embedding(block_size, n_embd),
                drop=nn.Dropout(dropout),
                h=nn.ModuleList([Block() for _ in range(n_layer)]),
                ln_f=nn.LayerNorm(n_embd),
            )
        )
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        _, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        logits = self.lm_head(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss

    def configure_optimizers(self):
        param_dict = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
        optim_groups = [
            {"params": decay_params, "weight_decay": weight_decay},
            {"params": nodecay_params, "weight_decay": 0.0},
        ]
        return torch.optim.AdamW(optim_groups, lr=learning_rate, betas=(beta1, beta2))


train_data = _data.tokens(60_000, vocab_size, seed=0)


def get_batch(rng):
    ix = rng.integers(0, len(train_data) - block_size, batch_size)
    x = torch.stack([torch.from_numpy(train_data[i : i + block_size].astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy(train_data[i + 1 : i + 1 + block_size].astype(np.int64)) for i in ix])
    return x, y


def get_lr(it):
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return min_lr + coeff * (learning_rate - min_lr)


def loss_fn(model, batch):
    """One micro-batch's loss as the loop computes it (the replay entry's loss)."""
    X, Y = batch
    with torch.amp.autocast(device_type="cpu", dtype=torch.float16):
        return model(X, Y)[1] / gradient_accumulation_steps


def build():
    torch.manual_seed(1337)
    model = GPT()
    return model, model.configure_optimizers(), loss_fn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-iters", type=int, default=500)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model, optimizer, _ = build()
    ctx = torch.amp.autocast(device_type="cpu", dtype=torch.float16)
    scaler = torch.amp.GradScaler("cpu", enabled=(dtype == "float16"))
    guard = None
    if _plant.RUN:
        from envkit.guard import Guard

        guard = Guard(
            model,
            optimizer,
            run=_plant.RUN,
            policy="skip",
            clip=grad_clip,
            scaler=scaler,
            entry="nanogpt:build",
        )
    rng = np.random.default_rng(1337)
    X, Y = get_batch(rng)
    iter_num = 0
    while True:
        lr = get_lr(iter_num)
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr
        _plant.set_lr(iter_num, optimizer)
        if guard is None:
            for _ in range(gradient_accumulation_steps):
                with ctx:
                    logits, loss = model(X, Y)
                    loss = loss / gradient_accumulation_steps
                X, Y = get_batch(rng)
                scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
        else:
            batches = []  # the iteration's micro-batches: the guard's batch for this step
            with guard.step(iter_num, batches) as g:
                for _ in range(gradient_accumulation_steps):
                    batches.append((X, Y))
                    with ctx:
                        logits, loss = model(X, Y)
                        loss = loss / gradient_accumulation_steps
                    X, Y = get_batch(rng)
                    g.backward(loss)
                g.optimizer_step()
        _plant.restore_lr(optimizer)
        if iter_num % 50 == 0:
            print(f"iter {iter_num}: loss {loss.item() * gradient_accumulation_steps:.4f}")
        iter_num += 1
        if iter_num >= args.max_iters:
            break
    if guard is not None:
        guard.close()
    print(json.dumps({"trained": iter_num}))


if __name__ == "__main__":
    main()
