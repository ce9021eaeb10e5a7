"""The probe's Paddle side: the same functional rnn and bert as torch_probe. Needs only paddle (+ stdlib).

Strict mode sets ``FLAGS_cudnn_deterministic`` and ``FLAGS_embedding_deterministic`` in the environment
*before* paddle is imported (``run.py`` calls :func:`common.paddle_pre_import`): Paddle reads flags then.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import common
import paddle
import paddle.nn.functional as F
import portable


def _core() -> Any:
    return getattr(paddle, "base", None) and paddle.base.core


def switches() -> dict[str, object]:
    out: dict[str, object] = {}
    core = _core()
    for name in ("get_cublas_switch", "get_cudnn_switch"):
        fn = getattr(core, name, None)
        if fn is not None:
            with contextlib.suppress(Exception):
                out[name[len("get_") :] + "_tf32"] = bool(fn())
    for flag in (
        "FLAGS_check_nan_inf",
        "FLAGS_check_nan_inf_level",
        "FLAGS_cudnn_deterministic",
        "FLAGS_embedding_deterministic",
        "FLAGS_cpu_deterministic",
        "FLAGS_enable_cublas_tensor_op_math",
    ):
        with contextlib.suppress(Exception):
            value = paddle.get_flags([flag])[flag]
            out[flag] = value if isinstance(value, (bool, int, float, str)) else str(value)
    return out


def info() -> dict[str, object]:
    data: dict[str, object] = {
        "version": paddle.__version__,
        "commit": getattr(paddle.version, "commit", None),
        "cuda_runtime": None,
        "cudnn": None,
        "compiled_with_cuda": bool(paddle.is_compiled_with_cuda()),
        "blas": _blas(),
        "gpus": [],
        "switches": switches(),
    }
    if data["compiled_with_cuda"]:
        data["cuda_runtime"] = str(paddle.version.cuda())
        data["cudnn"] = str(paddle.version.cudnn())
        with contextlib.suppress(Exception):
            for i in range(paddle.device.cuda.device_count()):
                props = paddle.device.cuda.get_device_properties(i)
                data["gpus"].append({"name": props.name, "capability": f"sm_{props.major}{props.minor}"})
        with contextlib.suppress(Exception):
            data["nccl"] = str(paddle.version.nccl())
    return data


def _blas() -> str:
    flag = getattr(paddle.version, "with_mkl", "OFF")
    flag = flag() if callable(flag) else flag
    return "mkl" if str(flag).upper() == "ON" else "openblas"


def auto_device() -> str:
    """``--device auto``: CUDA when this paddle is built with CUDA and sees a GPU, else CPU."""
    try:
        seen = paddle.is_compiled_with_cuda() and paddle.device.cuda.device_count() > 0
    except Exception:
        seen = False
    return "cuda" if seen else "cpu"


def configure(cfg: common.Config) -> dict[str, object]:
    applied: dict[str, object] = {}
    paddle.set_device("gpu" if cfg.device == "cuda" else "cpu")
    core = _core()
    if cfg.mode == "strict" or cfg.tf32:
        for name in ("set_cublas_switch", "set_cudnn_switch"):
            fn = getattr(core, name, None)
            if fn is not None:
                with contextlib.suppress(Exception):
                    fn(cfg.tf32)
                    applied[name[len("set_") :] + "_tf32"] = cfg.tf32
    if cfg.nan_check:
        with contextlib.suppress(Exception):
            paddle.set_flags({"FLAGS_check_nan_inf": True, "FLAGS_check_nan_inf_level": 0})
    return applied


class Adapter(common.AdapterBase):
    """The workloads in PaddlePaddle."""

    def __init__(self, cfg: common.Config) -> None:
        self.dtype = "float64" if cfg.dtype == "float64" else "float32"

    def tensor(self, values: list[Any], shape: tuple[int, ...], dtype: str | None = None) -> Any:
        return paddle.to_tensor(values, dtype=dtype or self.dtype).reshape(list(shape))

    def make_params(self, workload: str, cfg: common.Config) -> list[Any]:
        params = []
        for _, shape, values in portable.initial_params(workload, cfg.seed):
            p = paddle.create_parameter(list(shape), self.dtype)
            p.set_value(self.tensor(values, shape))
            params.append(p)
        return params

    def make_optimizer(self, workload: str, params: list[Any], lr: float) -> Any:
        clip = paddle.nn.ClipGradByGlobalNorm(portable.CLIP)
        if workload == "rnn":
            return paddle.optimizer.SGD(learning_rate=lr, parameters=params, grad_clip=clip)
        return paddle.optimizer.AdamW(
            learning_rate=lr,
            parameters=params,
            beta1=0.9,
            beta2=0.999,
            epsilon=1e-8,
            weight_decay=0.01,
            grad_clip=clip,
        )

    def autocast(self, cfg: common.Config) -> Any:
        if cfg.autocast == "bf16":
            return paddle.amp.auto_cast(dtype="bfloat16")
        return contextlib.nullcontext()

    def _rnn(self, params: list[Any], cfg: common.Config, step: int, poison: bool) -> Any:
        w_ih, w_hh, b_ih, b_hh, fc_w, fc_b = params
        r = portable.RNN
        x_list, y_list = portable.rnn_batch(cfg.seed, step)
        if poison:
            x_list[0] = math.nan
        x = self.tensor(x_list, (r["batch"], r["seq"], r["inputs"]))
        y = self.tensor(y_list, (r["batch"], 1))
        h = paddle.zeros([r["batch"], r["hidden"]], dtype=self.dtype)
        for t in range(r["seq"]):
            h = paddle.tanh(_linear(x[:, t], w_ih, b_ih) + _linear(h, w_hh, b_hh))
        out = _linear(h, fc_w, fc_b)
        return F.mse_loss(out.astype("float32") if cfg.autocast else out, y)

    def _bert(self, params: list[Any], cfg: common.Config, step: int, poison: bool) -> Any:
        b = portable.BERT
        ids_l, mask_l, labels_l = portable.bert_batch(cfg.seed, step)
        ids = self.tensor(ids_l, (b["batch"], b["seq"]), "int64")
        mask = self.tensor(mask_l, (b["batch"], 1, 1, b["seq"]))
        labels = self.tensor(labels_l, (b["batch"],), "int64")
        it = iter(params)
        tok, pos, ln_w, ln_b = next(it), next(it), next(it), next(it)
        d, nh = b["d"], b["heads"]
        hd = d // nh
        x = F.embedding(ids, tok) + pos.unsqueeze(0)
        if poison:  # a NaN in the first token's features: the residual stream carries it to the loss
            x = x + self.tensor([math.nan] + [0.0] * (d - 1), (d,))
        x = F.layer_norm(x, [d], ln_w, ln_b, portable.LN_EPS)
        for _ in range(b["layers"]):
            qw, qb, kw, vw, vb, ow, ob, l1w, l1b, f1w, f1b, f2w, f2b, l2w, l2b = (next(it) for _ in range(15))

            def heads(t: Any) -> Any:
                return t.reshape([b["batch"], b["seq"], nh, hd]).transpose([0, 2, 1, 3])

            q, k, v = heads(_linear(x, qw, qb)), heads(_linear(x, kw, None)), heads(_linear(x, vw, vb))
            scores = paddle.matmul(q, k, transpose_y=True) / math.sqrt(hd) + mask
            ctx = (
                paddle.matmul(F.softmax(scores, axis=-1), v)
                .transpose([0, 2, 1, 3])
                .reshape([b["batch"], b["seq"], d])
            )
            x = F.layer_norm(x + _linear(ctx, ow, ob), [d], l1w, l1b, portable.LN_EPS)
            f = _linear(F.gelu(_linear(x, f1w, f1b)), f2w, f2b)
            x = F.layer_norm(x + f, [d], l2w, l2b, portable.LN_EPS)
        hw, hb = next(it), next(it)
        logits = _linear(x[:, 0], hw, hb)
        return F.cross_entropy(logits.astype("float32") if cfg.autocast else logits, labels)

    def item(self, t: Any) -> float:
        return float(t.astype("float64").item())

    def grad_norm(self, p: Any) -> float:
        if p.grad is None:
            return 0.0
        return float(paddle.linalg.norm(p.grad.detach().flatten()).item())

    def finite(self, t: Any) -> bool:
        return t is None or bool(paddle.isfinite(t.detach()).all().item())

    def param_norm(self, p: Any) -> float:
        return float(paddle.linalg.norm(p.detach().flatten()).item())

    def step(self, opt: Any, params: list[Any]) -> None:
        opt.step()
        opt.clear_grad(set_to_zero=False)

    def zero_grad(self, opt: Any, params: list[Any]) -> None:
        opt.clear_grad(set_to_zero=False)

    def to_list(self, p: Any) -> list[float]:
        return [float(v) for v in p.detach().flatten().tolist()]


def _linear(x: Any, w: Any, b: Any) -> Any:
    """torch's layout: ``w`` is (out, in)."""
    y = paddle.matmul(x, w, transpose_y=True)
    return y if b is None else y + b


def run(workloads: list[str], cfg: common.Config) -> dict[str, object]:
    applied = configure(cfg)
    return common.run_workloads(Adapter(cfg), workloads, cfg, applied, info)
