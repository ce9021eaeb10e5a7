"""One task of a fleet run, on its node: ``python -m envkit.fleet.task STORE/RUN``.

Reads the run's manifest, names itself after its node (``ENVKIT_NODE`` from the local scheduler,
``SLURMD_NODENAME`` under Slurm, else the host name; ``-<k>`` when a node runs several tasks),
records ``running`` in ``.tasks/<task>.json``, runs the probe (on the node, or in the run's image
through the node's Docker engine: pulled by digest, or loaded from the store's tar and checked
by image id), writes ``<task>.json`` and records ``ok`` or ``failed`` with the error.
With ``repeat`` > 1 the probe runs that many times and the report says whether the reruns agree bitwise.
Exit 0 when the report was written, 3 otherwise.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from envkit._atomic import write_text_atomic
from envkit.errors import EnvkitError, ProbeError
from envkit.fleet import store
from envkit.fleet.repeat import repeat_summary
from envkit.probe.additions import FleetInfo
from envkit.probe.model import ProbeReport
from envkit.probe.report import dump_report
from envkit.probe.runner import ProbeOptions, run_in_image, run_on_host

__all__ = ["main", "options_from_json", "run_task", "task_identity"]


def options_from_json(data: Mapping[str, Any]) -> ProbeOptions:
    fields = dict(data)
    for key in ("frameworks", "workloads"):
        fields[key] = tuple(fields[key])
    return ProbeOptions(**fields)


def task_identity(environ: Mapping[str, str], tasks_per_node: int) -> tuple[str, str]:
    """(task name, node name) from the scheduler's environment."""
    node = environ.get("ENVKIT_NODE") or environ.get("SLURMD_NODENAME") or socket.gethostname()
    local = environ.get("ENVKIT_LOCALID") or environ.get("SLURM_LOCALID") or "0"
    return store.task_name(node, int(local) if local.isdigit() else 0, tasks_per_node), node


Probe = Callable[[ProbeOptions, str], ProbeReport]


def _image_probe(image: Mapping[str, Any], node: str) -> Probe:
    """Run in the run's image on this node's engine; make the image present first, by digest."""
    from envkit.engine.docker_api import DockerEngine
    from envkit.engine.docker_transport import DockerTransport

    engine = DockerEngine()
    transport = DockerTransport(engine)
    ref = str(image.get("ref") or image["id"])
    if engine.inspect(ref) is None:
        if image.get("tar"):
            loaded = transport.load(Path(image["tar"]))
            if image["id"] not in loaded:
                raise ProbeError(
                    f"the image tar {image['tar']} held {', '.join(loaded) or 'nothing'}, not {image['id']}",
                    hint="the store's copy is damaged or was replaced: rerun `envkit probe --slurm --image`",
                )
        else:
            transport.pull(ref)

    def probe(opts: ProbeOptions, label: str) -> ProbeReport:
        return run_in_image(engine, ref, opts, label=label, host=node)

    return probe


def run_task(
    run_dir: Path,
    environ: Mapping[str, str],
    *,
    make_probe: Callable[[Mapping[str, Any], str], Probe] | None = None,
) -> int:
    manifest = store.read_manifest(run_dir)
    name, node = task_identity(environ, int(manifest.get("tasks_per_node", 1)))
    record_path = run_dir / store.TASKS / f"{name}.json"
    base = {"task": name, "node": node, "pid": os.getpid(), "started": time.time()}
    store.write_json(record_path, {**base, "state": "running"})
    try:
        opts = options_from_json(manifest["options"])
        image = manifest.get("image")
        if image:
            probe = (make_probe or _image_probe)(image, node)
        else:

            def probe(o: ProbeOptions, label: str) -> ProbeReport:
                return run_on_host(o, label=label)

        reports = [probe(opts, manifest["run"]) for _ in range(max(1, int(manifest.get("repeat", 1))))]
        fleet = FleetInfo(manifest["run"], name, node, environ.get("SLURM_JOB_ID"), repeat_summary(reports))
        report = reports[0].with_fleet(fleet)
        path = run_dir / f"{name}.json"
        write_text_atomic(path, dump_report(report))
    except (EnvkitError, OSError, KeyError, ValueError) as e:
        message = e.message if isinstance(e, EnvkitError) else f"{type(e).__name__}: {e}"
        store.write_json(record_path, {**base, "state": "failed", "error": message, "ended": time.time()})
        print(f"envkit task {name}: {message}", file=sys.stderr)
        return 3
    store.write_json(record_path, {**base, "state": "ok", "report": path.name, "ended": time.time()})
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m envkit.fleet.task STORE/RUN", file=sys.stderr)
        return 2
    return run_task(Path(args[0]), os.environ)


if __name__ == "__main__":
    sys.exit(main())
