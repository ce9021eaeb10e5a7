"""What `envkit probe` on the host costs over a hand-written script doing the same training.

The hand-written script (:data:`HAND_WRITTEN`) imports torch, applies the same strict switches
(deterministic algorithms, cuDNN deterministic, no TF32, highest float32 matmul precision) and runs
the same steps of the same workloads (rnn and tiny BERT, the same seeded inputs and initial
weights, SGD / AdamW, clipping at 1.0), printing the losses. `envkit probe --frameworks torch`
does that plus what makes it a probe: the CLI, one payload process, per-step NaN/Inf flags and
grad norms, the parameters' sha256, the host fingerprint, a validated JSON report in the store.

Both run alternately (``ROUNDS`` times each, the minimum kept, so both see the same machine
load); wall and CPU time (user + system) are printed with their ratios, which must stay at or
below 1.15. Needs torch.
"""

from __future__ import annotations

import importlib.util
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._goals import record, scaled

ROUNDS = scaled(4, 1)
STEPS = scaled(10, 2)
LIMIT = 1.15
PAYLOAD = Path(__file__).resolve().parents[1] / "envkit" / "payload" / "scripts"

# Only the workloads' data and weights come from the payload's portable (stdlib) module, so both
# sides train on the same numbers; the loop, the switches and the model code are written out here.
HAND_WRITTEN = """
import math, sys
sys.path.insert(0, {payload!r})
import portable
import torch
import torch.nn.functional as F

torch.use_deterministic_algorithms(True)
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.set_float32_matmul_precision("highest")

def params(workload):
    return [torch.tensor(v, dtype=torch.float32).reshape(s).requires_grad_(True)
            for _, s, v in portable.initial_params(workload, 0)]

def rnn(p, step):
    w_ih, w_hh, b_ih, b_hh, fc_w, fc_b = p
    r = portable.RNN
    xs, ys = portable.rnn_batch(0, step)
    x = torch.tensor(xs).reshape(r["batch"], r["seq"], r["inputs"])
    y = torch.tensor(ys).reshape(r["batch"], 1)
    h = torch.zeros(r["batch"], r["hidden"])
    for t in range(r["seq"]):
        h = torch.tanh(F.linear(x[:, t], w_ih, b_ih) + F.linear(h, w_hh, b_hh))
    return F.mse_loss(F.linear(h, fc_w, fc_b), y)

def bert(p, step):
    b = portable.BERT
    ids_l, mask_l, labels_l = portable.bert_batch(0, step)
    ids = torch.tensor(ids_l, dtype=torch.int64).reshape(b["batch"], b["seq"])
    mask = torch.tensor(mask_l).reshape(b["batch"], 1, 1, b["seq"])
    labels = torch.tensor(labels_l, dtype=torch.int64)
    it = iter(p)
    tok, pos, ln_w, ln_b = next(it), next(it), next(it), next(it)
    d, nh = b["d"], b["heads"]
    hd = d // nh
    x = F.layer_norm(F.embedding(ids, tok) + pos.unsqueeze(0), (d,), ln_w, ln_b, portable.LN_EPS)
    for _ in range(b["layers"]):
        qw, qb, kw, vw, vb, ow, ob, l1w, l1b, f1w, f1b, f2w, f2b, l2w, l2b = (next(it) for _ in range(15))
        heads = lambda t: t.reshape(b["batch"], b["seq"], nh, hd).transpose(1, 2)
        q, k, v = heads(F.linear(x, qw, qb)), heads(F.linear(x, kw)), heads(F.linear(x, vw, vb))
        a = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd) + mask, dim=-1)
        ctx = torch.matmul(a, v).transpose(1, 2).reshape(b["batch"], b["seq"], d)
        x = F.layer_norm(x + F.linear(ctx, ow, ob), (d,), l1w, l1b, portable.LN_EPS)
        f = F.linear(F.gelu(F.linear(x, f1w, f1b)), f2w, f2b)
        x = F.layer_norm(x + f, (d,), l2w, l2b, portable.LN_EPS)
    hw, hb = next(it), next(it)
    return F.cross_entropy(F.linear(x[:, 0], hw, hb), labels)

for name, forward in (("rnn", rnn), ("bert", bert)):
    p = params(name)
    lr = portable.RNN["lr"] if name == "rnn" else portable.BERT["lr"]
    opt = (torch.optim.SGD(p, lr=lr) if name == "rnn"
           else torch.optim.AdamW(p, lr=lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01))
    for step in range(1, {steps} + 1):
        loss = forward(p, step)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(p, portable.CLIP)
        opt.step()
        opt.zero_grad(set_to_none=True)
        print(name, step, float(loss.item()))
"""


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, cpu) seconds of one run; cpu is user + system time of the child processes."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main() -> None:
    if importlib.util.find_spec("torch") is None:
        print("   skipped: torch is needed")
        return
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": root, "PYTHONDONTWRITEBYTECODE": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "hand_written.py"
        script.write_text(HAND_WRITTEN.format(payload=str(PAYLOAD), steps=STEPS), "utf-8")
        store = str(Path(tmp) / "store")
        probe = [sys.executable, "-m", "envkit", "probe", "--frameworks", "torch", "--steps", str(STEPS),
                 "--store", store]  # fmt: skip
        hand = [sys.executable, str(script)]
        _run(hand, env)  # warm the page cache for torch
        runs: dict[str, list[tuple[float, float]]] = {"hand": [], "probe": []}
        for _ in range(ROUNDS):
            runs["hand"].append(_run(hand, env))
            runs["probe"].append(_run(probe, env))
    for i, what in ((0, "wall"), (1, "cpu")):
        hand_s, probe_s = min(r[i] for r in runs["hand"]), min(r[i] for r in runs["probe"])
        ratio = probe_s / hand_s
        verdict = "ok" if ratio <= LIMIT else "OVER THE LIMIT"
        print(f"   {what}: hand-written torch script {hand_s:.2f} s, envkit probe {probe_s:.2f} s, "
              f"ratio {ratio:.3f} (limit {LIMIT}) {verdict}")  # fmt: skip
        if what == "cpu":
            record("probe_ratio", ratio, f"{probe_s:.2f} s vs {hand_s:.2f} s CPU")
    print(f"   ({ROUNDS} alternating runs each, minimum; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs: on a busy machine the cpu line is the fair one)")  # fmt: skip
