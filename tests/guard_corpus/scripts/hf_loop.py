# mypy: ignore-errors
# Copyright Hugging Face. Licensed under the Apache License, Version 2.0 (the "License"); you may not
# use this file except in compliance with the License. You may obtain a copy of the License at
# http://www.apache.org/licenses/LICENSE-2.0. Unless required by applicable law or agreed to in
# writing, software distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
"""The Hugging Face course's "A full training loop" (chapter 3, section 4), guarded.

Source: https://github.com/huggingface/course/blob/068d132ce889a883e50a7cdf7431d52527622079/chapters/en/chapter3/4.mdx
Kept: the loop as written: ``batch = {k: v.to(device)}``, ``outputs = model(**batch)``,
``loss = outputs.loss``, backward, ``optimizer.step()``, ``lr_scheduler.step()`` every step,
``optimizer.zero_grad()``; ``AdamW(lr=5e-5)``; ``get_scheduler("linear", num_warmup_steps=0,
num_training_steps=num_epochs * len(train_dataloader))`` (written out as transformers defines it: a
``LambdaLR``); 3 epochs, batch 8, ``shuffle=True``; the page's tips: ``clip_grad_norm_(max_norm=1.0)``
and mixed precision (bf16 autocast on the CPU).
Changed for the corpus: no download: ``AutoModelForSequenceClassification`` is replaced by a tiny
BERT-shaped classifier built here (embeddings + LayerNorm, 2 encoder layers, pooler, classifier; it
returns ``.loss`` and ``.logits`` as transformers' models do) with lr 5e-4 for its size; GLUE/MRPC by
1,360 generated pairs of token sequences (170 steps an epoch, 510 in all); the guard as docs/guides/guard.md
shows (``scheduler=`` so the schedule counts applied updates, ``clip=``); ``_plant`` hooks.
"""

import argparse
import json
from types import SimpleNamespace

import _data
import _plant
import numpy as np
import torch
from torch import nn
from torch.optim import AdamW
from torch.optim.lr_scheduler import LambdaLR
from torch.utils.data import DataLoader

VOCAB, SEQ, HIDDEN = 100, 24, 32


class TinyBertForSequenceClassification(nn.Module):
    def __init__(self, num_labels=2):
        super().__init__()
        self.word_embeddings = nn.Embedding(VOCAB, HIDDEN)
        self.position_embeddings = nn.Embedding(SEQ, HIDDEN)
        self.token_type_embeddings = nn.Embedding(2, HIDDEN)
        self.LayerNorm = nn.LayerNorm(HIDDEN)
        layer = nn.TransformerEncoderLayer(
            HIDDEN, 2, 4 * HIDDEN, dropout=0.1, activation="gelu", batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.pooler = nn.Linear(HIDDEN, HIDDEN)
        self.classifier = nn.Linear(HIDDEN, num_labels)

    def forward(self, input_ids, attention_mask, token_type_ids, labels=None):
        pos = torch.arange(input_ids.size(1))
        h = self.LayerNorm(
            self.word_embeddings(input_ids)
            + self.position_embeddings(pos)
            + self.token_type_embeddings(token_type_ids)
        )
        h = self.encoder(h, src_key_padding_mask=attention_mask == 0)
        logits = self.classifier(torch.tanh(self.pooler(h[:, 0])))
        loss = None if labels is None else nn.functional.cross_entropy(logits.float(), labels)
        return SimpleNamespace(loss=loss, logits=logits)


def get_scheduler(name, optimizer, num_warmup_steps, num_training_steps):
    assert name == "linear"

    def lr_lambda(current_step):
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        return max(
            0.0,
            float(num_training_steps - current_step) / float(max(1, num_training_steps - num_warmup_steps)),
        )

    return LambdaLR(optimizer, lr_lambda)


def dataset(n, seed):
    """Pairs of sequences: label 1 when the second half repeats tokens of the first (a paraphrase)."""
    tokens = _data.tokens(n * SEQ, VOCAB, seed=seed).reshape(n, SEQ)
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    half = SEQ // 2
    tokens[labels == 1, half:] = tokens[labels == 1, :half]
    tokens[:, 0], tokens[:, half] = 1, 2  # [CLS] and [SEP]
    token_type = np.zeros((n, SEQ), dtype=np.int64)
    token_type[:, half:] = 1
    return [
        {
            "input_ids": torch.from_numpy(tokens[i]),
            "attention_mask": torch.ones(SEQ, dtype=torch.long),
            "token_type_ids": torch.from_numpy(token_type[i]),
            "labels": torch.tensor(int(labels[i])),
        }
        for i in range(n)
    ]


def loss_fn(model, batch):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return model(**batch).loss


def build():
    torch.manual_seed(42)
    model = TinyBertForSequenceClassification(num_labels=2)
    return model, AdamW(model.parameters(), lr=5e-4), loss_fn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--num-epochs", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model, optimizer, _ = build()
    train_dataloader = DataLoader(dataset(1360, 0), shuffle=True, batch_size=8)
    num_epochs = args.num_epochs
    num_training_steps = num_epochs * len(train_dataloader)
    lr_scheduler = get_scheduler(
        "linear", optimizer=optimizer, num_warmup_steps=0, num_training_steps=num_training_steps
    )
    device = torch.device("cpu")
    model.to(device)
    guard = None
    if _plant.RUN:
        from envkit.guard import Guard

        guard = Guard(
            model,
            optimizer,
            run=_plant.RUN,
            policy="skip",
            clip=1.0,
            scheduler=lr_scheduler,
            loss_fn=loss_fn,
            entry="hf_loop:build",
        )
    model.train()
    step = 0
    for _epoch in range(num_epochs):
        for batch in train_dataloader:
            batch = {k: v.to(device) for k, v in batch.items()}
            _plant.set_lr(step, optimizer)
            if guard is None:
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    outputs = model(**batch)
                loss = outputs.loss
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
                optimizer.step()
                lr_scheduler.step()
                optimizer.zero_grad()
            else:
                with guard.step(step, batch) as g:
                    with torch.autocast("cpu", dtype=torch.bfloat16):
                        outputs = model(**batch)
                    g.backward(outputs.loss)
                    g.optimizer_step()  # clips, steps, steps the scheduler, zeroes the gradients
            _plant.restore_lr(optimizer)
            step += 1
        print({"epoch": _epoch, "loss": outputs.loss.item()})
    if guard is not None:
        guard.close()
    print(json.dumps({"trained": step}))


if __name__ == "__main__":
    main()
