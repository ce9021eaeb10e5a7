"""Is the input the cause? A finite batch far outside the scale of the batch before it, or one sample
far outside the others of its batch (one raw 16-bit image, values up to 2e5, in a normalized batch).

Read only for an incident (the batch copied to the host once): no per-step cost beyond keeping a
reference to the step's batch until the next step.
"""

from __future__ import annotations

from typing import Any

from envkit.guard.adapter import Adapter, walk

__all__ = ["FACTOR", "input_outlier"]

FACTOR = 50.0  # a normalized batch beside a raw 0–255 one: ~100–250×; a healthy batch-to-batch spread: < 3×


def _absmax(adapter: Adapter, batch: Any) -> dict[str, Any]:
    """Each floating tensor of the batch: the largest |x| of each sample (first axis) as numpy."""
    import numpy as np

    out: dict[str, Any] = {}
    for path, t in walk(batch, adapter.is_tensor):
        arr = np.asarray(adapter.to_numpy(t))
        if arr.dtype.kind != "f" or arr.size == 0 or not np.isfinite(arr).all():
            continue
        flat = (
            np.abs(arr.astype("float64")).reshape(arr.shape[0], -1) if arr.ndim > 1 else np.abs(arr)[:, None]
        )
        out["batch" + path if path.startswith("[") or not path else path] = flat.max(axis=1)
    return out


def input_outlier(adapter: Adapter, batch: Any, before: Any) -> dict[str, Any] | None:
    """Where the batch is out of scale, with the numbers (``tensor``, ``sample``, ``max_abs``, what it
    was compared with and ``text``), else None. ``before``: the batch of the step before (or None)."""
    import numpy as np

    now = _absmax(adapter, batch)
    then = _absmax(adapter, before) if before is not None else {}
    for path, per_sample in now.items():
        worst = int(np.argmax(per_sample))
        value = float(per_sample[worst])
        if len(per_sample) >= 4:
            others = float(np.median(np.delete(per_sample, worst)))
            if others > 0 and value > FACTOR * others:
                text = (
                    f"the input: sample {worst} of {path} reaches |x| = {value:.4g}, "
                    f"{value / others:,.0f}× the other samples' (median {others:.4g})"
                )
                return {"tensor": path, "sample": worst, "max_abs": value, "others": others, "text": text}
        if path in then and then[path].size:
            previous = float(then[path].max())
            if previous > 0 and value > FACTOR * previous:
                text = (
                    f"the input: {path} reaches |x| = {value:.4g}, {value / previous:,.0f}× the batch "
                    f"before (|x| up to {previous:.4g})"
                )
                return {"tensor": path, "sample": worst, "max_abs": value, "before": previous, "text": text}
    return None
