"""Running a fleet task inside the image through pyxis (``srun --container-image``), where the cluster has it.

The image is not expected to hold envkit: each task runs the probe payload (standard library +
framework) mounted read-only from this envkit, and a small POSIX shell script does what
:mod:`envkit.fleet.task` does on the host (the task's record, the report written atomically into
``STORE/RUN``). Pyxis imports images through enroot, whose URIs separate the registry with ``#``
(``docker://REGISTRY#REPO@sha256:…``); the image must come from a registry (``build --push``).
"""

from __future__ import annotations

import re
from pathlib import Path

from envkit import payload
from envkit.errors import UsageError

__all__ = ["CONTAINER_PAYLOAD", "TASK_SCRIPT", "enroot_uri", "pyxis_argv", "pyxis_mounts"]

CONTAINER_PAYLOAD = payload.CONTAINER_PAYLOAD

# $1: the run directory; the rest: the payload's arguments. Same records as envkit.fleet.task.
TASK_SCRIPT = (
    r"""set -u
run=$1; shift
node=$(printf '%s' "${SLURMD_NODENAME:-$(hostname)}" | tr -c 'A-Za-z0-9._-' '_')
task=$node
if [ "${ENVKIT_TASKS_PER_NODE:-1}" -gt 1 ]; then task="$node-${SLURM_LOCALID:-0}"; fi
mkdir -p "$run/.tasks"
set -C  # noclobber: `>` creates its file exclusively (O_EXCL), never writing through a planted link
record() {
  rm -f "$run/.tasks/.$task.tmp"
  printf '{"task": "%s", "node": "%s", "state": "%s", "pid": %s%s}\n' "$task" "$node" "$1" $$ "$2" \
    > "$run/.tasks/.$task.tmp" && mv -f "$run/.tasks/.$task.tmp" "$run/.tasks/$task.json"
}
record running ""
"""
    + payload.find_python()
    + r""" || {
  record failed ', "error": "no python in the image"'; exit 3; }
payload="""
    + payload.container_path("run.py", f"${{ENVKIT_PAYLOAD:-{CONTAINER_PAYLOAD}}}")
    + r"""
rm -f "$run/.$task.json.tmp" "$run/.tasks/$task.err"
if "$py" "$payload" "$@" > "$run/.$task.json.tmp" 2> "$run/.tasks/$task.err"; then
  mv "$run/.$task.json.tmp" "$run/$task.json"
  record ok ", \"report\": \"$task.json\""
else
  code=$?
  rm -f "$run/.$task.json.tmp"
  record failed ", \"error\": \"the payload exited $code in the container (see .tasks/$task.err)\""
  exit 3
fi
"""
)


def enroot_uri(ref: str) -> str:
    """``REGISTRY/REPO@sha256:…`` as enroot wants it: ``docker://REGISTRY#REPO@sha256:…``."""
    if "@sha256:" not in ref:
        raise UsageError(
            f"pyxis runs images by digest, not {ref}",
            hint="push the image (envkit build NAME --push REGISTRY) and give --image NAME or REPO@sha256:…",
        )
    head, _, rest = ref.partition("/")
    if rest and re.search(r"[.:]|^localhost\Z", head):
        return f"docker://{head}#{rest}"
    return f"docker://{ref}"


def pyxis_argv(run_dir: Path, payload_args: tuple[str, ...]) -> tuple[str, ...]:
    return ("sh", "-c", TASK_SCRIPT, "envkit-task", str(run_dir), *payload_args)


def pyxis_mounts(run_dir: Path) -> tuple[str, ...]:
    return (f"{run_dir}:{run_dir}", f"{payload.PAYLOAD_DIR}:{CONTAINER_PAYLOAD}:ro")
