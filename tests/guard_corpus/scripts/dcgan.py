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
"""pytorch/examples ``dcgan/main.py`` (commit 77f55b9), both networks guarded.

Source: https://github.com/pytorch/examples/blob/77f55b912142e11fcfdf5b530231fb9c52f181e8/dcgan/main.py
Kept: ``Generator`` and ``Discriminator`` as written (64×64, ``ConvTranspose2d``/``Conv2d`` stacks with
BatchNorm, ``Tanh``/``Sigmoid``), ``weights_init``, ``BCELoss``, the two Adam optimizers (lr 2e-4,
beta1 0.5), the iteration: D on real then on ``fake.detach()`` (two backwards, one step), then G
through D; ``nz`` 100, ``batchSize`` 64, ``niter`` 25, ``manualSeed``.
Changed for the corpus: ``ngf``/``ndf`` 8 (not 64); a generated dataset of 1,280 64×64 RGB images in
[-1, 1] (20 steps an epoch, 500 in all) instead of LSUN/CIFAR; no images or checkpoints saved; two
guards, one per network and optimizer, as docs/guides/guard.md shows (D's run is ``RUN``, G's
``RUN/generator``; D's step holds both of its backwards, and G's fakes are made just before it so that
the step's batch, real and fake images, replays it); ``_plant`` hooks (the real images, D's lr).
"""

import argparse
import json
import random

import _data
import _plant
import torch
import torch.nn as nn
import torch.optim as optim

nz, ngf, ndf, nc = 100, 8, 8, 3


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        torch.nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        torch.nn.init.normal_(m.weight, 1.0, 0.02)
        torch.nn.init.zeros_(m.bias)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 8),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 4),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 8),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, input):
        return self.main(input).view(-1, 1).squeeze(1)


criterion = nn.BCELoss()


def loss_fn(netD, batch):
    """D's step loss: real images labelled 1 plus G's (detached) fakes labelled 0, both in the batch."""
    real, fake = batch
    ones = torch.full((real.size(0),), 1.0, dtype=real.dtype)
    zeros = torch.full((fake.size(0),), 0.0, dtype=fake.dtype)
    return criterion(netD(real), ones) + criterion(netD(fake), zeros)


def build():
    """The replay entry for D's dumps."""
    torch.manual_seed(999)
    netD = Discriminator()
    netD.apply(weights_init)
    return netD, optim.Adam(netD.parameters(), lr=0.0002, betas=(0.5, 0.999)), loss_fn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--niter", type=int, default=25)
    parser.add_argument("--batchSize", type=int, default=64)
    opt = parser.parse_args()
    torch.set_num_threads(1)
    random.seed(999)
    torch.manual_seed(999)
    x, _ = _data.images(1280, (nc, 64, 64), seed=0)
    dataset = torch.utils.data.TensorDataset(torch.from_numpy(x) * 2 - 1)
    dataloader = torch.utils.data.DataLoader(dataset, batch_size=opt.batchSize, shuffle=True)
    netD, optimizerD, _ = build()
    netG = Generator()
    netG.apply(weights_init)
    optimizerG = optim.Adam(netG.parameters(), lr=0.0002, betas=(0.5, 0.999))
    guardD = guardG = None
    if _plant.RUN:
        from envkit.guard import Guard

        guardD = Guard(netD, optimizerD, run=_plant.RUN, policy="skip", loss_fn=loss_fn, entry="dcgan:build")
        guardG = Guard(netG, optimizerG, run=f"{_plant.RUN}/generator", policy="skip")
    real_label, fake_label = 1, 0
    step = 0
    for epoch in range(opt.niter):
        for i, data in enumerate(dataloader, 0):
            # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
            netD.zero_grad()
            real_cpu = _plant.batch(step, data[0])
            batch_size = real_cpu.size(0)
            label = torch.full((batch_size,), real_label, dtype=real_cpu.dtype)
            noise = torch.randn(batch_size, nz, 1, 1)
            _plant.set_lr(step, optimizerD)
            if guardD is None:
                output = netD(real_cpu)
                errD_real = criterion(output, label)
                errD_real.backward()
                fake = netG(noise)
                label.fill_(fake_label)
                output = netD(fake.detach())
                errD_fake = criterion(output, label)
                errD_fake.backward()
                optimizerD.step()
            else:
                fake = netG(noise)  # before D's step (G's forward does not depend on D): the step's batch
                with guardD.step(step, (real_cpu, fake.detach())) as g:
                    output = netD(real_cpu)
                    errD_real = criterion(output, label)
                    g.backward(errD_real)
                    label.fill_(fake_label)
                    output = netD(fake.detach())
                    errD_fake = criterion(output, label)
                    g.backward(errD_fake)
                    g.optimizer_step()
            _plant.restore_lr(optimizerD)
            errD = errD_real + errD_fake
            # (2) Update G network: maximize log(D(G(z)))
            netG.zero_grad()
            label.fill_(real_label)
            if guardG is None:
                output = netD(fake)
                errG = criterion(output, label)
                errG.backward()
                optimizerG.step()
            else:
                with guardG.step(step, (noise, label)) as g:
                    output = netD(fake)
                    errG = criterion(output, label)
                    g.backward(errG)
                    g.optimizer_step()
            step += 1
            if i % 10 == 0:
                print(
                    f"[{epoch}/{opt.niter}][{i}/{len(dataloader)}] Loss_D: {errD.item():.4f} Loss_G: {errG.item():.4f}"
                )
    for guard in (guardD, guardG):
        if guard is not None:
            guard.close()
    print(json.dumps({"trained": step}))


if __name__ == "__main__":
    main()
