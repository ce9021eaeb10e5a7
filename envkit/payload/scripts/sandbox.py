"""How the readiness payload opens libraries on the HOST (``envkit check --site DIR``). Stdlib only.

Opening a shared library runs its constructors: the code of whoever made DIR. On the host each load
runs in a child process with the environment emptied (``LD_LIBRARY_PATH`` kept: it decides what
loads, and is what the check is about), a fresh scratch working directory (removed after), and no
network where the platform allows it: ``unshare -n`` as root, ``unshare -rn`` (a user namespace)
otherwise. Where neither works the loads still run, and the report says the network was not
isolated and why. Inside an image (``envkit check IMAGE``) the container already has no network,
and none of this applies.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

PROBE_TIMEOUT = 10


class Sandbox:
    """How a child that opens a library is started: argv prefix, environment, working directory."""

    def __init__(self) -> None:
        self.prefix, self.network = self._network()
        self.env = {k: v for k, v in os.environ.items() if k == "LD_LIBRARY_PATH"}

    @staticmethod
    def _network() -> tuple[list[str], str]:
        exe = shutil.which("unshare")
        if exe is None:
            return [], "not isolated: no unshare command on this host"
        flags = "-n" if os.geteuid() == 0 else "-rn"
        argv = [exe, flags, "--", sys.executable, "-c", "pass"]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT, check=False)
        except (OSError, subprocess.SubprocessError) as e:
            return [], f"not isolated: unshare {flags} failed ({type(e).__name__})"
        if proc.returncode != 0:
            why = " ".join((proc.stderr or "").split())[:200] or f"exit {proc.returncode}"
            return [], f"not isolated: unshare {flags} refused ({why})"
        return [exe, flags, "--"], f"none (unshare {flags})"

    def run(self, argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
        scratch = tempfile.mkdtemp(prefix="envkit-load-")
        try:
            return subprocess.run(
                self.prefix + argv,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
                env=dict(self.env),
                cwd=scratch,
            )
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def describe(self) -> dict[str, object]:
        kept = ", ".join(sorted(self.env)) or "nothing"
        return {
            "environment": f"emptied (kept: {kept})",
            "cwd": "a scratch directory, removed after",
            "network": self.network,
        }
