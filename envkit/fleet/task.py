"""One task of a fleet run, on its node: ``python -m envkit.fleet.task STORE/RUN``.

Reads the run's manifest, names itself after its node (``ENVKIT_NODE`` from the local scheduler,
``SLURMD_NODENAME`` under Slurm, else the host name; ``-<k>`` when a node runs several tasks),
records ``running`` in ``.tasks/<task>.json``, runs the probe (on the node, or in the run's image
through the node's Docker engine: pulled by digest, or loaded from the store's tar and checked
by image id), writes ``<task>.json`` and records ``ok`` or ``failed`` with the error.
With ``repeat`` > 1 the probe runs that many times and the report says whether the reruns agree bitwise.
The manifest is trusted only when this user owns it and nobody else can write it, and only its
allow-listed fields are used (:mod:`envkit.fleet.run_plan`); an image tar is checked before it is
loaded (:mod:`envkit.fleet.image_tar`). Exit 0 when the report was written, 3 otherwise.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from envkit._atomic import write_text_atomic
from envkit._safe import one_line
from envkit.errors import EnvkitError
from envkit.fleet.image_tar import load_checked_tar
from envkit.fleet.repeat import repeat_summary
from envkit.fleet.run_plan import FleetImage, parse_manifest
from envkit.probe.additions import FleetInfo
from envkit.probe.model import ProbeReport
from envkit.probe.report import dump_report
from envkit.probe.runner import ProbeOptions, run_in_image, run_on_host
from envkit.store import layout, runs
from envkit.store.manifest import RunManifest, read_manifest
from envkit.store.reads import check_owned

__all__ = ["main", "run_recorded", "run_task", "task_identity", "task_main"]


def task_identity(environ: Mapping[str, str], tasks_per_node: int) -> tuple[str, str]:
    """(task name, node name) from the scheduler's environment."""
    node = environ.get("ENVKIT_NODE") or environ.get("SLURMD_NODENAME") or socket.gethostname()
    local = environ.get("ENVKIT_LOCALID") or environ.get("SLURM_LOCALID") or "0"
    return layout.task_name(node, int(local) if local.isdigit() else 0, tasks_per_node), node


Probe = Callable[[ProbeOptions, str], ProbeReport]


def _image_probe(image: FleetImage, node: str) -> Probe:
    """Run in the run's image on this node's engine; make the image present first, by digest."""
    from envkit.engine.docker_api import DockerEngine
    from envkit.engine.docker_store import DockerImageStore

    engine = DockerEngine()
    store = DockerImageStore(engine)
    ref = str(image.ref or image.id)
    if engine.inspect(ref) is None:
        if image.tar is not None and image.id is not None:
            load_checked_tar(store, image.tar, image.id)
        else:
            store.pull(ref)

    def probe(opts: ProbeOptions, label: str) -> ProbeReport:
        return run_in_image(engine, ref, opts, label=label, host=node)

    return probe


Work = Callable[[RunManifest, str, str], Path]  # (the owned manifest, task, node) -> the result written


def run_recorded(
    run_dir: Path,
    environ: Mapping[str, str],
    work: Work,
    *,
    errors: tuple[type[Exception], ...] = (EnvkitError, OSError, KeyError, ValueError),
) -> int:
    """A task's record around ``work``: ``running``, then ``ok`` with the result's name or ``failed``.

    ``work`` gets the manifest only after :func:`~envkit.store.manifest.read_manifest` found it this
    user's own; what it raises of ``errors`` is the task's failure (its record, a message, exit 3),
    anything else propagates.
    """
    manifest = read_manifest(run_dir, owned=True)  # nothing another user wrote runs here
    name, node = task_identity(environ, manifest.tasks_per_node)
    record_path = run_dir / layout.TASKS / f"{name}.json"
    base = {"task": name, "node": node, "pid": os.getpid(), "started": time.time()}
    (run_dir / layout.TASKS).mkdir(exist_ok=True)  # in a run directory only this user can write (checked)
    check_owned(run_dir / layout.TASKS, "task records directory")
    runs.write_json(record_path, {**base, "state": "running"}, within=run_dir)
    try:
        path = work(manifest, name, node)
    except errors as e:
        message = e.message if isinstance(e, EnvkitError) else f"{type(e).__name__}: {e}"
        failed = {**base, "state": "failed", "error": message, "ended": time.time()}
        runs.write_json(record_path, failed, within=run_dir)
        print(f"envkit task {name}: {one_line(message)}", file=sys.stderr)
        return 3
    runs.write_json(
        record_path, {**base, "state": "ok", "report": path.name, "ended": time.time()}, within=run_dir
    )
    return 0


def _task_options(opts: ProbeOptions, run: str, task: str, rerun: int) -> ProbeOptions:
    """The probe's options for one rerun of this task: the run, task and rerun in its environment
    (a planted fault, ``ENVKIT_TEST_PERTURB``, decides per run by them; see docs/guides/fleet.md)."""
    tags = {"ENVKIT_FLEET_RUN": run, "ENVKIT_FLEET_TASK": task, "ENVKIT_FLEET_REPEAT": str(rerun)}
    return replace(opts, env={**opts.env, **tags})


def run_task(
    run_dir: Path,
    environ: Mapping[str, str],
    *,
    make_probe: Callable[[FleetImage, str], Probe] | None = None,
) -> int:
    def work(stored: RunManifest, name: str, node: str) -> Path:
        manifest = parse_manifest(stored, run_dir)
        opts = manifest.options
        if manifest.image is not None:
            probe = (make_probe or _image_probe)(manifest.image, node)
        else:

            def probe(o: ProbeOptions, label: str) -> ProbeReport:
                return run_on_host(o, label=label)

        reports = [probe(_task_options(opts, manifest.run, name, i), manifest.run)
                   for i in range(manifest.layout.repeat)]  # fmt: skip
        fleet = FleetInfo(manifest.run, name, node, environ.get("SLURM_JOB_ID"), repeat_summary(reports))
        report = reports[0].with_fleet(fleet)
        path = run_dir / f"{name}.json"
        write_text_atomic(path, dump_report(report), within=run_dir)
        return path

    return run_recorded(run_dir, environ, work)


def task_main(argv: list[str] | None, run: Callable[[Path, Mapping[str, str]], int], usage: str) -> int:
    """A task's command line: ``STORE/RUN`` only; an unusable manifest is a message and exit 3."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(f"usage: {usage}", file=sys.stderr)
        return 2
    try:
        return run(Path(args[0]), os.environ)
    except EnvkitError as e:  # the manifest itself is unusable (or not this user's): no record is written
        print(f"envkit task: {one_line(e.message)}", file=sys.stderr)
        return 3


def main(argv: list[str] | None = None) -> int:
    return task_main(argv, run_task, "python -m envkit.fleet.task STORE/RUN")


if __name__ == "__main__":
    sys.exit(main())
