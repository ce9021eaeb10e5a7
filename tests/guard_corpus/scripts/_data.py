# mypy: ignore-errors
"""Data generated here for the corpus scripts (nothing downloaded): learnable, seeded, numpy only.

``images(n, shape, classes, seed)``: each class a fixed random pattern (the same for every seed),
each sample its class's pattern
plus noise, in [0, 1] (what ``ToTensor`` gives), float32 ``[n, *shape]`` and int64 labels.
``tokens(n, vocab, seed)``: a sparse Markov chain over ``1..vocab-1`` (each token has 6 likely
successors, 10 % jumps): text with structure a language model can learn. ``regression(n, dim, seed)``:
``y = x·w + noise``.
"""

from __future__ import annotations

import numpy as np


def images(n, shape, classes=10, seed=0):
    protos = np.random.default_rng(12345).random((classes, *shape)).astype(np.float32)  # train and test
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, n)
    x = 0.3 * protos[labels] + 0.7 * rng.random((n, *shape)).astype(np.float32)
    return x.astype(np.float32), labels.astype(np.int64)


def tokens(n, vocab, seed=0):
    rng = np.random.default_rng(seed)
    successors = rng.integers(1, vocab, (vocab, 6))
    choice = rng.integers(0, 6, n)
    jump = rng.random(n) < 0.1
    anywhere = rng.integers(1, vocab, n)
    out = np.empty(n, dtype=np.int64)
    tok = 1
    for i in range(n):
        tok = int(anywhere[i]) if jump[i] else int(successors[tok, choice[i]])
        out[i] = tok
    return out


def regression(n, dim, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((dim, 1)).astype(np.float32)
    x = rng.standard_normal((n, dim)).astype(np.float32)
    y = x @ w + 0.1 * rng.standard_normal((n, 1)).astype(np.float32)
    return x, y.astype(np.float32)
