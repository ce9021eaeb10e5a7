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
"""pytorch/examples ``word_language_model/main.py`` and ``model.py`` (commit 77f55b9), guarded.

Source: https://github.com/pytorch/examples/blob/77f55b912142e11fcfdf5b530231fb9c52f181e8/word_language_model/main.py
Kept: the default configuration (LSTM, emsize 200, nhid 200, 2 layers, dropout 0.2, bptt 35, batch
20, lr 20, clip 0.25, 40 epochs, seed 1111), ``RNNModel`` (encoder, LSTM, decoder, ``log_softmax``,
``init_weights``), ``NLLLoss``, ``batchify``, ``get_batch`` (two views of one tensor),
``repackage_hidden``, ``clip_grad_norm_(args.clip)``, ``evaluate`` and ``lr /= 4.0`` after an epoch
whose validation loss did not improve.
Changed for the corpus: wikitext-2 is replaced by a generated 2,000-word Markov text (9,100 training
tokens: 13 batches an epoch, 520 steps in all); the hand-written SGD update
(``p.data.add_(p.grad, alpha=-lr)``) is ``torch.optim.SGD(lr)`` (the same arithmetic; a guard needs an
optimizer) and the annealing sets its lr; the guard as docs/guides/guard.md shows (``clip=args.clip``);
``_plant`` hooks.
"""

import argparse
import json
import math

import _data
import _plant
import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser(description="PyTorch Wikitext-2 RNN/LSTM/GRU/Transformer Language Model")
parser.add_argument("--emsize", type=int, default=200)
parser.add_argument("--nhid", type=int, default=200)
parser.add_argument("--nlayers", type=int, default=2)
parser.add_argument("--lr", type=float, default=20)
parser.add_argument("--clip", type=float, default=0.25)
parser.add_argument("--epochs", type=int, default=40)
parser.add_argument("--batch_size", type=int, default=20)
parser.add_argument("--bptt", type=int, default=35)
parser.add_argument("--dropout", type=float, default=0.2)
parser.add_argument("--seed", type=int, default=1111)
parser.add_argument("--log-interval", type=int, default=200)
args = parser.parse_args([]) if __name__ != "__main__" else parser.parse_args()
NTOKENS = 2000


class RNNModel(nn.Module):
    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.init_weights()
        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (
            weight.new_zeros(self.nlayers, bsz, self.nhid),
            weight.new_zeros(self.nlayers, bsz, self.nhid),
        )


criterion = nn.NLLLoss()


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source, i):
    seq_len = min(args.bptt, len(source) - 1 - i)
    data = source[i : i + seq_len]
    target = source[i + 1 : i + 1 + seq_len].view(-1)
    return data, target


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def loss_fn(model, batch):
    data, targets, hidden = batch
    output, _ = model(data, hidden)
    return criterion(output, targets)


def build():
    torch.manual_seed(args.seed)
    model = RNNModel("LSTM", NTOKENS, args.emsize, args.nhid, args.nlayers, args.dropout)
    return model, torch.optim.SGD(model.parameters(), lr=args.lr), loss_fn


def main():
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    train_data = batchify(torch.from_numpy(_data.tokens(9_200, NTOKENS, seed=0)), args.batch_size)
    val_data = batchify(torch.from_numpy(_data.tokens(1_400, NTOKENS, seed=1)), 10)
    model, optimizer, _ = build()
    guard = None
    if _plant.RUN:
        from envkit.guard import Guard

        guard = Guard(
            model,
            optimizer,
            run=_plant.RUN,
            policy="skip",
            clip=args.clip,
            loss_fn=loss_fn,
            entry="word_language_model:build",
        )
    state = {"step": 0}

    def train():
        model.train()
        hidden = model.init_hidden(args.batch_size)
        for _batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
            data, targets = get_batch(train_data, i)
            hidden = repackage_hidden(hidden)
            step = state["step"]
            _plant.set_lr(step, optimizer)
            if guard is None:
                model.zero_grad()
                output, hidden = model(data, hidden)
                loss = criterion(output, targets)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
                optimizer.step()
            else:
                with guard.step(step, (data, targets, hidden)) as g:
                    output, hidden = model(data, hidden)
                    loss = criterion(output, targets)
                    g.backward(loss)
                    g.optimizer_step()
            _plant.restore_lr(optimizer)
            state["step"] += 1

    def evaluate(data_source):
        model.eval()
        total_loss = 0.0
        hidden = model.init_hidden(10)
        with torch.no_grad():
            for i in range(0, data_source.size(0) - 1, args.bptt):
                data, targets = get_batch(data_source, i)
                output, hidden = model(data, hidden)
                hidden = repackage_hidden(hidden)
                total_loss += len(data) * criterion(output, targets).item()
        return total_loss / (len(data_source) - 1)

    lr = args.lr
    best_val_loss = None
    for epoch in range(1, args.epochs + 1):
        train()
        val_loss = evaluate(val_data)
        print(
            f"| end of epoch {epoch:3d} | valid loss {val_loss:5.2f} | valid ppl {math.exp(min(val_loss, 50)):8.2f}"
        )
        if not best_val_loss or val_loss < best_val_loss:
            best_val_loss = val_loss
        else:
            lr /= 4.0
            for group in optimizer.param_groups:
                group["lr"] = lr
    if guard is not None:
        guard.close()
    print(json.dumps({"trained": state["step"]}))


if __name__ == "__main__":
    main()
