"""``envkit guard replay DUMP``: run an incident's step again here and say what it was.

Verdicts (after Megatron's RerunStateMachine, ``../shared/research/guard-anchors.md``):

- ``reproducible``: the replay gives bitwise the recorded loss and gradient norm: the data, the
  model or the hyper-parameters did it (the localization says where);
- ``nondeterministic``: two replays in one place differ from each other: the code is not repeatable
  (an unseeded generator, a nondeterministic kernel), which says nothing of the hardware — the
  replays run twice on the same machine first for this reason;
- ``transient``: the same environment, a different result than recorded (the replays here agree):
  suspect the recording device;
- ``environment``: this host's fingerprint differs from the recording host's and so does the
  result: the ranked causes from the two fingerprints, as ``probe --compare`` ranks them, only the
  differences that can act here (on two CPU-only sides, no TF32, cuDNN or GPU switch).

The model, optimizer and loss come from the user's ``--entry module:function`` (named on the
command line, never taken from the dump): ``function()`` returns ``(model, optimizer, loss_fn)``.
"""

from __future__ import annotations

import importlib
import math
import sys
from collections.abc import Callable
from contextlib import redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envkit.comparison.causes import likely_causes
from envkit.errors import DumpError, UsageError
from envkit.guard.adapter import make_adapter
from envkit.guard.dump import Dump, read_dump
from envkit.guard.flight import LoadedDump, load_dump
from envkit.guard.localize import Replay, describe_nonfinite, module_layout, replay_step
from envkit.guard.records import json_clean, read_float
from envkit.guard.runlog import fingerprint
from envkit.incident.amp import Amp, recorded_amp
from envkit.incident.ranks import RankDumps, rank_dumps, recorded_rank_losses
from envkit.probe.model import KIND, SCHEMA, ProbeReport, parse_report

__all__ = [
    "ModelBuilder",
    "ReplayVerdict",
    "align_names",
    "here_info",
    "judge",
    "load_entry",
    "replay_dump",
    "replay_runs",
    "side_report",
    "suggest_entry",
]

ModelBuilder = Callable[[], Any]


@dataclass(frozen=True)
class ReplayVerdict:
    """Whether replaying an incident's step reproduced it, where, and the likely causes when not."""

    verdict: str
    dump: str
    step: int
    recorded: dict[str, Any]
    replays: list[dict[str, object]]
    localization: dict[str, Any]
    causes: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return dict(json_clean(self.__dict__))


def load_entry(spec: str) -> ModelBuilder:
    """``module:function`` (importable from the current directory) that builds model, optimizer, loss."""
    module_name, sep, func_name = spec.partition(":")
    if not sep or not module_name or not func_name.isidentifier():
        raise UsageError(f"--entry {spec!r}: expected module:function", hint="e.g. --entry train:build")
    if "" not in sys.path:
        sys.path.insert(0, "")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise UsageError(
            f"--entry {spec}: cannot import {module_name}: {e}", hint="run from the training code's directory"
        ) from e
    func = getattr(module, func_name, None)
    if not callable(func):
        raise UsageError(
            f"--entry {spec}: {module_name} has no function {func_name}", hint="name the builder function"
        )
    builder: ModelBuilder = func
    return builder


def suggest_entry(path: Path) -> UsageError:
    """No --entry given: what to give (the entry the run recorded is named, never imported)."""
    recorded = read_dump(path).manifest.get("entry")
    hint = "give the module:function that builds (model, optimizer, loss_fn), e.g. --entry train:build"
    if isinstance(recorded, str) and recorded:
        hint = f"the run recorded --entry {recorded[:200]}; give it if you trust that code"
    return UsageError(
        f"{path}: `envkit guard replay` needs --entry (a dump never names code to run)", hint=hint
    )


def _built(builder: ModelBuilder) -> tuple[Any, Any, Any]:
    try:
        made = builder()
    except Exception as e:  # the user's entry: its error is a usage problem, said in one line
        raise UsageError(
            f"--entry: the entry raised {_one(e)} while building (model, optimizer, loss_fn)",
            hint="run the replay from the training code's directory, with the inputs the entry reads",
        ) from e
    if isinstance(made, dict):
        made = (made.get("model"), made.get("optimizer"), made.get("loss_fn"))
    if not (isinstance(made, tuple) and len(made) == 3 and callable(made[2])):
        raise UsageError("the entry must return (model, optimizer, loss_fn)", hint="see docs/guides/guard.md")
    return made


def _report(env: Any, source: str) -> ProbeReport:
    if not isinstance(env, dict) or not isinstance(env.get("fingerprint"), dict):
        raise DumpError(f"{source}: no fingerprint", hint="the dump was edited")
    raw = env.get("info")
    if raw is not None and not isinstance(raw, dict):
        raise DumpError(f"{source}: info: expected an object", hint="the dump was edited")
    info: dict[str, object] = raw or {}
    switches = info.get("switches", {})
    if not isinstance(switches, dict):
        raise DumpError(f"{source}: info.switches: expected an object", hint="the dump was edited")
    threads = switches.get("num_threads")
    if isinstance(threads, str) and threads.isdecimal() and len(threads) < 6:
        threads = int(threads)  # Paddle's dumps before this release wrote OMP_NUM_THREADS as it was set
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)):
        raise DumpError(
            f"{source}: info.switches.num_threads: expected an integer", hint="the dump was edited"
        )
    framework = env.get("framework") or "torch"
    if framework not in ("torch", "paddle"):
        raise DumpError(f"{source}: framework: expected torch or paddle", hint="the dump was edited")
    doc = {
        "schema": SCHEMA,
        "kind": KIND,
        "config": {
            "seed": 0,
            "steps": 1,
            "workloads": ["replay"],
            "mode": "guard",
            "dtype": "float32",
            "threads": threads,
        },
        "fingerprint": env["fingerprint"],
        "frameworks": {framework: {"status": "ok", "info": info, "workloads": {}}},
    }
    return parse_report(doc, source)


def _same(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a.hex() == b.hex()


def replay_runs(dump: Dump, builder: ModelBuilder) -> list[Replay]:
    """The dump's step replayed twice here with the entry's model, optimizer and loss.

    As the step ran: with the recorded loss scale and autocast (:mod:`envkit.incident.amp`); as its
    micro-batches when the step accumulated gradients and the entry takes one; and, for a rank of a
    process group, every rank's step with the gradients all-reduced (:mod:`envkit.incident.ranks`)."""
    amp = recorded_amp(dump)
    group = rank_dumps(dump)
    with redirect_stdout(sys.stderr):  # the entry's own prints: never in `--json` output
        model, optimizer, loss_fn = _built(builder)
        adapter = make_adapter(model, optimizer)
        names = list(adapter.model.state_dict())
        loaded = {r: _loaded(d, adapter, names) for r, d in sorted(group.dumps.items())}
        own = loaded[group.rank]
        if own.optimizer is not None:
            adapter.load_optimizer_state(*own.optimizer, source=str(dump.file("optimizer.safetensors")))
        step = _Step(adapter, loss_fn, amp, bool(dump.manifest.get("training", True)))
        return [step.replay(group, loaded) for _ in range(2)]


def _loaded(dump: Dump, adapter: Any, names: list[str]) -> LoadedDump:
    loaded = load_dump(dump, adapter)
    loaded.model_state = align_names(loaded.model_state, names)
    if set(loaded.model_state) == set(names):  # else loading names the keys that differ
        _check_layout(dump, module_layout(adapter))
    return loaded


class _Step:
    """One replay of a dump's step (every rank's when the group's dumps are there)."""

    def __init__(self, adapter: Any, loss_fn: Any, amp: Amp, training: bool) -> None:
        self.adapter, self.loss_fn, self.amp, self.training = adapter, loss_fn, amp, training
        self.autocast = amp.context(adapter.name, adapter.device())
        self.split: dict[int, bool] = {}  # rank -> replayed as micro-batches (decided on the first replay)

    def _fresh_scaler(self, *, primed: bool = False) -> None:
        a = self.adapter
        a.scaler = self.amp.scaler(a.name, a.device(), primed=primed)  # unscale_ once per scaler

    def _one(self, dump: Dump, loaded: LoadedDump, after_backward: Any = None) -> Replay:
        """``dump``'s own step; as micro-batches when the whole batch raised in an accumulating step."""

        def run(split: bool) -> Replay:
            self._fresh_scaler()
            return replay_step(
                self.adapter, self.loss_fn, loaded.batch, loaded.rng, training=self.training,
                model_state=loaded.model_state, source=str(dump.file("model.safetensors")),
                autocast=self.autocast, micro_batches=split, after_backward=after_backward,
            )  # fmt: skip

        rank = int(dump.manifest.get("rank") or 0)
        if rank in self.split:
            return run(self.split[rank])
        whole = run(False)
        backwards = dump.manifest.get("backwards")
        batch = loaded.batch
        accumulated = (
            whole.error is not None
            and isinstance(backwards, int)
            and backwards > 1
            and isinstance(batch, list | tuple)
            and len(batch) == backwards
        )
        self.split[rank] = accumulated
        return run(True) if accumulated else whole

    def replay(self, group: RankDumps, loaded: dict[int, LoadedDump]) -> Replay:
        if not group.complete:
            result = self._one(group.dumps[group.rank], loaded[group.rank])
            result.localization["replayed_as"] = self._shape(group, None)
            return result
        per_rank: list[list[Any]] = []
        results: dict[int, Replay] = {}
        for r in range(group.world):
            taken: list[list[Any]] = []
            results[r] = self._one(
                group.dumps[r], loaded[r], after_backward=lambda t=taken: t.append(self.adapter.grads_now())
            )
            per_rank.append(taken[-1] if taken else self.adapter.grads_now())
        a = self.adapter
        norm, error = math.nan, next((x.error for x in results.values() if x.error), None)
        try:
            a.set_reduced_grads(per_rank)
            self._fresh_scaler(primed=True)
            a.unscale()
            norm = a.read([a.total_norm(a.grads())])[0]
        except Exception as exc:  # noqa: BLE001 the all-reduce's replay failed: said as the step's error
            error = error or f"{type(exc).__name__}: {str(exc)[:300]}"
        own = results[group.rank]
        localization = dict(own.localization)
        finite = [(n, v) for n, v in a.param_norms().items() if math.isfinite(v)]  # the all-reduced ones
        largest = max(finite, key=lambda kv: kv[1], default=None)
        localization["largest_grad"] = largest and {"parameter": largest[0], "norm": largest[1]}
        bad = _bad_rank(results, group.rank)
        if bad is not None:  # this rank was healthy: where the non-finite came from
            localization = {**results[bad].localization, "rank": bad}
        localization["replayed_as"] = self._shape(group, results)
        return Replay(own.loss, norm, localization, error)

    def _shape(self, group: RankDumps, results: dict[int, Replay] | None) -> dict[str, object]:
        shape: dict[str, object] = {}
        split = self.split.get(group.rank)
        if split:
            shape["micro_batches"] = int(group.dumps[group.rank].manifest["backwards"])
        if group.world > 1:
            shape["rank"], shape["world_size"] = group.rank, group.world
            shape["ranks_replayed"] = sorted(group.dumps) if results is not None else [group.rank]
            shape["missing"] = group.missing
            shape["rank_losses"] = recorded_rank_losses(group.dumps[group.rank])
            if results is not None:
                shape["ranks"] = [
                    {
                        "rank": r,
                        "dump": str(group.dumps[r].path),
                        "loss": x.loss,
                        "local_grad_norm": x.grad_norm,
                        "nonfinite_batch": x.localization.get("nonfinite_batch"),
                        "first_nonfinite_module": x.localization.get("first_nonfinite_module"),
                    }
                    for r, x in sorted(results.items())
                ]
        return shape


def _bad_rank(results: dict[int, Replay], rank: int) -> int | None:
    """Another rank whose loss or own gradients were not finite, when ``rank``'s were."""
    mine = results[rank]
    if not (math.isfinite(mine.loss) and math.isfinite(mine.grad_norm)):
        return None
    bad = [
        r for r, x in sorted(results.items()) if not (math.isfinite(x.loss) and math.isfinite(x.grad_norm))
    ]
    return bad[0] if bad else None


LEADING_WRAPPERS = ("module.", "_layers.")  # DDP / DataParallel (torch), DataParallel (Paddle)
INNER_WRAPPERS = ("_fsdp_wrapped_module.", "_checkpoint_wrapped_module.", "_orig_mod.")  # FSDP1, compile


def _bare(name: str) -> str:
    """A parameter's name without the wrappers' parts: ``module.blocks.0.w`` → ``blocks.0.w``."""
    while name.startswith(LEADING_WRAPPERS):
        name = name.split(".", 1)[1]
    for part in INNER_WRAPPERS:
        name = name.replace(part, "")
    return name


def align_names(saved: dict[str, object], names: list[str]) -> dict[str, object]:
    """``saved`` (a dump's model state) renamed to the entry's model's ``names`` when the two differ
    only by wrappers, either way: a DDP/FSDP dump (``module.…``) replayed with the bare model, or a
    bare dump with a wrapped model. Anything else is returned as it is (the adapter names the misfit)."""
    if set(saved) == set(names):
        return saved
    by_bare = {_bare(n): n for n in names}
    if len(by_bare) != len(names):
        return saved
    renamed = {by_bare.get(_bare(k), k): v for k, v in saved.items()}
    return renamed if set(renamed) == set(names) and len(renamed) == len(saved) else saved


def _one(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0][:300]}" if text else type(e).__name__


def _bare_leaf(leaf: str) -> str:
    """``module.fc:Linear`` → ``fc:Linear``; ``module:Linear`` (a wrapped model that is one layer) →
    ``:Linear``, as the bare model names its root."""
    name, _, cls = leaf.rpartition(":")
    return f"{_bare(name + '.').removesuffix('.')}:{cls}"


def _check_layout(dump: Dump, mine: list[str] | None) -> None:
    """The entry's model must have the dump's leaf modules (names as :func:`align_names` matches them,
    wrappers aside): a ``Tanh`` where the run had ``ReLU`` gives other numbers with the same weights."""
    recorded = dump.manifest.get("modules")
    if not isinstance(recorded, list) or mine is None:
        return  # a dump from before envkit recorded it, or a model too large to list
    theirs = [_bare_leaf(str(x)) for x in recorded]
    ours = [_bare_leaf(x) for x in mine]
    if sorted(theirs) == sorted(ours):
        return
    only_dump = sorted(set(theirs) - set(ours))
    only_entry = sorted(set(ours) - set(theirs))
    said = "; ".join(
        part
        for part in (
            f"the dump has {', '.join(only_dump[:3])}" if only_dump else "",
            f"the entry's model has {', '.join(only_entry[:3])}" if only_entry else "",
        )
        if part
    )
    recorded_entry = dump.manifest.get("entry")
    hint = "give the --entry that builds the model the run trained (same code, same configuration)"
    if isinstance(recorded_entry, str) and recorded_entry:
        hint += f"; the run recorded --entry {recorded_entry[:200]}"
    raise UsageError(
        f"{dump.file('manifest.json')}: the entry's model is not the dump's: its modules differ ({said})",
        hint=hint,
    )


def replay_dump(path: Path, builder: ModelBuilder) -> ReplayVerdict:
    dump = read_dump(path)
    return judge(dump, replay_runs(dump, builder))


HereReport = Callable[[str], ProbeReport]  # the dump's framework -> the replaying side's report


def judge(
    dump: Dump, runs: list[Replay], here: HereReport | None = None, where: str = "here"
) -> ReplayVerdict:
    """The verdict of two replays against the recorded outcome; ``here`` fingerprints the replaying side."""
    outcome = dump.manifest.get("outcome") or {}
    try:
        loss, norm = read_float(outcome.get("loss")), read_float(outcome.get("grad_norm"))
    except (TypeError, ValueError) as e:
        raise DumpError(
            f"{dump.file('manifest.json')}: outcome is not two numbers", hint="the dump was edited"
        ) from e
    verdict, causes, notes = _verdict(dump, runs, loss, norm, here or _local_report, where)
    shape = _shape_notes(runs[0].localization)
    notes = [*recorded_amp(dump).describe(), *shape, *notes]  # replay_runs replays as the step ran
    return ReplayVerdict(
        verdict=verdict,
        dump=str(dump.path),
        step=dump.step,
        recorded={"loss": loss, "grad_norm": norm, "kind": dump.manifest.get("kind_of_incident")},
        replays=[{"loss": r.loss, "grad_norm": r.grad_norm, "error": r.error} for r in runs],
        localization=runs[0].localization,
        causes=causes,
        notes=notes,
    )


def _verdict(
    dump: Dump, runs: list[Replay], loss: float, norm: float, here: HereReport, where: str
) -> tuple[str, list[dict[str, object]], list[str]]:
    notes: list[str] = []
    first, second = runs
    raised = first.error or second.error
    if raised is not None and dump.manifest.get("kind_of_incident") != "error":
        where_raised = first.localization.get("raised_in") or "the step"
        raise UsageError(
            f"{dump.file('manifest.json')}: the entry's step raised {where} ({raised}, in {where_raised}); "
            "the recorded step did not: the entry does not run the step the run ran",
            hint="give the --entry whose loss_fn(model, batch) the run used (envkit guard show RUN names it)",
        )
    if not (_same(first.loss, second.loss) and _same(first.grad_norm, second.grad_norm)):
        return (
            "nondeterministic",
            [],
            [
                f"two replays {where} differ from each other: the step is not repeatable in one place — "
                "non-deterministic code (an unseeded generator, a nondeterministic kernel), not the "
                "hardware; seed every generator the step uses (or torch.use_deterministic_algorithms) "
                "and replay again"
            ],
        )
    exact = bool(dump.manifest.get("exact", True))
    if exact and _loss_only(first.localization):
        same = _same(first.loss, loss)  # this rank's own; the recorded norm is the group's
    elif exact:
        same = first.same_as(loss, norm)
    else:
        notes.append("the dump holds the weights of a later step (check_every > 1): compared by finiteness")
        same = math.isfinite(first.loss) == math.isfinite(loss) and math.isfinite(
            first.grad_norm
        ) == math.isfinite(norm)
    if first.error is not None and dump.manifest.get("kind_of_incident") == "error":
        same = True  # the step raised again
    if same:
        return "reproducible", [], notes
    there = _report(dump.json_parts.get("env.json"), str(dump.file("env.json")))
    from envkit.guard.adapter import FRAMEWORKS

    framework = dump.framework if dump.framework in FRAMEWORKS else "torch"
    mine = here(framework)
    cpu_only = not _has_gpu(there, framework) and not _has_gpu(mine, framework)
    causes = [
        c.to_json()
        for c in likely_causes(there, mine, ("recorded", where))
        if (c.kind != "package" or c.weight > 10) and not (cpu_only and _gpu_only(c.kind, c.message))
    ]
    if causes:
        return "environment", causes, notes
    return "transient", [], [*notes, "the same environment gave a different result: suspect the device"]


def _loss_only(localization: dict[str, Any]) -> bool:
    """One rank of a process group replayed alone: its gradient norm is not the all-reduced one."""
    shape = localization.get("replayed_as") or {}
    world = shape.get("world_size", 1)
    return isinstance(world, int) and world > 1 and len(shape.get("ranks_replayed") or []) < world


def _shape_notes(localization: dict[str, Any]) -> list[str]:
    """What the replay ran besides the entry's one step: micro-batches, the ranks, the rank at fault."""
    shape = localization.get("replayed_as") or {}
    notes = []
    n = shape.get("micro_batches")
    if n:
        notes.append(
            f"replayed as the step's {n} micro-batches (gradient accumulation: the step ran {n} backwards "
            "and the entry's loss_fn takes one): gradients accumulated, losses summed as the guard did"
        )
    world = shape.get("world_size")
    if not isinstance(world, int) or world < 2:
        return notes
    if not _loss_only(localization):
        order = (
            "" if world == 2 else " in rank order (the collective's own order may differ in the last bits)"
        )
        notes.append(
            f"replayed every rank's step from the {world} ranks' dumps and all-reduced their gradients as "
            f"DDP does (each × 1/{world}, summed{order}): the recorded gradient norm is the all-reduced one"
        )
        bad = localization.get("rank")
        if isinstance(bad, int):
            row: dict[str, object] = next((r for r in shape.get("ranks") or [] if r.get("rank") == bad), {})
            batch = localization.get("nonfinite_batch")
            what = describe_nonfinite(batch) if isinstance(batch, dict) else f"its loss {row.get('loss')}"
            notes.append(
                f"the fault is on rank {bad}, not on rank {shape.get('rank')} (its step was finite): "
                f"{what}; the all-reduce carried it to every rank (rank {bad}'s dump: {row.get('dump')})"
            )
        return notes
    missing = "; ".join(str(m) for m in (shape.get("missing") or [])[:2])
    notes.append(
        f"the recorded gradient norm is the all-reduce over {world} ranks and the other ranks' dumps are "
        f"not here ({missing}): only this rank's loss was compared; keep every rank's dump of the step "
        "(RUN/rank-K/incidents/…, or all in one folder) to replay the whole step"
    )
    losses = shape.get("rank_losses")
    if isinstance(losses, list):
        bad_ranks = [i for i, v in enumerate(losses) if not math.isfinite(read_float(v))]
        if bad_ranks and shape.get("rank") not in bad_ranks:
            notes.append(
                f"rank {', '.join(map(str, bad_ranks))} recorded a non-finite loss at this step "
                "(records.json): the fault is there, carried to this rank by the all-reduce"
            )
    return notes


GPU_KINDS = ("tf32", "cudnn", "cuda", "gpu", "driver", "nccl")


def _has_gpu(report: ProbeReport, framework: str) -> bool:
    side = report.frameworks.get(framework)
    return bool(side and (side.gpus or side.info.get("cuda_available")))


def _gpu_only(kind: str, message: str) -> bool:
    """A difference that cannot move a CPU-only step: TF32, cuDNN, CUDA, the GPU, NCCL."""
    return kind in GPU_KINDS or any(f" {k}." in message for k in ("cudnn", "cuda"))


def side_report(env: Any, source: str) -> ProbeReport:
    """A replaying side's fingerprint and framework info (as env.json holds them) as a probe report."""
    return _report(env, source)


def _local_report(framework: str) -> ProbeReport:
    return _report(
        {"fingerprint": fingerprint(), "framework": framework, "info": here_info(framework)}, "this host"
    )


def here_info(framework: str) -> dict[str, object]:
    if framework == "torch":
        import torch

        from envkit.guard.torch_adapter import TorchAdapter

        return TorchAdapter(torch.nn.Linear(1, 1), None).info()
    import paddle

    from envkit.guard.paddle_adapter import PaddleAdapter

    return PaddleAdapter(paddle.nn.Linear(1, 1), None).info()
