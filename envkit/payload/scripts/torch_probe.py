"""The probe's PyTorch side: functional rnn and bert on plain tensors. Needs only torch (+ stdlib)."""

from __future__ import annotations

import contextlib
import math
import os
import warnings
from typing import Any

import common
import portable
import torch
import torch.nn.functional as F


def _get(obj: Any, attr: str) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = getattr(obj, attr)
        except Exception as exc:
            return f"unavailable: {type(exc).__name__}"
    return value if isinstance(value, (bool, int, float, str)) or value is None else str(value)


def switches() -> dict[str, object]:
    """The knobs that move torch's numbers (read, never changed here)."""
    out: dict[str, object] = {
        "cuda.matmul.allow_tf32": _get(torch.backends.cuda.matmul, "allow_tf32"),
        "cudnn.allow_tf32": _get(torch.backends.cudnn, "allow_tf32"),
        "cudnn.deterministic": _get(torch.backends.cudnn, "deterministic"),
        "cudnn.benchmark": _get(torch.backends.cudnn, "benchmark"),
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "num_threads": torch.get_num_threads(),
        "num_interop_threads": torch.get_num_interop_threads(),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out["float32_matmul_precision"] = torch.get_float32_matmul_precision()
    for key, obj in (
        ("fp32_precision", torch.backends),
        ("cuda.matmul.fp32_precision", torch.backends.cuda.matmul),
        ("cudnn.fp32_precision", torch.backends.cudnn),
    ):
        if hasattr(obj, "fp32_precision"):
            out[key] = _get(obj, "fp32_precision")
    return out


def info() -> dict[str, object]:
    cfg = torch.__config__.show()
    blas = sorted(
        {part.split("=", 1)[1] for part in cfg.replace(",", " ").split() if part.startswith("BLAS_INFO=")}
    )
    data: dict[str, object] = {
        "version": torch.__version__,
        "git_version": getattr(torch.version, "git_version", None),
        "cuda_runtime": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "blas": ",".join(blas) or None,
        "mkldnn": bool(torch.backends.mkldnn.is_available()),
        "cuda_available": torch.cuda.is_available(),
        "gpus": [],
        "nccl": None,
        "switches": switches(),
    }
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            major, minor = torch.cuda.get_device_capability(i)
            gpu = {"name": torch.cuda.get_device_name(i), "capability": f"sm_{major}{minor}"}
            with contextlib.suppress(Exception):  # the device's own id: a fleet's history is kept per GPU
                gpu["uuid"] = str(torch.cuda.get_device_properties(i).uuid)
            data["gpus"].append(gpu)
        with contextlib.suppress(Exception):
            nccl = torch.cuda.nccl.version()
            data["nccl"] = ".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl)
    return data


def configure(cfg: common.Config) -> dict[str, object]:
    """Apply the mode; return what was set."""
    applied: dict[str, object] = {}
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
        applied["num_threads"] = cfg.threads
    if cfg.mode == "strict":
        if cfg.device == "cuda" and not os.environ.get("CUBLAS_WORKSPACE_CONFIG"):
            os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
            applied["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
        applied.update(
            {"deterministic_algorithms": True, "cudnn.deterministic": True, "cudnn.benchmark": False}
        )
    if cfg.mode == "strict" or cfg.tf32:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.backends.cuda.matmul.allow_tf32 = cfg.tf32
            torch.backends.cudnn.allow_tf32 = cfg.tf32
            torch.set_float32_matmul_precision("high" if cfg.tf32 else "highest")
        applied.update(
            {"allow_tf32": cfg.tf32, "float32_matmul_precision": "high" if cfg.tf32 else "highest"}
        )
    if cfg.nan_check:
        torch.autograd.set_detect_anomaly(True)
        applied["anomaly_mode"] = True
    return applied


class Adapter(common.AdapterBase):
    """The workloads in PyTorch."""

    def __init__(self, cfg: common.Config) -> None:
        self.dtype = torch.float64 if cfg.dtype == "float64" else torch.float32
        self.device = torch.device("cuda" if cfg.device == "cuda" else "cpu")

    def tensor(self, values: list[Any], shape: tuple[int, ...], dtype: Any = None) -> Any:
        return torch.tensor(values, dtype=dtype or self.dtype).reshape(shape).to(self.device)

    def make_params(self, workload: str, cfg: common.Config) -> list[Any]:
        return [
            self.tensor(values, shape).requires_grad_(True)
            for _, shape, values in portable.initial_params(workload, cfg.seed)
        ]

    def make_optimizer(self, workload: str, params: list[Any], lr: float) -> Any:
        if workload == "rnn":
            return torch.optim.SGD(params, lr=lr)
        return torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)

    def autocast(self, cfg: common.Config) -> Any:
        if cfg.autocast == "bf16":
            return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def _rnn(self, params: list[Any], cfg: common.Config, step: int, poison: bool) -> Any:
        w_ih, w_hh, b_ih, b_hh, fc_w, fc_b = params
        r = portable.RNN
        x_list, y_list = portable.rnn_batch(cfg.seed, step)
        if poison:
            x_list[0] = math.nan
        x = self.tensor(x_list, (r["batch"], r["seq"], r["inputs"]))
        y = self.tensor(y_list, (r["batch"], 1))
        h = torch.zeros(r["batch"], r["hidden"], dtype=self.dtype, device=self.device)
        for t in range(r["seq"]):
            h = torch.tanh(F.linear(x[:, t], w_ih, b_ih) + F.linear(h, w_hh, b_hh))
        out = F.linear(h, fc_w, fc_b)
        return F.mse_loss(out.float() if cfg.autocast else out, y)

    def _bert(self, params: list[Any], cfg: common.Config, step: int, poison: bool) -> Any:
        b = portable.BERT
        ids_l, mask_l, labels_l = portable.bert_batch(cfg.seed, step)
        ids = self.tensor(ids_l, (b["batch"], b["seq"]), torch.int64)
        mask = self.tensor(mask_l, (b["batch"], 1, 1, b["seq"]))
        labels = self.tensor(labels_l, (b["batch"],), torch.int64)
        it = iter(params)
        tok, pos, ln_w, ln_b = next(it), next(it), next(it), next(it)
        d, nh = b["d"], b["heads"]
        hd = d // nh
        x = F.embedding(ids, tok) + pos.unsqueeze(0)
        if poison:  # a NaN in the first token's features: the residual stream carries it to the loss
            x = x + self.tensor([math.nan] + [0.0] * (d - 1), (d,))
        x = F.layer_norm(x, (d,), ln_w, ln_b, portable.LN_EPS)
        for _ in range(b["layers"]):
            qw, qb, kw, vw, vb, ow, ob, l1w, l1b, f1w, f1b, f2w, f2b, l2w, l2b = (next(it) for _ in range(15))

            def heads(t: Any) -> Any:
                return t.reshape(b["batch"], b["seq"], nh, hd).transpose(1, 2)

            q, k, v = heads(F.linear(x, qw, qb)), heads(F.linear(x, kw)), heads(F.linear(x, vw, vb))
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd) + mask
            ctx = (
                torch.matmul(torch.softmax(scores, dim=-1), v)
                .transpose(1, 2)
                .reshape(b["batch"], b["seq"], d)
            )
            x = F.layer_norm(x + F.linear(ctx, ow, ob), (d,), l1w, l1b, portable.LN_EPS)
            f = F.linear(F.gelu(F.linear(x, f1w, f1b)), f2w, f2b)
            x = F.layer_norm(x + f, (d,), l2w, l2b, portable.LN_EPS)
        hw, hb = next(it), next(it)
        logits = F.linear(x[:, 0], hw, hb)
        return F.cross_entropy(logits.float() if cfg.autocast else logits, labels)

    def item(self, t: Any) -> float:
        return float(t.detach().double().item())

    def grad_norm(self, p: Any) -> float:
        if p.grad is None:
            return 0.0
        return float(torch.linalg.vector_norm(p.grad.detach()).item())

    def finite(self, t: Any) -> bool:
        return t is None or bool(torch.isfinite(t.detach()).all().item())

    def first_nonfinite(self, names: list[str], tensors: list[Any]) -> str | None:
        """One fused norm over all tensors: finite norms prove finite elements; else check each."""
        foreach = getattr(torch, "_foreach_norm", None)
        if foreach is not None and tensors:
            with contextlib.suppress(Exception), torch.no_grad():  # an old or restricted torch: one by one
                norms = foreach([t.detach() for t in tensors])
                if bool(torch.isfinite(torch.stack([n.float() for n in norms])).all().item()):
                    return None
        return super().first_nonfinite(names, tensors)

    def param_norm(self, p: Any) -> float:
        return float(torch.linalg.vector_norm(p.detach()).item())

    def step(self, opt: Any, params: list[Any]) -> None:
        torch.nn.utils.clip_grad_norm_(params, portable.CLIP)
        opt.step()
        opt.zero_grad(set_to_none=True)

    def zero_grad(self, opt: Any, params: list[Any]) -> None:
        opt.zero_grad(set_to_none=True)

    def to_list(self, p: Any) -> list[float]:
        return [float(v) for v in p.detach().cpu().reshape(-1).tolist()]


def auto_device() -> str:
    """``--device auto``: CUDA when torch sees a GPU, else CPU."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def run(workloads: list[str], cfg: common.Config) -> dict[str, object]:
    applied = configure(cfg)
    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("--device cuda: torch sees no CUDA device")
    return common.run_workloads(Adapter(cfg), workloads, cfg, applied, info)
