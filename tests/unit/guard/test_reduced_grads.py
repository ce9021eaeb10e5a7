"""The all-reduce a DDP replay applies to the ranks' gradients (``Adapter.set_reduced_grads``).

DDP's reducer multiplies each rank's gradient by 1/W as it copies it into the bucket and the
collective sums the buckets; Paddle's DataParallel scales its fused bucket by 1/nranks. The replay
of a rank's dump does the same with every rank's gradients, in rank order: here on real tensors of
both frameworks, against that arithmetic written out, with a parameter that one rank did not use
(no gradient: zeros, as DDP's unused parameters) and one that no rank did (no gradient at all).
"""

from __future__ import annotations

from typing import Any

import pytest

from envkit.guard.adapter import make_adapter


def _torch() -> tuple[Any, Any]:
    torch = pytest.importorskip("torch")
    model = torch.nn.ModuleDict(
        {"a": torch.nn.Linear(3, 2), "b": torch.nn.Linear(2, 1), "c": torch.nn.Linear(1, 1)}
    )
    return torch, model


def test_torch_gradients_are_reduced_as_ddp_reduces_them() -> None:
    torch, model = _torch()
    adapter = make_adapter(model, torch.optim.SGD(model.parameters(), lr=0.1))
    gen = torch.Generator().manual_seed(0)
    ranks = []
    for used_b in (True, False):
        adapter.clear_grads()
        x = torch.randn(4, 3, generator=gen)
        out = model["a"](x)
        loss = (model["b"](out).sum() if used_b else out.sum()) * 1e3
        loss.backward()
        ranks.append(adapter.grads_now())
    adapter.set_reduced_grads(ranks)
    params = dict(model.named_parameters())
    a0, a1 = ranks[0][0], ranks[1][0]
    assert torch.equal(params["a.weight"].grad, torch.mul(a0, 0.5) + torch.mul(a1, 0.5))
    b0 = ranks[0][2]
    assert ranks[1][2] is None
    assert torch.equal(params["b.weight"].grad, torch.mul(b0, 0.5) + torch.zeros_like(b0))
    assert params["c.weight"].grad is None  # no rank used it
    # a copy: the ranks' gradients are not the parameters' own tensors
    assert all(
        g is None or g.data_ptr() != p.grad.data_ptr() for g, p in zip(ranks[0], params.values(), strict=True)
    )


def test_paddle_gradients_are_reduced_as_data_parallel_reduces_them() -> None:
    paddle = pytest.importorskip("paddle")
    paddle.seed(0)
    a, b = paddle.nn.Linear(3, 2), paddle.nn.Linear(2, 1)
    model = paddle.nn.LayerList([a, b])
    adapter = make_adapter(model, paddle.optimizer.SGD(parameters=model.parameters()))
    ranks = []
    for used_b in (True, False):
        adapter.clear_grads()
        out = a(paddle.randn([4, 3]))
        (b(out).sum() if used_b else out.sum()).backward()
        ranks.append(adapter.grads_now())
    adapter.set_reduced_grads(ranks)
    expect = paddle.scale(ranks[0][0], 0.5) + paddle.scale(ranks[1][0], 0.5)
    assert (a.weight.grad.numpy() == expect.numpy()).all()
    assert (b.weight.grad.numpy() == paddle.scale(ranks[0][2], 0.5).numpy()).all()
