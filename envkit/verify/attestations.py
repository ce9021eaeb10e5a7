"""An image's SBOM and provenance checked against the committed lock (part of ``envkit verify``).

Findings, never tracebacks: a missing, truncated, huge or deeply nested file, an SBOM whose
sha256 is not the image's ``io.envkit.sbom-sha256`` label, an SBOM listing packages the lock does
not have (or missing some it has), a provenance statement naming another image, lock or base.
The SBOM is read once, at most :data:`~envkit.sbom.carried.MAX_SBOM_BYTES` + 1 bytes of a regular
file (no link, FIFO or device: a sparse file of any size costs no more), hashed, and parsed from
those bytes by the inventory reader (bounded depth, :mod:`envkit.inventory.readers_sbom`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

from envkit._io import NotRegular, TooLarge, open_regular, read_limited
from envkit.errors import EnvkitError
from envkit.inventory import parse_inventory
from envkit.inventory.names import canonical
from envkit.lock import LockState
from envkit.render.dockerfile import LOCK_LABEL
from envkit.sbom.carried import MAX_SBOM_BYTES
from envkit.sbom.cyclonedx import SBOM_LABEL, SBOM_NAME
from envkit.sbom.provenance import materials_of, provenance_path, read_provenance

__all__ = ["check_provenance", "check_sbom"]

_SHOWN = 10


def _lock_packages(lock: LockState) -> set[tuple[str, str, str]]:
    if lock.lock is None:
        return set()
    contents = lock.lock.contents
    found = {("conda", p.name.lower(), p.version) for ps in contents.conda.values() for p in ps}
    found |= {("pip", canonical(p.name), p.version) for ps in contents.pip.values() for p in ps}
    return found


def _named(kind: str, items: set[tuple[str, str, str]]) -> str:
    shown = ", ".join(f"{n}=={v} ({i})" for i, n, v in sorted(items)[:_SHOWN])
    more = f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else ""
    return f"{kind}: {shown}{more}"


def check_sbom(directory: Path, labels: Mapping[str, str], lock: LockState) -> list[str]:
    """Findings about ``images/NAME/sbom.cdx.json`` against the image label and the lock."""
    path = directory / SBOM_NAME
    label = labels.get(SBOM_LABEL)
    try:
        with open_regular(path) as fh:
            data = read_limited(fh, MAX_SBOM_BYTES, path)
    except FileNotFoundError:
        return [f"{path}: missing (the image's SBOM label is {label})"] if label else []
    except TooLarge:
        return [f"{path}: larger than {MAX_SBOM_BYTES} bytes: not the SBOM envkit wrote"]
    except NotRegular as e:
        return [f"{path}: {e.strerror}: not the SBOM envkit wrote"]
    except OSError as e:
        return [f"{path}: cannot read: {e.strerror or e}"]
    findings = []
    if label is not None and hashlib.sha256(data).hexdigest() != label:
        findings.append(
            f"{path}: sha256 {hashlib.sha256(data).hexdigest()} is not the image's {SBOM_LABEL} {label}"
        )
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
        inventory = parse_inventory(text, path=str(path), label="sbom", format="cyclonedx")
    except UnicodeDecodeError as e:
        return [*findings, f"{path}: unreadable SBOM: not UTF-8 text (byte {e.start})"]
    except EnvkitError as e:
        return [*findings, f"{path}: unreadable SBOM: {e.message}"]
    listed: set[tuple[str, str, str]] = {
        (p.installer, p.name if p.installer == "pip" else p.name.lower(), p.version)
        for p in inventory.packages
    }
    locked = _lock_packages(lock)
    if listed - locked:
        findings.append(f"{path}: " + _named("packages the lock does not have", listed - locked))
    if locked - listed:
        findings.append(f"{path}: " + _named("packages of the lock it does not list", locked - listed))
    return findings


def check_provenance(
    root: Path, name: str, image_id: str, labels: Mapping[str, str], base_id: str | None
) -> list[str]:
    """Findings about the image's provenance statement (``.envkit/provenance/``), when there is one."""
    path = provenance_path(root, name, image_id)
    if not (path.is_file() or path.is_symlink()):
        return []  # an image built elsewhere: its provenance is where it was built
    try:
        statement = read_provenance(path)
    except EnvkitError as e:
        return [e.message]
    findings = []
    subject = statement["subject"][0]["digest"]["sha256"]
    if subject != image_id.removeprefix("sha256:"):
        findings.append(f"{path}: its subject is sha256:{subject}, not the image {image_id}")
    materials = materials_of(statement)
    lock = labels.get(LOCK_LABEL)
    if lock and materials.get("lock") != lock:
        findings.append(f"{path}: lock {materials.get('lock')} is not the image's {LOCK_LABEL} {lock}")
    if base_id and materials.get("base-image") not in (None, base_id.removeprefix("sha256:")):
        findings.append(
            f"{path}: base image sha256:{materials.get('base-image')} is not the base now ({base_id})"
        )
    return findings
