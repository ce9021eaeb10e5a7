"""The guard corpus's records: one ``scripts/NAME.yaml`` beside each vendored ``scripts/NAME.py``.

.. code-block:: yaml

    source: {repo: owner/name, path: where/in/repo, commit: <40 hex>, url: ..., licence: <SPDX id>}
    entry: name:build             # the replay entry (module in scripts/, returns model, optimizer, loss_fn)
    launch: python | torchrun     # torchrun: 2 processes, gloo (the DDP scripts)
    covers: [fp32, workers, ...]  # the corpus classes the script exercises (CLASSES)
    cases:
      healthy: {args: [...], steps: N, ci_args: [...], ci_steps: M}
      FAULT:                      # fault: KIND@STEP, planted by scripts/_plant.py (ENVKIT_GC_FAULT)
        fault: nan-batch@40
        args: [...]
        steps: N                  # the steps the run trains when it goes on to the end
        ci: true                  # in the pytest subset (tests/integration/test_guard_corpus.py)
        expect:                   # written BEFORE envkit ran: what a careful user expects
          step: 40                # the step the incident is at (within: K more steps allowed)
          kinds: [nonfinite-loss] # acceptable incident kinds
          action: skipped         # optional: what the policy must have done
          place: regex            # where: the tensor/index, module or parameter the text must name
          cause: regex            # why: the cause the text must say
          not_says: regex         # what the incident's text must not say (a wrong cause)
          replay: reproducible    # `envkit guard replay DUMP --entry ENTRY`'s verdict
          continues: true         # the run trains to the end (false: it must stop, GuardStopped)

Every regex is searched (case-insensitive) in the incident's message, localization and context as JSON.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent
SCRIPTS = ROOT / "scripts"
CLASSES = (
    "fp32", "fp16-scaler", "bf16", "accumulation", "ddp", "workers", "sched-step", "sched-epoch",
    "warmup", "onecycle", "plateau", "lightning", "hf-loop", "hapi", "paddle",
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Expect:
    step: int
    kinds: tuple[str, ...]
    within: int = 0
    action: str | None = None
    place: str | None = None
    cause: str | None = None
    not_says: str | None = None
    replay: str | None = None
    continues: bool = True


@dataclasses.dataclass(frozen=True)
class Case:
    script: str
    name: str
    args: tuple[str, ...]
    steps: int
    fault: str | None
    expect: Expect | None
    ci: bool

    @property
    def label(self) -> str:
        return f"{self.script}/{self.name}"


@dataclasses.dataclass(frozen=True)
class Script:
    name: str
    path: Path
    entry: str
    launch: str
    covers: tuple[str, ...]
    source: Mapping[str, Any]
    cases: tuple[Case, ...]


def _expect(doc: Mapping[str, Any] | None) -> Expect | None:
    if not doc:
        return None
    fields = {f.name for f in dataclasses.fields(Expect)}
    unknown = set(doc) - fields
    if unknown:
        raise ValueError(f"expect: unknown keys {sorted(unknown)}")
    return Expect(**{**doc, "kinds": tuple(doc["kinds"])})


def _cases(name: str, doc: Mapping[str, Any], ci_subset: bool) -> Iterator[Case]:
    for case_name, case in doc.items():
        args = case.get("args") or []
        steps = int(case["steps"])
        if ci_subset and case_name == "healthy":
            args, steps = case.get("ci_args", args), int(case.get("ci_steps", steps))
        yield Case(
            script=name,
            name=case_name,
            args=tuple(str(a) for a in args),
            steps=steps,
            fault=case.get("fault"),
            expect=_expect(case.get("expect")),
            ci=bool(case.get("ci", case_name == "healthy")),
        )


def load(root: Path = SCRIPTS, *, ci_subset: bool = False) -> list[Script]:
    """Every script with its record, sorted by name; ``ci_subset``: the healthy runs' CI sizes."""
    found = []
    for meta in sorted(root.glob("*.yaml")):
        doc = yaml.safe_load(meta.read_text(encoding="utf-8"))
        covers = tuple(doc.get("covers") or ())
        bad = [c for c in covers if c not in CLASSES]
        if bad:
            raise ValueError(f"{meta}: covers: unknown classes {bad}")
        found.append(
            Script(
                name=meta.stem,
                path=meta.with_suffix(".py"),
                entry=str(doc["entry"]),
                launch=str(doc.get("launch", "python")),
                covers=covers,
                source=doc["source"],
                cases=tuple(_cases(meta.stem, doc["cases"], ci_subset)),
            )
        )
    return found


def ci_cases(script: Script) -> Script:
    """The script with only its CI subset's cases (``ci: true``, and the healthy run)."""
    return dataclasses.replace(script, cases=tuple(c for c in script.cases if c.ci))
