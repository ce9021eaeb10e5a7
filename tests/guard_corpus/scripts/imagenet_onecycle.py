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
"""pytorch/examples ``imagenet/main.py`` (commit 77f55b9), with ``OneCycleLR`` stepped per batch, guarded.

Source: https://github.com/pytorch/examples/blob/77f55b912142e11fcfdf5b530231fb9c52f181e8/imagenet/main.py
Kept: ``train()`` as written (``AverageMeter``s, ``accuracy`` top-1/top-5, ``criterion =
nn.CrossEntropyLoss()``, ``optimizer.zero_grad(); loss.backward(); optimizer.step()``), SGD with
momentum 0.9 and weight decay 1e-4 at lr 0.1, ``--workers`` DataLoader workers with ``shuffle``, the
``validate()`` pass per epoch.
Changed for the corpus: the ``StepLR(step_size=30)`` stepped per epoch is replaced by
``OneCycleLR(optimizer, max_lr=0.1, epochs, steps_per_epoch=len(train_loader))`` stepped after every
batch, as torch's own ``OneCycleLR`` docstring shows (pytorch/pytorch
``torch/optim/lr_scheduler.py``, BSD-3-Clause): the corpus's OneCycle class; torchvision's ResNet-18 by a
ResNet of two ``BasicBlock``s written here after torchvision's (BatchNorm, residual, stride 2), on 1,600
generated 3×16×16 images of 10 classes instead of ImageNet; batch 32, 1 worker, 10 epochs (50 steps
each, 500 in all); the guard as docs/guides/guard.md shows (``scheduler=``); ``_plant`` hooks.
"""

import argparse
import json

import _data
import _plant
import torch
import torch.nn as nn
from torch.optim.lr_scheduler import OneCycleLR


class BasicBlock(nn.Module):
    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(
                nn.Conv2d(inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes)
            )

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = BasicBlock(16, 16)
        self.layer2 = BasicBlock(16, 32, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(32, num_classes)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class AverageMeter:
    def __init__(self, name):
        self.name, self.sum, self.count, self.avg = name, 0.0, 0, 0.0

    def update(self, val, n=1):
        self.sum += float(val) * n
        self.count += n
        self.avg = self.sum / self.count


def accuracy(output, target, topk=(1,)):
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        return [correct[:k].reshape(-1).float().sum(0, keepdim=True).mul_(100.0 / batch_size) for k in topk]


criterion = nn.CrossEntropyLoss()


def loss_fn(model, batch):
    images, target = batch
    return criterion(model(images), target)


def build():
    torch.manual_seed(0)
    model = ResNet()
    return model, torch.optim.SGD(model.parameters(), 0.1, momentum=0.9, weight_decay=1e-4), loss_fn


def train(train_loader, model, optimizer, scheduler, epoch, guard, step):
    losses, top1 = AverageMeter("Loss"), AverageMeter("Acc@1")
    model.train()
    for i, (images, target) in enumerate(train_loader):
        images = _plant.batch(step, images)
        _plant.set_lr(step, optimizer)
        if guard is None:
            output = model(images)
            loss = criterion(output, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
        else:
            with guard.step(step, (images, target)) as g:
                output = model(images)
                loss = criterion(output, target)
                g.backward(loss)
                g.optimizer_step()  # steps the OneCycleLR with each applied update
        _plant.restore_lr(optimizer)
        acc1, _acc5 = accuracy(output, target, topk=(1, 5))
        losses.update(loss.item(), images.size(0))
        top1.update(acc1[0], images.size(0))
        step += 1
        if i % 25 == 0:
            print(f"Epoch: [{epoch}][{i}/{len(train_loader)}] Loss {losses.avg:.4e} Acc@1 {top1.avg:6.2f}")
    return step


def validate(val_loader, model):
    top1 = AverageMeter("Acc@1")
    model.eval()
    with torch.no_grad():
        for images, target in val_loader:
            top1.update(accuracy(model(images), target)[0][0], images.size(0))
    print(f" * Acc@1 {top1.avg:.3f}")


def main():
    parser = argparse.ArgumentParser(description="PyTorch ImageNet Training")
    parser.add_argument("--epochs", default=10, type=int)
    parser.add_argument("-j", "--workers", default=1, type=int)
    parser.add_argument("-b", "--batch-size", default=32, type=int)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model, optimizer, _ = build()
    x, y = _data.images(1600, (3, 16, 16), seed=0)
    xv, yv = _data.images(320, (3, 16, 16), seed=1)
    norm = lambda t: (torch.from_numpy(t) - 0.45) / 0.25  # noqa: E731 - transforms.Normalize
    train_dataset = torch.utils.data.TensorDataset(norm(x), torch.from_numpy(y))
    val_dataset = torch.utils.data.TensorDataset(norm(xv), torch.from_numpy(yv))
    train_loader = torch.utils.data.DataLoader(
        train_dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.workers
    )
    val_loader = torch.utils.data.DataLoader(val_dataset, batch_size=args.batch_size, shuffle=False)
    scheduler = OneCycleLR(optimizer, max_lr=0.1, epochs=args.epochs, steps_per_epoch=len(train_loader))
    guard = None
    if _plant.RUN:
        from envkit.guard import Guard

        guard = Guard(
            model,
            optimizer,
            run=_plant.RUN,
            policy="skip",
            scheduler=scheduler,
            loss_fn=loss_fn,
            entry="imagenet_onecycle:build",
        )
    step = 0
    for epoch in range(args.epochs):
        step = train(train_loader, model, optimizer, scheduler, epoch, guard, step)
        validate(val_loader, model)
    if guard is not None:
        guard.close()
    print(json.dumps({"trained": step}))


if __name__ == "__main__":
    main()
