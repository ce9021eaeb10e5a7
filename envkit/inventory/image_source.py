"""``envkit snapshot --image``: the environment inside an image, read by a stdlib script in a container.

The image needs only ``python`` on its PATH: the script reads ``conda-meta/*.json`` of
``sys.prefix`` (what ``conda list --json`` reports, without needing a conda binary: images whose
conda packages py-rattler installed have none) and the distributions importlib.metadata sees.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from envkit.build.engine import ContainerEngine
from envkit.errors import InventoryError

__all__ = ["SCRIPT", "ImageSource"]

# The host facts (OS, libc, CPU, NVIDIA driver and GPUs) come from snapshot_payload's functions,
# sent along: one implementation for the host and for images.
_PAYLOAD = resources.files("envkit.inventory").joinpath("snapshot_payload.py").read_text("utf-8")
SCRIPT = (
    _PAYLOAD
    + """
import json, platform, socket, sys
from importlib import metadata
from pathlib import Path
conda = None
meta = Path(sys.prefix) / "conda-meta"
if meta.is_dir():
    conda = []
    for path in sorted(meta.glob("*.json")):
        try:
            r = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        conda.append({"name": r.get("name"), "version": r.get("version"), "build_string": r.get("build"),
                      "channel": str(r.get("channel") or "") or None,
                      "platform": r.get("subdir")})
pip = {}
for dist in metadata.distributions():
    name = dist.metadata["Name"]
    if name:
        pip.setdefault(name, dist.version)
print(json.dumps({"host": socket.gethostname(), "python": platform.python_version(),
                  "platform": sys.platform + "-" + platform.machine(), "conda": conda,
                  "pip": sorted(pip.items()), "facts": host_facts()}))
"""
)


class ImageSource:
    """An ``EnvironmentSource`` over one run of :data:`SCRIPT` in ``image``."""

    def __init__(self, engine: ContainerEngine, image: str) -> None:
        self.image = image
        # python3 or python, whichever the image has (a Debian base image has only python3)
        find = 'exec "$(command -v python3 || command -v python)" -c "$0"'
        result = engine.run(image, ["sh", "-c", find, SCRIPT])
        if result.exit_code != 0:
            raise InventoryError(
                f"cannot read the environment in {image}: python exited {result.exit_code}: "
                f"{result.stderr.strip()[-300:]}",
                hint="the image needs `python` on its PATH",
            )
        try:
            self.data: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError) as e:
            raise InventoryError(f"unreadable output from {image}: {result.stdout[-300:]!r}",
                                 hint="run the image by hand: does python start?") from e  # fmt: skip

    def host(self) -> str:
        """The image's reference as a store name: ``envkit/x:latest`` -> ``envkit_x_latest``."""
        return self.image.replace("/", "_").replace(":", "_").replace("@", "_")

    def python(self) -> str:
        return str(self.data["python"])

    def platform(self) -> str:
        return str(self.data["platform"])

    def conda_records(self) -> list[dict[str, Any]] | None:
        conda = self.data.get("conda")
        return list(conda) if isinstance(conda, list) else None

    def distributions(self) -> list[tuple[str, str]]:
        return [(str(n), str(v)) for n, v in self.data.get("pip", [])]

    def facts(self) -> dict[str, str]:
        facts = self.data.get("facts")
        return {str(k): str(v) for k, v in facts.items()} if isinstance(facts, dict) else {}
