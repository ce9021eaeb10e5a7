"""A fleet run's numbers in brief: per task, which device, which setup, which bits, what the run said.

The history of a fleet (:mod:`envkit.fleet.history`) compares each device with its own past, run
after run, so it needs three keys per report, not the reports themselves:

- **device**: the node and the GPU (the UUID the framework reports), or on a CPU the host's id
  (``machine_id``), with ``CUDA_VISIBLE_DEVICES`` when a task was handed a (fake) GPU without a UUID;
- **setup**: a digest of everything that should make the numbers equal: the probe's configuration,
  the fingerprint (image, driver, CUDA stack, every distribution, switches, thread counts, envkit's
  version) and the frameworks' facts, less what names the task rather than the setup (host name,
  time, the host's id, GPU UUIDs, ``CUDA_VISIBLE_DEVICES``) and ``config.planted`` (a test's planted
  fault is as invisible to the history as a real one);
- **numbers**: a digest of every step's loss and grad norm and the final parameters (bitwise).

With them, each task's state in its run: ``majority``, ``suspect`` (same setup, other bits),
``explained`` (other bits, and the fingerprint says why), ``failed``, ``no-majority`` (a tie) or
``alone`` (nothing to compare with). A run's summary is computed once from its reports and cached
in ``STORE/RUN/.history/numbers.json`` once the run has ended.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from envkit._safe import one_line
from envkit.comparison.nway import PER_TASK, ManyComparison, compare_many, numbers_key
from envkit.errors import EnvkitError, FleetError
from envkit.probe.model import ProbeReport
from envkit.probe.shared_reports import SharedReader
from envkit.store import runs
from envkit.store.layout import HISTORY
from envkit.store.manifest import read_manifest
from envkit.store.reads import MAX_MANIFEST_BYTES, check_owned, read_store_json

__all__ = [
    "SUMMARY_FILE",
    "Entry",
    "RunNumbers",
    "device_key",
    "is_probe_run",
    "numbers_digest",
    "setup_digest",
    "summarize_run",
]

SUMMARY_FILE = "numbers.json"
VERSION = 1
STATES = ("majority", "suspect", "explained", "failed", "no-majority", "alone")
_VOLATILE = ("time", "host", "machine_id")


@dataclass(frozen=True)
class Entry:
    """One task of one run: its device, setup and numbers digests, and its state in the run."""

    task: str
    node: str
    device: str | None  # None: the task failed before it said which device it had
    setup: str | None
    setup_label: str | None
    numbers: str | None
    state: str
    reason: str | None = None

    @staticmethod
    def from_json(data: Mapping[str, object]) -> Entry:
        """An entry of a summary this user wrote (its texts were made one line when it was written)."""

        def text(key: str, limit: int = 2000) -> str | None:
            value = data.get(key)
            return value[:limit] if isinstance(value, str) else None

        state, task = text("state"), text("task", 200)
        if state not in STATES or not task:
            raise ValueError(f"not an entry: state {state!r}, task {task!r}")
        return Entry(task, text("node", 200) or task, text("device", 400), text("setup"),
                     text("setup_label"), text("numbers"), state, text("reason"))  # fmt: skip


@dataclass(frozen=True)
class RunNumbers:
    """A run in brief: its id, when it was made, one entry per task."""

    run: str
    created: float
    entries: tuple[Entry, ...]

    def to_json(self) -> dict[str, object]:
        return {"version": VERSION, "run": self.run, "created": self.created,
                "entries": [asdict(e) for e in self.entries]}  # fmt: skip

    @staticmethod
    def from_json(data: Mapping[str, object]) -> RunNumbers:
        entries = data.get("entries")
        created = data.get("created")
        if data.get("version") != VERSION or not isinstance(entries, list) or not isinstance(created, float):
            raise ValueError("not a run summary of this envkit")
        return RunNumbers(str(data.get("run")), created, tuple(Entry.from_json(e) for e in entries))


def _digest(value: object) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _gpu_uuid(report: ProbeReport) -> str | None:
    return next((g.uuid for fw in report.frameworks.values() for g in fw.gpus if g.uuid), None)


def device_key(report: ProbeReport, node: str) -> str:
    """``node:GPU-UUID``, or ``node:host-id`` on a CPU (``#CUDA_VISIBLE_DEVICES`` for a GPU without UUID)."""
    uuid = _gpu_uuid(report) if report.config.get("device") == "cuda" else None
    if uuid:
        return f"{node}:{uuid}"
    host_id = str(report.fingerprint.get("machine_id") or "host")[:12]
    visible = report.fact("env").get("CUDA_VISIBLE_DEVICES")
    return f"{node}:{host_id}" + (f"#{visible}" if visible not in (None, "") else "")


def _framework_facts(report: ProbeReport) -> dict[str, object]:
    out: dict[str, object] = {}
    for name, run in sorted(report.frameworks.items()):
        info = {k: v for k, v in run.info.items() if k != "gpus"}
        out[name] = {"info": info, "gpus": [(g.name, g.capability) for g in run.gpus], "status": run.status}
    return out


def setup_digest(report: ProbeReport) -> str:
    """What should make two reports' numbers equal, as one digest (see the module's docstring)."""
    config = {k: v for k, v in report.config.values.items() if k != "planted"}
    fingerprint = {k: v for k, v in report.fingerprint.items() if k not in _VOLATILE}
    env = report.fact("env")
    fingerprint["env"] = {k: v for k, v in env.items() if k not in PER_TASK and k != "NVIDIA_VISIBLE_DEVICES"}
    container = report.fact("container")
    if container:
        fingerprint["container"] = {k: v for k, v in container.items() if k != "hostname"}
    return _digest({"config": config, "fingerprint": fingerprint, "frameworks": _framework_facts(report)})


def setup_label(report: ProbeReport) -> str:
    """The setup for a person: image, driver, envkit, mode and threads."""
    image = report.fact("container").get("image_id")
    parts = [
        f"image {str(image)[:19]}" if image else "host",
        f"driver {report.fingerprint.get('gpu_driver') or 'none'}",
        f"envkit {report.fingerprint.get('envkit_version') or '?'}",
        str(report.config.mode),
        f"threads {report.config.get('threads') or 'default'}",
    ]
    return ", ".join(parts)


def numbers_digest(report: ProbeReport) -> str:
    return _digest(repr(numbers_key(report)))


def _states(named: Sequence[tuple[str, ProbeReport]]) -> dict[str, tuple[str, str | None]]:
    """Each report's state in the run, by comparing them (N-way, :func:`compare_many`)."""
    if len(named) < 2:
        return {n: ("alone", "the only report of its run") for n, _ in named}
    try:
        result: ManyComparison = compare_many(named)
    except EnvkitError as e:
        return {n: ("alone", f"not comparable: {e.message}") for n, _ in named}
    states: dict[str, tuple[str, str | None]] = {}
    if result.majority is None:
        states = {n: ("no-majority", "a tie: no group is the largest") for n, _ in named}
    else:
        states = dict.fromkeys(result.groups[0].members, ("majority", None))
    for o in result.outliers:
        if o.suspect:
            states[o.name] = ("suspect", o.reason)
        elif o.causes:
            states[o.name] = ("explained", f"{o.band.value}: {o.causes[0].message}")
        else:
            states[o.name] = ("suspect", f"{o.band.value}, and the fingerprints name no cause")
    return states


def is_probe_run(manifest: Mapping[str, object]) -> bool:
    """A fleet probe's ``run.json`` (a guard replay's has a ``kind`` and no probe options)."""
    return "options" in manifest and "kind" not in manifest


def summarize_run(run_dir: Path) -> RunNumbers:
    """The run's summary, from its cache when the run has ended and the cache is this envkit's."""
    cache = run_dir / HISTORY / SUMMARY_FILE
    try:  # a summary only this user (or root) could have written; anything else is recomputed
        check_owned(cache, "run summary")
        return RunNumbers.from_json(read_store_json(cache, limit=MAX_MANIFEST_BYTES * 16, what="run summary"))
    except (OSError, ValueError, KeyError, TypeError, EnvkitError):
        pass
    manifest = read_manifest(run_dir)
    if not is_probe_run(manifest.document):
        raise FleetError(f"{run_dir}: not a fleet probe run", hint="the history reads `envkit probe` runs")
    named, failed = runs.load_run(run_dir, SharedReader().load)
    states = _states(named)
    entries = []
    for name, report in named:  # every text one line: the reports and task records are hostile input
        node = one_line(report.fleet.node if report.fleet is not None and report.fleet.node else name)[:200]
        state, reason = states[name]
        entries.append(Entry(name, node, one_line(device_key(report, node))[:400], setup_digest(report),
                             one_line(setup_label(report)), numbers_digest(report), state,
                             one_line(reason)[:2000] if reason else None))  # fmt: skip
    records = runs.read_tasks(run_dir)
    for name, why in failed:
        record = records.get(name)
        entries.append(Entry(name, record.node if record else name, None, None, None, None, "failed",
                             one_line(why)[:2000]))  # fmt: skip
    created = manifest.document.get("created")
    summary = RunNumbers(manifest.run, float(created) if isinstance(created, int | float) else time.time(),
                         tuple(entries))  # fmt: skip
    if manifest.result:  # the run has ended: its summary will not change (a store we cannot write: no cache)
        with contextlib.suppress(EnvkitError, OSError):
            runs.write_json(cache, summary.to_json(), within=run_dir)
    return summary
