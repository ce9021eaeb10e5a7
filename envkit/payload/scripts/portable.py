"""Portable seeded numbers: the same initial weights and inputs in every framework and version.

Standard library only. Each tensor gets its own seed, derived with splitmix64 from the run seed
and the tensor's name, so adding a tensor never shifts the numbers of another. The stream itself
is ``random.Random(seed).random()``, which Python guarantees to reproduce across versions for an
integer seed (see the ``random`` module's notes on reproducibility); it runs in C, so the half a
million BERT weights cost well under a second. Values are produced as Python floats (binary64);
a framework rounds them to its dtype (round-to-nearest, the same everywhere).
"""

from __future__ import annotations

import hashlib
import math
import random

MASK64 = (1 << 64) - 1

RNN = {"batch": 32, "seq": 5, "inputs": 10, "hidden": 50, "lr": 0.01}
BERT = {
    "batch": 8,
    "seq": 64,
    "vocab": 1000,
    "d": 128,
    "heads": 4,
    "layers": 2,
    "ffn": 512,
    "classes": 2,
    "lr": 1e-3,
}
CLIP = 1.0
LN_EPS = 1e-5
MASK_VALUE = -1e4


def splitmix64(x: int) -> int:
    """One splitmix64 output for state ``x`` (Steele, Lea, Flood 2014)."""
    z = (x + 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def stream_seed(seed: int, name: str) -> int:
    digest = int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "little")
    return splitmix64((seed & MASK64) ^ digest)


def uniform(seed: int, name: str, count: int, bound: float) -> list[float]:
    """``count`` floats uniform in [-bound, bound)."""
    rnd = random.Random(stream_seed(seed, name)).random
    return [(2.0 * rnd() - 1.0) * bound for _ in range(count)]


def integers(seed: int, name: str, count: int, high: int) -> list[int]:
    """``count`` integers in [0, high): ``int(random() * high)``, stable across Python versions."""
    rnd = random.Random(stream_seed(seed, name)).random
    return [int(rnd() * high) for _ in range(count)]


def numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _linear(prefix: str, fan_out: int, fan_in: int) -> list[tuple[str, tuple[int, ...], str, float]]:
    bound = 1.0 / math.sqrt(fan_in)
    return [(f"{prefix}.weight", (fan_out, fan_in), "u", bound), (f"{prefix}.bias", (fan_out,), "u", bound)]


def _layernorm(prefix: str, d: int) -> list[tuple[str, tuple[int, ...], str, float]]:
    return [(f"{prefix}.weight", (d,), "one", 0.0), (f"{prefix}.bias", (d,), "zero", 0.0)]


def param_specs(workload: str) -> list[tuple[str, tuple[int, ...], str, float]]:
    """Ordered (name, shape, init, bound) of a workload's parameters; the order is the report's order."""
    if workload == "rnn":
        h, i = RNN["hidden"], RNN["inputs"]
        bound = 1.0 / math.sqrt(h)
        return [
            ("rnn.weight_ih", (h, i), "u", bound),
            ("rnn.weight_hh", (h, h), "u", bound),
            ("rnn.bias_ih", (h,), "u", bound),
            ("rnn.bias_hh", (h,), "u", bound),
            *_linear("fc", 1, h),
        ]
    if workload == "bert":
        d, f = BERT["d"], BERT["ffn"]
        std_bound = 0.02 * math.sqrt(3.0)  # uniform with std 0.02, as BERT's initialiser
        specs = [
            ("emb.token", (BERT["vocab"], d), "u", std_bound),
            ("emb.position", (BERT["seq"], d), "u", std_bound),
            *_layernorm("emb.ln", d),
        ]
        for n in range(BERT["layers"]):
            p = f"layer{n}"
            for proj in ("q", "k", "v", "o"):
                # No key bias: it adds the same q·b to every score of a row, which softmax cancels, so its
                # gradient is exactly zero in exact arithmetic and AdamW would turn rounding noise into
                # full-size updates, making 1 vs 2 threads look like drift.
                specs += _linear(f"{p}.attn.{proj}", d, d)[: 1 if proj == "k" else 2]
            specs += _layernorm(f"{p}.ln1", d)
            specs += _linear(f"{p}.ffn.in", f, d)
            specs += _linear(f"{p}.ffn.out", d, f)
            specs += _layernorm(f"{p}.ln2", d)
        return [*specs, *_linear("head", BERT["classes"], d)]
    raise ValueError(f"unknown workload {workload!r}")


def initial_params(workload: str, seed: int) -> list[tuple[str, tuple[int, ...], list[float]]]:
    out = []
    for name, shape, init, bound in param_specs(workload):
        n = numel(shape)
        if init == "u":
            values = uniform(seed, f"{workload}/param/{name}", n, bound)
        else:
            values = [1.0 if init == "one" else 0.0] * n
        out.append((name, shape, values))
    return out


def rnn_batch(seed: int, step: int) -> tuple[list[float], list[float]]:
    """x (batch, seq, inputs) in [-1, 1) and targets y (batch, 1), flat."""
    b, s, i = RNN["batch"], RNN["seq"], RNN["inputs"]
    x = uniform(seed, f"rnn/x/{step}", b * s * i, 1.0)
    y = uniform(seed, f"rnn/y/{step}", b, 1.0)
    return x, y


def bert_batch(seed: int, step: int) -> tuple[list[int], list[float], list[int]]:
    """Token ids (batch, seq), an additive key mask (batch, seq) and labels (batch,), flat."""
    b, s = BERT["batch"], BERT["seq"]
    ids = integers(seed, f"bert/ids/{step}", b * s, BERT["vocab"])
    lengths = [s - k for k in integers(seed, f"bert/len/{step}", b, s // 4)]
    mask = [0.0 if t < lengths[r] else MASK_VALUE for r in range(b) for t in range(s)]
    labels = integers(seed, f"bert/labels/{step}", b, BERT["classes"])
    return ids, mask, labels


def is_finite(value: float) -> bool:
    return not (math.isnan(value) or math.isinf(value))


def json_float(value: float) -> float | str:
    """JSON has no NaN/Inf: non-finite numbers are written as strings."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value
