"""Is the input the cause (envkit.guard.inputs): a sample out of scale, or the batch against the last."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from envkit.guard.inputs import input_outlier

torch = pytest.importorskip("torch")


@pytest.fixture
def adapter(tmp_path: Path) -> Any:
    from envkit.guard.adapter import make_adapter

    model = torch.nn.Linear(4, 2)
    return make_adapter(model, torch.optim.SGD(model.parameters(), lr=0.1))


def normalized(seed: int, n: int = 16) -> Any:
    return torch.randn(n, 1, 8, 8, generator=torch.Generator().manual_seed(seed))


def test_one_raw_16_bit_image_in_a_normalized_batch_is_the_input(adapter: Any) -> None:
    x = normalized(0)
    x[5] = torch.randint(0, 200_000, (1, 8, 8), generator=torch.Generator().manual_seed(1)).float()
    found = input_outlier(adapter, (x, torch.zeros(16, dtype=torch.long)), None)
    assert found is not None and found["sample"] == 5 and found["tensor"] == "batch[0]"
    assert found["text"].startswith("the input: sample 5 of batch[0] reaches |x| = 1.97e+05")


def test_a_whole_raw_batch_against_the_normalized_one_before(adapter: Any) -> None:
    raw = normalized(2).abs() * 127.5 + 127.5  # every sample 0–255: no sample stands out in its batch
    found = input_outlier(adapter, {"image": raw}, {"image": normalized(3) / 3})
    assert found is not None and found["tensor"] == "batch['image']" and "× the batch before" in found["text"]


@pytest.mark.parametrize("seed", range(5))
def test_healthy_batches_are_not_the_input(adapter: Any, seed: int) -> None:
    x, before = normalized(seed), normalized(seed + 10)
    ids = torch.randint(0, 30_000, (16, 12))  # token ids: integers, never compared
    assert input_outlier(adapter, (x, ids), (before, ids)) is None


def test_sparse_features_whose_median_sample_is_zero_are_not_flagged(adapter: Any) -> None:
    x = torch.zeros(16, 10)
    x[2, 3] = 7.0  # one-hot-ish features: most samples all zero
    assert input_outlier(adapter, x, None) is None
