# mypy: ignore-errors
# ruff: noqa: E501  (vendored: the original's lines and idioms)
# Copyright (c) 2016 PaddlePaddle Authors. All Rights Reserved.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file except in
# compliance with the License. You may obtain a copy of the License at
# http://www.apache.org/licenses/LICENSE-2.0. Unless required by applicable law or agreed to in
# writing, software distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
"""PaddlePaddle/docs ``docs/guides/performance_improving/amp_cn.md`` §2.1.2 "动态图 AMP-O1 训练" (commit 46ceb37), guarded.

Source: https://github.com/PaddlePaddle/docs/blob/46ceb37d54c1e4e994933424702031a073ec9100/docs/guides/performance_improving/amp_cn.md
Kept: ``SimpleNet`` (nine ``Linear`` layers), ``RandomDataset`` (numpy random data and labels, per
item), ``MSELoss``, SGD at lr 1e-4, ``paddle.amp.GradScaler(init_loss_scaling=1024)``, the O1 loop:
``auto_cast(custom_white_list={'elementwise_add'}, level='O1')``, ``scaler.scale(loss).backward()``,
``scaler.step``, ``scaler.update``, ``clear_grad(set_to_zero=False)``; 2 epochs, ``shuffle=False``.
Changed for the corpus: ``input_size``/``output_size`` 64 and ``batch_size`` 32 (not 8192/2048);
``nums_batch`` 250 (500 steps); the CPU (where Paddle's ``auto_cast`` and ``GradScaler`` are off:
"amp_guard can only be enabled on CUDAPlace", the scaler disabled: the run is fp32 with the
scaler's calls in place, as the same script runs on a CPU machine); ``numpy.random.seed(0)``; the guard
as docs/guides/guard.md shows (``scaler=``); ``_plant`` hooks.
"""

import argparse
import json
import warnings

import _plant
import numpy
import paddle

epochs, input_size, output_size, batch_size = 2, 64, 64, 32


class SimpleNet(paddle.nn.Layer):
    def __init__(self, input_size, output_size):
        super().__init__()
        self.linears = paddle.nn.LayerList([paddle.nn.Linear(input_size, output_size) for i in range(9)])

    def forward(self, x):
        for i, _ in enumerate(self.linears):
            x = self.linears[i](x)
        return x


class RandomDataset(paddle.io.Dataset):
    def __init__(self, num_samples):
        self.num_samples = num_samples

    def __getitem__(self, idx):
        data = numpy.random.random([input_size]).astype("float32")
        label = numpy.random.random([output_size]).astype("float32")
        return data, label

    def __len__(self):
        return self.num_samples


mse = paddle.nn.MSELoss()


def loss_fn(model, batch):
    data, label = batch
    with paddle.amp.auto_cast(custom_white_list={"elementwise_add"}, level="O1"):
        return mse(model(data), label)


def build():
    paddle.seed(0)
    model = SimpleNet(input_size, output_size)
    return model, paddle.optimizer.SGD(learning_rate=0.0001, parameters=model.parameters()), loss_fn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nums-batch", type=int, default=250)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message="amp_guard can only be enabled")
    paddle.device.set_device("cpu")
    numpy.random.seed(0)
    dataset = RandomDataset(args.nums_batch * batch_size)
    loader = paddle.io.DataLoader(
        dataset, batch_size=batch_size, shuffle=False, drop_last=True, num_workers=0
    )
    model, optimizer, _ = build()
    scaler = paddle.amp.GradScaler(init_loss_scaling=1024)
    guard = None
    if _plant.RUN:
        from envkit.guard import Guard

        guard = Guard(
            model,
            optimizer,
            run=_plant.RUN,
            policy="skip",
            scaler=scaler,
            loss_fn=loss_fn,
            entry="paddle_amp:build",
        )
    step = 0
    for epoch in range(epochs):
        for _i, (data, label) in enumerate(loader):
            data = _plant.batch(step, data)
            _plant.set_lr(step, optimizer)
            if guard is None:
                with paddle.amp.auto_cast(custom_white_list={"elementwise_add"}, level="O1"):
                    output = model(data)
                    loss = mse(output, label)
                scaled = scaler.scale(loss)
                scaled.backward()
                scaler.step(optimizer)
                scaler.update()
                optimizer.clear_grad(set_to_zero=False)
            else:
                with guard.step(step, (data, label)) as g:
                    with paddle.amp.auto_cast(custom_white_list={"elementwise_add"}, level="O1"):
                        output = model(data)
                        loss = mse(output, label)
                    g.backward(loss)
                    g.optimizer_step()
            _plant.restore_lr(optimizer)
            step += 1
        print(f"epoch {epoch} loss: {float(loss):.6f}")
    if guard is not None:
        guard.close()
    print(json.dumps({"trained": step}))


if __name__ == "__main__":
    main()
