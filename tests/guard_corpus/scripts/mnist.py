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
"""pytorch/examples ``mnist/main.py`` (commit 77f55b912142e11fcfdf5b530231fb9c52f181e8), guarded.

Source: https://github.com/pytorch/examples/blob/77f55b912142e11fcfdf5b530231fb9c52f181e8/mnist/main.py
Kept: ``Net`` (two convs, dropout, fc1 9216→128, fc2, ``log_softmax``), ``train``/``test``, Adadelta at
lr 1.0, ``StepLR(step_size=1, gamma=0.7)`` stepped per epoch, 14 epochs, batch 64, the accelerator's
loader options (``num_workers=1``, ``persistent_workers``, ``shuffle``) used on the CPU too.
Changed for the corpus: MNIST is replaced by 2,304 generated 28×28 images (``_data.images``,
normalized with MNIST's mean and std): 36 steps an epoch, 504 in all; the loop is guarded as
docs/guides/guard.md shows; ``_plant`` hooks plant the faults; a global step counter.
"""

import argparse
import json

import _data
import _plant
import torch
import torch.nn.functional as F
import torch.optim as optim
from torch import nn
from torch.optim.lr_scheduler import StepLR


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def loss_fn(model, batch):
    data, target = batch
    return F.nll_loss(model(data), target)


def build():
    """The replay entry (``envkit guard replay DUMP --entry mnist:build``)."""
    model = Net()
    return model, optim.Adadelta(model.parameters(), lr=1.0), loss_fn


def train(args, model, device, train_loader, optimizer, epoch, guard, step):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        data = _plant.batch(step, data)
        _plant.set_lr(step, optimizer)
        if guard is None:
            optimizer.zero_grad()
            output = model(data)
            loss = F.nll_loss(output, target)
            loss.backward()
            optimizer.step()
        else:
            with guard.step(step, (data, target)) as g:
                output = model(data)
                loss = F.nll_loss(output, target)
                g.backward(loss)
                g.optimizer_step()
        _plant.restore_lr(optimizer)
        step += 1
        if batch_idx % args.log_interval == 0:
            print(
                f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(train_loader.dataset)}"
                f" ({100.0 * batch_idx / len(train_loader):.0f}%)]\tLoss: {loss.item():.6f}"
            )
    return step


def test(model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()  # sum up batch loss
            pred = output.argmax(dim=1, keepdim=True)  # get the index of the max log-probability
            correct += pred.eq(target.view_as(pred)).sum().item()
    test_loss /= len(test_loader.dataset)
    print(f"\nTest set: Average loss: {test_loss:.4f}, Accuracy: {correct}/{len(test_loader.dataset)}\n")


def dataset(n, seed):
    x, y = _data.images(n, (1, 28, 28), seed=seed)
    x = (torch.from_numpy(x) - 0.1307) / 0.3081  # transforms.Normalize((0.1307,), (0.3081,))
    return torch.utils.data.TensorDataset(x, torch.from_numpy(y))


def main():
    parser = argparse.ArgumentParser(description="PyTorch MNIST Example")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--test-batch-size", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=14)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--gamma", type=float, default=0.7)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-interval", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    device = torch.device("cpu")
    train_kwargs = {"batch_size": args.batch_size}
    test_kwargs = {"batch_size": args.test_batch_size}
    accel_kwargs = {"num_workers": 1, "persistent_workers": True, "shuffle": True}
    train_kwargs.update(accel_kwargs)
    train_loader = torch.utils.data.DataLoader(dataset(2304, 0), **train_kwargs)
    test_loader = torch.utils.data.DataLoader(dataset(500, 1), **test_kwargs)

    model, optimizer, _ = build()
    model = model.to(device)
    guard = None
    if _plant.RUN:
        from envkit.guard import Guard

        guard = Guard(model, optimizer, run=_plant.RUN, policy="skip", loss_fn=loss_fn, entry="mnist:build")
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    step = 0
    for epoch in range(1, args.epochs + 1):
        step = train(args, model, device, train_loader, optimizer, epoch, guard, step)
        test(model, device, test_loader)
        scheduler.step()
    if guard is not None:
        guard.close()
    print(json.dumps({"trained": step}))


if __name__ == "__main__":
    main()
