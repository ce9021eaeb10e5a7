# mypy: ignore-errors
# ruff: noqa: E501  (vendored: the original's lines and idioms)
# BSD 3-Clause License
#
# Copyright (c) 2017, Pytorch contributors
# All rights reserved.
#
# Redistribution and use in source and binary forms, with or without modification, are permitted
# provided that the following conditions are met: (1) redistributions of source code must retain the
# above copyright notice, this list of conditions and the following disclaimer; (2) redistributions in
# binary form must reproduce the above copyright notice, this list of conditions and the following
# disclaimer in the documentation and/or other materials provided with the distribution; (3) neither
# the name of the copyright holder nor the names of its contributors may be used to endorse or promote
# products derived from this software without specific prior written permission.
# THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS" AND ANY EXPRESS OR IMPLIED
# WARRANTIES ARE DISCLAIMED. (Full text: https://github.com/pytorch/examples/blob/main/LICENSE)
"""pytorch/examples ``distributed/minGPT-ddp/mingpt`` (commit 77f55b9): ``trainer.py`` and ``model.py``, guarded.

Source: https://github.com/pytorch/examples/tree/77f55b912142e11fcfdf5b530231fb9c52f181e8/distributed/minGPT-ddp/mingpt
Kept: the GPT (``EmbeddingStem``, ``Block`` with ``MultiheadAttentionLayer`` over
``nn.MultiheadAttention`` and a causal mask, ``ln_f``, ``head``, the scaled ``c_proj`` init), AdamW with
weight decay 0.1 on the decayed parameters only (``create_optimizer``), the ``Trainer``'s
``_run_batch``: ``torch.amp.autocast(float16)`` + ``torch.amp.GradScaler(device_type)``,
``clip_grad_norm_(grad_norm_clip=1.0)``, ``DistributedSampler`` with ``set_epoch``,
``data_loader_workers`` workers; ``max_epochs`` 10, ``learning_rate`` 3e-4 (gpt2_train_cfg.yaml).
Changed for the corpus: ``gloo`` on the CPU, fp16 autocast on the CPU with ``GradScaler("cpu")``; a tiny
GPT (2 layers, 2 heads, 32 wide, block 16) over a generated 64-token Markov text instead of tiny
Shakespeare; batch 16, 1 worker, 1,600 sequences (50 steps per rank an epoch, 500 in all); no
snapshots or hydra; the guard around ``_run_batch`` as docs/guides/guard.md shows (``scaler=``, ``clip=``).
``torchrun --standalone --nproc-per-node 2 mingpt_ddp.py [--epochs N]``.
"""

import argparse
import json
import math
import os
from dataclasses import dataclass

import _data
import _plant
import torch
import torch.nn as nn
from torch.distributed import destroy_process_group, init_process_group
from torch.nn import functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


@dataclass
class GPTConfig:
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 32
    vocab_size: int = 64
    block_size: int = 16
    embd_pdrop: float = 0.1
    resid_pdrop: float = 0.1
    attn_pdrop: float = 0.1


class MultiheadAttentionLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.resid_drop = nn.Dropout(config.resid_pdrop)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)
        self.register_buffer(
            "mask",
            torch.tril(torch.ones(config.block_size, config.block_size)).view(
                1, 1, config.block_size, config.block_size
            ),
        )
        self.attn = torch.nn.MultiheadAttention(
            embed_dim=config.n_embd, num_heads=config.n_head, dropout=config.attn_pdrop, batch_first=True
        )

    def forward(self, x):
        _, seq_size, _ = x.size()
        y = self.attn(x, x, x, attn_mask=self.mask[0, 0, :seq_size, :seq_size])[0]
        return self.resid_drop(self.c_proj(y))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln1 = nn.LayerNorm(config.n_embd)
        self.ln2 = nn.LayerNorm(config.n_embd)
        self.attn = MultiheadAttentionLayer(config)
        self.mlp = nn.Sequential(
            nn.Linear(config.n_embd, 4 * config.n_embd),
            nn.GELU(),
            nn.Linear(4 * config.n_embd, config.n_embd),
            nn.Dropout(config.resid_pdrop),
        )

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class EmbeddingStem(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.tok_emb = nn.Embedding(config.vocab_size, config.n_embd)
        self.pos_emb = nn.Parameter(torch.zeros(1, config.block_size, config.n_embd))
        self.drop = nn.Dropout(config.embd_pdrop)

    def forward(self, idx):
        _, t = idx.size()
        return self.drop(self.tok_emb(idx) + self.pos_emb[:, :t, :])


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.emb_stem = EmbeddingStem(config)
        self.blocks = nn.Sequential(*[Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                p.data.normal_(mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.data.normal_(mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)

    def forward(self, idx, targets=None):
        x = self.emb_stem(idx)
        x = self.blocks(x)
        x = self.ln_f(x)
        logits = self.head(x)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


def create_optimizer(model, learning_rate=3e-4, weight_decay=0.1):
    decay, no_decay = set(), set()
    for mn, m in model.named_modules():
        for pn, _ in m.named_parameters(recurse=False):
            fpn = f"{mn}.{pn}" if mn else pn
            if pn.endswith("bias") or isinstance(m, (nn.LayerNorm, nn.Embedding)) or pn.endswith("pos_emb"):
                no_decay.add(fpn)
            elif pn.endswith("weight"):
                decay.add(fpn)
    params = dict(model.named_parameters())
    groups = [
        {"params": [params[pn] for pn in sorted(decay)], "weight_decay": weight_decay},
        {"params": [params[pn] for pn in sorted(no_decay - decay)], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=learning_rate, betas=(0.9, 0.95))


class CharDataset(Dataset):
    def __init__(self, n, block_size):
        self.data = torch.from_numpy(_data.tokens(n * block_size + 1, 64, seed=0))
        self.block_size = block_size
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        chunk = self.data[idx * self.block_size : (idx + 1) * self.block_size + 1]
        return chunk[:-1], chunk[1:]


def loss_fn(model, batch):
    source, targets = batch
    with torch.amp.autocast(device_type="cpu", dtype=torch.float16):
        return model(source, targets)[1]


def build():
    """The replay entry: the bare GPT and its AdamW."""
    torch.manual_seed(0)
    model = GPT(GPTConfig())
    return model, create_optimizer(model), loss_fn


class Trainer:
    def __init__(self, model, optimizer, train_dataset, max_epochs):
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.global_rank = int(os.environ["RANK"])
        self.device_type = "cpu"
        self.max_epochs = max_epochs
        self.train_loader = DataLoader(
            train_dataset,
            batch_size=16,
            shuffle=False,
            num_workers=1,
            sampler=DistributedSampler(train_dataset),
        )
        self.optimizer = optimizer
        self.scaler = torch.amp.GradScaler(self.device_type)
        self.model = DDP(model)
        self.step = 0
        self.guard = None
        if _plant.RUN:
            from envkit.guard import Guard

            self.guard = Guard(
                self.model,
                optimizer,
                run=_plant.RUN,
                policy="skip",
                clip=1.0,
                scaler=self.scaler,
                entry="mingpt_ddp:build",
            )

    def _run_batch(self, source, targets) -> float:
        _plant.set_lr(self.step, self.optimizer)
        if self.guard is None:
            with torch.amp.autocast(device_type=self.device_type, dtype=torch.float16):
                _, loss = self.model(source, targets)
            self.optimizer.zero_grad(set_to_none=True)
            self.scaler.scale(loss).backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            with self.guard.step(self.step, (source, targets)) as g:
                with torch.amp.autocast(device_type=self.device_type, dtype=torch.float16):
                    _, loss = self.model(source, targets)
                g.backward(loss)
                g.optimizer_step()
        _plant.restore_lr(self.optimizer)
        self.step += 1
        return loss.item()

    def _run_epoch(self, epoch):
        self.train_loader.sampler.set_epoch(epoch)
        for it, (source, targets) in enumerate(self.train_loader):
            batch_loss = self._run_batch(source, targets)
            if it % 100 == 0:
                print(f"[RANK{self.global_rank}] Epoch {epoch} | Iter {it} | Train Loss {batch_loss:.5f}")

    def train(self):
        for epoch in range(self.max_epochs):
            self._run_epoch(epoch + 1)
        if self.guard is not None:
            self.guard.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(1)
    init_process_group(backend="gloo")
    model, optimizer, _ = build()
    trainer = Trainer(model, optimizer, CharDataset(1600, 16), args.epochs)
    trainer.train()
    destroy_process_group()
    if trainer.global_rank == 0:
        print(json.dumps({"trained": trainer.step}))


if __name__ == "__main__":
    main()
