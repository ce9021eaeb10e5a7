# mypy: ignore-errors
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
"""pytorch/examples ``distributed/ddp-tutorial-series/multigpu_torchrun.py`` (commit 77f55b9), guarded.

Source: https://github.com/pytorch/examples/blob/77f55b912142e11fcfdf5b530231fb9c52f181e8/distributed/ddp-tutorial-series/multigpu_torchrun.py
(and ``datautils.py`` beside it). Kept: the ``Trainer`` (``_run_batch``, ``_run_epoch`` with
``sampler.set_epoch``), ``MyTrainDataset(2048)`` of ``(rand(20), rand(1))``, ``nn.Linear(20, 1)``, SGD at
lr 1e-3, ``F.cross_entropy(output, targets)`` as written (a [B, 1] soft target: the loss is 0 and
the gradient too, a bug of the original kept as found), batch 32, ``DistributedSampler``.
Changed for the corpus: ``gloo`` on the CPU instead of ``nccl``; 16 epochs (2 ranks × 32 steps: 512
steps each); no snapshots; the guard around ``_run_batch`` as docs/guides/guard.md shows; ``_plant`` hooks.
``torchrun --standalone --nproc-per-node 2 ddp_torchrun.py [--epochs N]``.
"""

import argparse
import json
import os

import _plant
import torch
import torch.nn.functional as F
from torch.distributed import destroy_process_group, init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class MyTrainDataset(Dataset):
    def __init__(self, size):
        self.size = size
        g = torch.Generator().manual_seed(0)
        self.data = [(torch.rand(20, generator=g), torch.rand(1, generator=g)) for _ in range(size)]

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        return self.data[index]


def ddp_setup():
    init_process_group(backend="gloo")


def loss_fn(model, batch):
    source, targets = batch
    return F.cross_entropy(model(source), targets)


def build():
    """The replay entry: the bare model (a dump of the DDP run names ``module.``-prefixed weights)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(20, 1)
    return model, torch.optim.SGD(model.parameters(), lr=1e-3), loss_fn


class Trainer:
    def __init__(self, model, train_data, optimizer):
        self.gpu_id = int(os.environ["LOCAL_RANK"])
        self.model = model
        self.train_data = train_data
        self.optimizer = optimizer
        self.epochs_run = 0
        self.model = DDP(self.model)
        self.guard = None
        self.step = 0
        if _plant.RUN:
            from envkit.guard import Guard

            self.guard = Guard(
                self.model, optimizer, run=_plant.RUN, policy="skip", entry="ddp_torchrun:build"
            )

    def _run_batch(self, source, targets):
        source = _plant.batch(self.step, source)
        _plant.set_lr(self.step, self.optimizer)
        if self.guard is None:
            self.optimizer.zero_grad()
            output = self.model(source)
            loss = F.cross_entropy(output, targets)
            loss.backward()
            self.optimizer.step()
        else:
            with self.guard.step(self.step, (source, targets)) as g:
                output = self.model(source)
                loss = F.cross_entropy(output, targets)
                g.backward(loss)
                g.optimizer_step()
        _plant.restore_lr(self.optimizer)
        self.step += 1

    def _run_epoch(self, epoch):
        b_sz = len(next(iter(self.train_data))[0])
        print(f"[GPU{self.gpu_id}] Epoch {epoch} | Batchsize: {b_sz} | Steps: {len(self.train_data)}")
        self.train_data.sampler.set_epoch(epoch)
        for source, targets in self.train_data:
            self._run_batch(source, targets)

    def train(self, max_epochs: int):
        for epoch in range(self.epochs_run, max_epochs):
            self._run_epoch(epoch)
        if self.guard is not None:
            self.guard.close()


def load_train_objs():
    train_set = MyTrainDataset(2048)  # load your dataset
    model, optimizer, _ = build()
    return train_set, model, optimizer


def prepare_dataloader(dataset: Dataset, batch_size: int):
    return DataLoader(dataset, batch_size=batch_size, shuffle=False, sampler=DistributedSampler(dataset))


def main(total_epochs: int, batch_size: int):
    torch.set_num_threads(1)
    ddp_setup()
    dataset, model, optimizer = load_train_objs()
    train_data = prepare_dataloader(dataset, batch_size)
    trainer = Trainer(model, train_data, optimizer)
    trainer.train(total_epochs)
    destroy_process_group()
    if int(os.environ["RANK"]) == 0:
        print(json.dumps({"trained": trainer.step}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="simple distributed training job")
    parser.add_argument("--epochs", default=16, type=int, help="Total epochs to train the model")
    parser.add_argument("--batch_size", default=32, type=int, help="Input batch size on each device")
    args = parser.parse_args()
    main(args.epochs, args.batch_size)
