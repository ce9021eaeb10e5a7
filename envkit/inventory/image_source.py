"""``envkit snapshot --image``: the environment inside an image, read by a stdlib script in a container.

The script is the payload's ``snapshot.py``, the same functions that read this host. The image
needs only ``python`` on its PATH: the script reads ``conda-meta/*.json`` of
``sys.prefix`` (what ``conda list --json`` reports, without needing a conda binary: images whose
conda packages py-rattler installed have none) and the distributions importlib.metadata sees.
"""

from __future__ import annotations

from typing import Any

from envkit import payload
from envkit._io import load_json_bounded
from envkit.engine.in_image import InImage
from envkit.engine.protocol import ContainerEngine
from envkit.errors import InventoryError

__all__ = ["ImageSource"]

MAX_DEPTH = 8  # {"conda": [{"name": …}]}: 3 deep


def _checked(data: Any, image: str) -> dict[str, object]:
    """The script's output, shape-checked: an image's python may print anything (it is the image's)."""

    def bad(what: str) -> InventoryError:
        return InventoryError(
            f"unexpected output from {image}: {what}",
            hint="the image's python printed something else than envkit's snapshot script does; "
            "run the image by hand (is `python` on its PATH envkit's expected CPython?)",
        )

    if not isinstance(data, dict):
        raise bad(f"a JSON {type(data).__name__}, not an object")
    for key in ("python", "platform"):
        if not isinstance(data.get(key), str):
            raise bad(f"{key!r} is not a string")
    conda = data.get("conda")
    if conda is not None and not (isinstance(conda, list) and all(isinstance(r, dict) for r in conda)):
        raise bad("'conda' is not a list of records")
    pip = data.get("pip", [])
    if not (isinstance(pip, list) and all(isinstance(p, list) and len(p) == 2 for p in pip)):
        raise bad("'pip' is not a list of [name, version] pairs")
    if not isinstance(data.get("facts", {}), dict):
        raise bad("'facts' is not an object")
    return data


class ImageSource:
    """An ``EnvironmentSource`` over one run of the payload's ``snapshot.py`` in ``image``."""

    def __init__(self, engine: ContainerEngine, image: str) -> None:
        self.image = image
        # python3 or python, whichever the image has (a Debian base image has only python3)
        result = payload.run(InImage(engine, image), "snapshot.py", [])
        if result.code != 0:
            raise InventoryError(
                f"cannot read the environment in {image}: python exited {result.code}: "
                f"{result.stderr.strip()[-300:]}",
                hint="the image needs `python` on its PATH",
            )
        try:
            data = load_json_bounded(result.stdout.strip().splitlines()[-1], MAX_DEPTH)
        except (ValueError, IndexError) as e:
            raise InventoryError(f"unreadable output from {image}: {result.stdout[-300:]!r}",
                                 hint="run the image by hand: does python start?") from e  # fmt: skip
        self.data: dict[str, Any] = _checked(data, image)

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
