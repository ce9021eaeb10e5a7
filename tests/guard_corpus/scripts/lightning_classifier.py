# mypy: ignore-errors
# Copyright The Lightning AI team.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""Lightning ``examples/pytorch/basics/backbone_image_classifier.py`` (commit da7acbe), guarded.

Source: https://github.com/Lightning-AI/pytorch-lightning/blob/da7acbe20b9aa30d65843cec939221993ab07534/examples/pytorch/basics/backbone_image_classifier.py
Kept: ``Backbone`` (784→128→10, ReLU on both), ``LitClassifier`` (``training_step`` with
``F.cross_entropy`` and ``self.log``, ``validation_step``, Adam at lr 1e-4), ``MyDataModule``'s
loaders (batch 32), ``seed_everything(1234)``.
Changed for the corpus: 1,600 + 320 generated 28×28 images instead of MNIST (50 steps an epoch); a
``Trainer(max_epochs=10, precision="bf16-mixed")`` instead of ``LightningCLI``; ``configure_optimizers``
adds ``ReduceLROnPlateau`` on ``valid_loss`` (patience 1, factor 0.5: the corpus's plateau class);
the guard as docs/guides/guard.md shows (``envkit.guard.lightning.GuardCallback``); ``_plant`` hooks (a
counting ``collate_fn``, the lr set in ``on_train_batch_start``).
"""

import argparse
import json

import _data
import _plant
import lightning.pytorch as pl
import torch
from lightning.pytorch import LightningDataModule, LightningModule
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset, default_collate


class Backbone(torch.nn.Module):
    def __init__(self, hidden_dim=128):
        super().__init__()
        self.l1 = torch.nn.Linear(28 * 28, hidden_dim)
        self.l2 = torch.nn.Linear(hidden_dim, 10)

    def forward(self, x):
        x = x.view(x.size(0), -1)
        x = torch.relu(self.l1(x))
        return torch.relu(self.l2(x))


class LitClassifier(LightningModule):
    def __init__(self, backbone=None, learning_rate: float = 0.0001):
        super().__init__()
        self.save_hyperparameters(ignore=["backbone"])
        if backbone is None:
            backbone = Backbone()
        self.backbone = backbone

    def forward(self, x):
        return self.backbone(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        y_hat = self(x)
        loss = F.cross_entropy(y_hat, y)
        self.log("train_loss", loss, on_epoch=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        y_hat = self(x)
        loss = F.cross_entropy(y_hat, y)
        self.log("valid_loss", loss, on_step=True)

    def on_train_batch_start(self, batch, batch_idx):
        _plant.set_lr(self.global_step, self.optimizers().optimizer)

    def on_train_batch_end(self, outputs, batch, batch_idx):
        _plant.restore_lr(self.optimizers().optimizer)

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.parameters(), lr=self.hparams.learning_rate)
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=1)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "monitor": "valid_loss"}}


class Counting:
    """The train loader's ``collate_fn``: the n-th batch it makes is the n-th step (no workers)."""

    def __init__(self):
        self.n = 0

    def __call__(self, samples):
        x, y = default_collate(samples)
        x = _plant.batch(self.n, x)
        self.n += 1
        return x, y


class MyDataModule(LightningDataModule):
    def __init__(self, batch_size: int = 32):
        super().__init__()
        self.mnist_train = TensorDataset(*map(torch.from_numpy, _data.images(1600, (1, 28, 28), seed=0)))
        self.mnist_val = TensorDataset(*map(torch.from_numpy, _data.images(320, (1, 28, 28), seed=1)))
        self.batch_size = batch_size
        self.collate = Counting()

    def train_dataloader(self):
        return DataLoader(self.mnist_train, batch_size=self.batch_size, collate_fn=self.collate)

    def val_dataloader(self):
        return DataLoader(self.mnist_val, batch_size=self.batch_size)


def loss_fn(model, batch):
    x, y = batch
    return F.cross_entropy(model(x), y)


def build():
    """The replay entry: the LightningModule, its Adam and the training loss."""
    model = LitClassifier()
    return model, torch.optim.Adam(model.parameters(), lr=1e-4), loss_fn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-epochs", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(1)
    pl.seed_everything(1234)
    callbacks = []
    if _plant.RUN:
        from envkit.guard.lightning import GuardCallback

        callbacks.append(GuardCallback(_plant.RUN, entry="lightning_classifier:build"))
    trainer = pl.Trainer(
        max_epochs=args.max_epochs,
        precision="bf16-mixed",
        callbacks=callbacks,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
        devices=1,
    )
    trainer.fit(LitClassifier(), datamodule=MyDataModule())
    print(json.dumps({"trained": trainer.global_step}))


if __name__ == "__main__":
    main()
