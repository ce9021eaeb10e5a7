# mypy: ignore-errors
# Copyright (c) 2016 PaddlePaddle Authors. All Rights Reserved.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file except in
# compliance with the License. You may obtain a copy of the License at
# http://www.apache.org/licenses/LICENSE-2.0. Unless required by applicable law or agreed to in
# writing, software distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
"""PaddlePaddle/docs ``docs/practices/quick_start/high_level_api.ipynb`` (commit 46ceb37), guarded.

Source: https://github.com/PaddlePaddle/docs/blob/46ceb37d54c1e4e994933424702031a073ec9100/docs/practices/quick_start/high_level_api.ipynb
Kept: the ``Sequential`` network (``Flatten``, ``Linear(784, 512)``, ``ReLU``, ``Dropout(0.2)``,
``Linear(512, 10)``), ``paddle.Model(mnist)``, ``model.prepare(Adam, CrossEntropyLoss, Accuracy)``,
``model.fit(..., epochs=5, batch_size=64, verbose=1)``.
Changed for the corpus: MNIST is replaced by 6,400 generated 28×28 images (100 steps an epoch, 500 in
all) given to ``fit`` as a ``paddle.io.DataLoader`` (shuffled, batch 64) whose ``collate_fn`` counts
the batches for the ``_plant`` hooks; the guard as docs/guides/guard.md shows
(``envkit.guard.hapi.GuardCallback``).
"""

import argparse
import json

import _data
import _plant
import numpy as np
import paddle
from paddle.io.dataloader.collate import default_collate_fn


class Counting:
    def __init__(self):
        self.n = 0

    def __call__(self, samples):
        x, y = default_collate_fn(samples)
        x = _plant.batch(self.n, paddle.to_tensor(x))
        self.n += 1
        return x, paddle.to_tensor(y)


def network():
    return paddle.nn.Sequential(
        paddle.nn.Flatten(1, -1),
        paddle.nn.Linear(784, 512),
        paddle.nn.ReLU(),
        paddle.nn.Dropout(0.2),
        paddle.nn.Linear(512, 10),
    )


def loss_fn(net, batch):
    """The loss as hapi computes it: its batch is ``([inputs], [labels])``."""
    inputs, labels = batch
    return paddle.nn.CrossEntropyLoss()(net(*inputs), *labels)


def build():
    paddle.seed(2024)
    net = network()
    return net, paddle.optimizer.Adam(parameters=net.parameters()), loss_fn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()
    paddle.device.set_device("cpu")
    paddle.seed(2024)
    np.random.seed(2024)
    x, y = _data.images(6400, (1, 28, 28), seed=0)
    train_dataset = paddle.io.TensorDataset([paddle.to_tensor(x), paddle.to_tensor(y.reshape(-1, 1))])
    loader = paddle.io.DataLoader(train_dataset, batch_size=64, shuffle=True, collate_fn=Counting())
    mnist = network()
    model = paddle.Model(mnist)
    model.prepare(
        paddle.optimizer.Adam(parameters=model.parameters()),
        paddle.nn.CrossEntropyLoss(),
        paddle.metric.Accuracy(),
    )
    callbacks = []
    if _plant.RUN:
        from envkit.guard.hapi import GuardCallback

        callbacks.append(GuardCallback(_plant.RUN, entry="paddle_hapi:build"))
    model.fit(loader, epochs=args.epochs, verbose=0, callbacks=callbacks)
    print(json.dumps({"trained": loader.collate_fn.n}))


if __name__ == "__main__":
    main()
