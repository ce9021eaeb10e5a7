# mypy: ignore-errors
# ruff: noqa: RUF005  (vendored: the original's lines and idioms)
# Copyright (c) 2016 PaddlePaddle Authors. All Rights Reserved.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file except in
# compliance with the License. You may obtain a copy of the License at
# http://www.apache.org/licenses/LICENSE-2.0. Unless required by applicable law or agreed to in
# writing, software distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
"""PaddlePaddle/docs ``docs/practices/cv/image_classification_ViT.ipynb`` (commit 46ceb37), guarded.

Source: https://github.com/PaddlePaddle/docs/blob/46ceb37d54c1e4e994933424702031a073ec9100/docs/practices/cv/image_classification_ViT.ipynb
Kept: ``Patches`` (``F.unfold``), ``MultiHeadSelfAttention`` (einsum), ``TransformerEncoder``, ``ViT``
with a class token and a random position embedding, the hand-written
``LabelSmoothingCrossEntropyLoss`` (smoothing 0.1), ``get_scheduler``: ``LinearWarmup`` over
``CosineAnnealingDecay``, **stepped once per epoch** (``scheduler.step()`` after ``train_epoch``),
``WARMUP_EPOCHS`` 5, Adam with weight decay 5e-5, ``paddle.seed(1024)``, ``np.random.seed(1234)``.
Changed for the corpus: CIFAR-100 is replaced by 800 generated 3×16×16 images of 10 classes; a tiny
ViT (16×16 images in 4×4 patches, hidden 32, 2 layers, 4 heads); ``EPOCHS`` 20 and batch 32 (25
steps an epoch, 500 in all); the guard as docs/guides/guard.md shows (the per-epoch scheduler stays the
script's own); ``_plant`` hooks, and the script's own fault ``loss-nan``: at that step the batch's
labels come one-hot (a collate bug), and the script's loss, given a target distribution, computes
the label-smoothing loss in its KL form, ``Σ t·(log t − log p)``: 0·log 0 = NaN from finite outputs.
The one loss function (``smoothing_loss``) is the step's, the guard's ``loss_fn`` and the replay
entry's, as a user's would be: the NaN comes from the batch, through the script's own code.
"""

import argparse
import json

import _data
import _plant
import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
import paddle.optimizer.lr as lrScheduler


class Patches(paddle.nn.Layer):
    def __init__(self, patch_size):
        super().__init__()
        self.patch_size = patch_size

    def forward(self, images):
        patches = F.unfold(images, self.patch_size, self.patch_size)
        return patches.transpose([0, 2, 1])


class MultiHeadSelfAttention(nn.Layer):
    def __init__(self, feats, head=8, dropout=0.0, attn_dropout=0.0):
        super().__init__()
        self.head = head
        self.feats = feats
        self.sqrt_d = self.feats**0.5
        self.qkv = nn.Linear(feats, feats * 3)
        self.out = nn.Linear(feats, feats)
        self.dropout = nn.Dropout(dropout)
        self.attn_dropout = nn.Dropout(attn_dropout)

    def transpose_multi_head(self, x):
        new_shape = x.shape[:-1] + [self.head, self.feats // self.head]
        x = x.reshape(new_shape)
        return x.transpose([0, 2, 1, 3])

    def forward(self, x):
        qkv = self.qkv(x).chunk(3, -1)
        q, k, v = map(self.transpose_multi_head, qkv)
        attn = F.softmax(paddle.einsum("bhif, bhjf->bhij", q, k) / self.sqrt_d, axis=-1)
        attn = self.attn_dropout(attn)
        attn = paddle.einsum("bhij, bhjf->bihf", attn, v)
        return self.dropout(self.out(attn.flatten(2)))


class Mlp(nn.Layer):
    def __init__(self, feats, mlp_hidden, dropout=0.0):
        super().__init__()
        self.fc1 = nn.Linear(feats, mlp_hidden)
        self.fc2 = nn.Linear(mlp_hidden, feats)
        self.act = nn.GELU()
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.fc2(self.dropout(self.act(self.fc1(x)))))


class TransformerEncoder(nn.Layer):
    def __init__(self, feats, mlp_hidden, head=8, dropout=0.0, attn_dropout=0.0):
        super().__init__()
        self.layer1 = nn.LayerNorm(feats)
        self.msa = MultiHeadSelfAttention(feats, head=head, dropout=dropout, attn_dropout=attn_dropout)
        self.layer2 = nn.LayerNorm(feats)
        self.mlp = Mlp(feats, mlp_hidden)

    def forward(self, x):
        out = self.msa(self.layer1(x)) + x
        return self.mlp(self.layer2(out)) + out


class ViT(nn.Layer):
    def __init__(
        self, in_c=3, num_classes=10, img_size=16, patch=4, num_layers=2, hidden=32, mlp_hidden=32 * 4, head=4
    ):
        super().__init__()
        self.patch = patch
        self.patch_size = img_size // self.patch
        self.patches = Patches(self.patch_size)
        f = (img_size // self.patch) ** 2 * 3
        num_tokens = (self.patch**2) + 1
        self.emb = nn.Linear(f, hidden)
        self.cls_token = paddle.create_parameter(
            shape=[1, 1, hidden],
            dtype="float32",
            default_initializer=nn.initializer.Assign(paddle.randn([1, 1, hidden])),
        )
        self.pos_embedding = paddle.create_parameter(
            shape=[1, num_tokens, hidden],
            dtype="float32",
            default_initializer=nn.initializer.Assign(paddle.randn([1, num_tokens, hidden])),
        )
        self.encoder = nn.Sequential(
            *[TransformerEncoder(hidden, mlp_hidden=mlp_hidden, head=head) for _ in range(num_layers)]
        )
        self.fc = nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, num_classes))

    def forward(self, x):
        out = self.emb(self.patches(x))
        out = paddle.concat([self.cls_token.tile([out.shape[0], 1, 1]), out], axis=1)
        out = out + self.pos_embedding
        out = self.encoder(out)
        return self.fc(out[:, 0])


class LabelSmoothingCrossEntropyLoss(nn.Layer):
    def __init__(self, classes, smoothing=0.0, dim=-1):
        super().__init__()
        self.confidence = 1.0 - smoothing
        self.smoothing = smoothing
        self.cls = classes
        self.dim = dim

    def forward(self, pred, target):
        pred = F.log_softmax(pred, axis=self.dim)
        with paddle.no_grad():
            true_dist = paddle.ones_like(pred)
            true_dist.fill_(self.smoothing / (self.cls - 1))
            true_dist.put_along_axis_(target.unsqueeze(1), self.confidence, 1)
        return paddle.mean(paddle.sum(-true_dist * pred, axis=self.dim))


def kl_smoothing_loss(pred, t):
    """The label-smoothing loss in its KL form for a target distribution ``t``: Σ t·(log t − log p)."""
    return paddle.mean(paddle.sum(t * (paddle.log(t) - F.log_softmax(pred, axis=-1)), axis=-1))


def get_scheduler(epochs, warmup_epochs, learning_rate):
    base_scheduler = lrScheduler.CosineAnnealingDecay(learning_rate=learning_rate, T_max=epochs, eta_min=1e-5)
    return lrScheduler.LinearWarmup(base_scheduler, warmup_epochs, 1e-5, learning_rate, last_epoch=-1)


NUM_CLASSES, BATCH_SIZE, WARMUP_EPOCHS, LR = 10, 32, 5, 1e-3
criterion = LabelSmoothingCrossEntropyLoss(NUM_CLASSES, smoothing=0.1)


def smoothing_loss(pred, target):
    """The script's loss: label smoothing on class indices; a target distribution (one-hot) in KL form."""
    if target.ndim == 2:
        return kl_smoothing_loss(pred, target.astype(pred.dtype))
    return criterion(pred, target)


def loss_fn(model, batch):
    x, y = batch
    return smoothing_loss(model(x), y)


def build():
    paddle.seed(1024)
    model = ViT()
    return (
        model,
        paddle.optimizer.Adam(learning_rate=LR, parameters=model.parameters(), weight_decay=5e-5),
        loss_fn,
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=20)
    args = parser.parse_args()
    paddle.device.set_device("cpu")
    paddle.seed(1024)
    np.random.seed(1234)
    model = ViT()
    scheduler = get_scheduler(epochs=args.epochs, warmup_epochs=WARMUP_EPOCHS, learning_rate=LR)
    optim = paddle.optimizer.Adam(learning_rate=scheduler, parameters=model.parameters(), weight_decay=5e-5)
    x_all, y_all = _data.images(800, (3, 16, 16), NUM_CLASSES, seed=0)
    dataset = paddle.io.TensorDataset([paddle.to_tensor(x_all), paddle.to_tensor(y_all)])
    train_loader = paddle.io.DataLoader(
        dataset, batch_size=BATCH_SIZE, shuffle=True, num_workers=0, drop_last=False
    )
    guard = None
    if _plant.RUN:
        from envkit.guard import Guard

        guard = Guard(model, optim, run=_plant.RUN, policy="skip", loss_fn=loss_fn, entry="paddle_vit:build")
    step = 0
    for epoch in range(args.epochs):
        for x_data, y_data in train_loader:
            x_data = _plant.batch(step, x_data)
            if _plant.active("loss-nan", step):
                y_data = F.one_hot(y_data, NUM_CLASSES)  # the planted collate bug: one-hot labels
            _plant.set_lr(step, optim)
            if guard is None:
                loss = smoothing_loss(model(x_data), y_data)
                loss.backward()
                optim.step()
                optim.clear_grad()
            else:
                with guard.step(step, (x_data, y_data)) as g:
                    predicts = model(x_data)
                    loss = smoothing_loss(predicts, y_data)
                    g.backward(loss)
                    g.optimizer_step()
            _plant.restore_lr(optim)
            step += 1
        scheduler.step()
        print(f"epoch {epoch}: loss {float(loss):.4f} lr {optim.get_lr():.6f}")
    if guard is not None:
        guard.close()
    print(json.dumps({"trained": step}))


if __name__ == "__main__":
    main()
