"""Which reader a ``--from`` source goes to: a file (by name and content), ``image:REF`` or ``host``.

Every reader of a file has one signature (:data:`~envkit.adopt.sources.reader.Reader`); an image
or this host is read by ``envkit snapshot``, its inventory then read as any listing is."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from envkit._io import TooLarge, read_text_bounded
from envkit.adopt.evidence import AdoptError, Collected
from envkit.adopt.sources.conda_env import read_conda_env
from envkit.adopt.sources.dockerfile import looks_like_dockerfile, read_dockerfile
from envkit.adopt.sources.inventory import (
    collect_inventory,
    host_local_installs,
    read_inventory,
    snapshot_inventory,
)
from envkit.adopt.sources.reader import Read, SourceText
from envkit.adopt.sources.requirements import read_requirements
from envkit.inventory import FORMATS, Inventory, detect_format
from envkit.inventory.read import MAX_INVENTORY_BYTES
from envkit.inventory.snapshot import EnvironmentSource, LocalSource, take_snapshot

__all__ = ["SOURCE_KINDS", "ImageReader", "read_source"]

SOURCE_KINDS = (
    "environment.yml (conda env export, --from-history or hand-written; pip: section)",
    "requirements.txt / pip freeze / pip list --format=json",
    "a Dockerfile",
    "pixi.toml; pyproject.toml ([project] with uv's [tool.uv] sources and indexes, or [tool.pixi])",
    f"any inventory envkit diff reads ({', '.join(FORMATS)})",
    "image:REF (a container image)",
    "host (this machine's environment)",
)
_REQUIREMENTS_NAME = re.compile(r"(^|[-_.])(requirements?|reqs)([-_.].*)?\.(txt|in)\Z", re.I)

ImageReader = Callable[[str], EnvironmentSource]
_CONDA_HEADER = "# $ conda create --name <env> --file <this file>"


def read_source(source: str, *, image_reader: ImageReader | None = None) -> Read:
    """What ``source`` says, and its inventory when ``envkit diff`` can read it (for ``--lock``)."""
    if source == "host":
        return _snapshot("host", LocalSource(), local=host_local_installs())
    if source.startswith("image:"):
        ref = source.removeprefix("image:")
        if not ref or image_reader is None:
            raise AdoptError(
                "image: needs a reference, e.g. image:pytorch/pytorch:2.1.2-cuda12.1-cudnn8-runtime",
                hint="envkit init --from image:REF",
            )
        return _snapshot(source, image_reader(ref), local={})
    path = Path(source)
    if not path.is_file():
        raise AdoptError(f"{source}: no such file", hint="pass a file, image:REF or host")
    try:
        text = read_text_bounded(path, MAX_INVENTORY_BYTES)
    except TooLarge as e:
        raise AdoptError(
            f"{source}: larger than {e.limit} bytes: not an environment source; nothing was written",
            hint="check the path",
        ) from e
    except UnicodeDecodeError as e:
        raise AdoptError(f"{source}: not UTF-8 text (byte {e.start})", hint="is this a binary file?") from e
    return _file(path, text, source)


def _file(path: Path, text: str, label: str) -> Read:
    """The reader of the file's format (:data:`~envkit.adopt.sources.reader.Reader`), by name and content."""
    if looks_like_dockerfile(path, text):
        return read_dockerfile(SourceText(path, text, label))
    fmt = detect_format(text)
    if fmt is None and _CONDA_HEADER in text:
        fmt = "conda-export"  # rows above conda's own header hide it from the sniffer: the header decides
    source = SourceText(path, text, label, fmt)
    if fmt == "env-export" or (fmt is None and path.suffix in (".yml", ".yaml") and "dependencies" in text):
        return read_conda_env(source)
    # `torch>=2.4` also reads as name=version; conda's own header says what the file is, whatever its name
    named = _REQUIREMENTS_NAME.search(path.name) is not None and _CONDA_HEADER not in text
    if (
        fmt in ("pip-freeze", "requirements-lock")
        or (fmt in (None, "conda-export") and named)
        or (fmt is None and path.suffix == ".txt")
    ):
        return read_requirements(source)
    if fmt is None:
        raise AdoptError(
            f"{label}: not a source envkit init reads; nothing was written",
            hint="envkit init --from reads: " + "; ".join(SOURCE_KINDS),
        )
    return read_inventory(source)


def _snapshot(label: str, source: EnvironmentSource, *, local: dict[str, str]) -> tuple[Collected, Inventory]:
    inventory = snapshot_inventory(take_snapshot(source), label)
    found = Collected(label, "snapshot")
    collect_inventory(inventory, found)
    if local:
        names = {_canonical(n): url for n, url in local.items()}
        for pin in [p for p in found.pip if p.name in names]:
            found.pip.remove(pin)
            found.lose(
                label,
                f"{pin.spec} @ {names[pin.name]}",
                "installed from a directory or VCS here (PEP 610): not carried",
            )
    return found, inventory


def _canonical(name: str) -> str:
    from envkit._pep503 import canonicalize_name

    return canonicalize_name(name)
