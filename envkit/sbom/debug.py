"""The debug image's SBOM: the runtime image's, plus every package the debug layer adds.

The runtime image's CycloneDX document (read from that image) keeps all its components; each
Debian package (``pkg:deb/debian/NAME@VERSION?arch=&distro=``) and wheel of the debug lock joins
with ``envkit:layer=debug``, the runtime image becomes the base-image component, and the document
is validated against CycloneDX 1.6 again. ``envkit diff`` of the two SBOMs shows just those.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from packageurl import PackageURL

from envkit import __version__
from envkit.lock.solver import PipPackage
from envkit.sbom.cyclonedx import SERIAL_NAMESPACE, ImageRef, docker_purl, pypi_purl, schema_validator

__all__ = ["DebComponent", "deb_purl", "debug_sbom"]

LAYER = "envkit:layer"


@dataclass(frozen=True)
class DebComponent:
    """A Debian package of the debug layer: name, exact version, architecture, file sha256."""

    name: str
    version: str
    arch: str
    sha256: str


def deb_purl(deb: DebComponent, suite: str) -> PackageURL:
    return PackageURL(
        type="deb",
        namespace="debian",
        name=deb.name,
        version=deb.version,
        qualifiers={"arch": deb.arch, "distro": f"debian-{suite}"},
    )


def _props(**values: str) -> list[dict[str, str]]:
    return [{"name": f"envkit:{k.replace('_', '-')}", "value": v} for k, v in values.items()]


def _deb(deb: DebComponent, suite: str) -> dict[str, object]:
    purl = deb_purl(deb, suite).to_string()
    return {
        "type": "library",
        "name": deb.name,
        "version": deb.version,
        "bom-ref": purl,
        "purl": purl,
        "hashes": [{"alg": "SHA-256", "content": deb.sha256}],
        "properties": _props(layer="debug", installer="dpkg"),
    }


def _wheel(wheel: PipPackage, prefix: str) -> dict[str, object]:
    purl = pypi_purl(wheel).to_string()
    hashes = [{"alg": "SHA-256", "content": wheel.sha256}] if wheel.sha256 else []
    return {
        "type": "library",
        "name": wheel.name,
        "version": wheel.version,
        "bom-ref": purl,
        "purl": purl,
        "hashes": hashes,
        "properties": _props(layer="debug", installer="pip", prefix=prefix),
    }


def debug_sbom(
    runtime_sbom: str,
    *,
    runtime: ImageRef,
    lock_sha256: str,
    suite: str,
    debs: Sequence[DebComponent],
    wheels: Sequence[PipPackage],
    epoch: int,
    prefix: str,
) -> str:
    """The debug image's CycloneDX 1.6 document (JSON text, validated)."""
    data: dict[str, Any] = json.loads(runtime_sbom)
    data["serialNumber"] = uuid.uuid5(SERIAL_NAMESPACE, "debug:" + lock_sha256).urn
    meta = data.setdefault("metadata", {})
    meta["timestamp"] = dt.datetime.fromtimestamp(epoch, tz=dt.timezone.utc).isoformat()
    image = meta.setdefault("component", {"type": "container", "name": "envkit", "bom-ref": "image"})
    image["properties"] = [
        *(p for p in image.get("properties", []) if p.get("name") != "envkit:version"),
        *_props(version=__version__, variant="debug", debug_lock_sha256=lock_sha256),
    ]
    components = [c for c in data.get("components", []) if c.get("bom-ref") != "base-image"]
    purl = docker_purl(runtime)
    base: dict[str, object] = {
        "type": "container",
        "name": runtime.ref,
        "bom-ref": "base-image",
        "properties": _props(role="base-image", base_of="debug"),
    }
    if runtime.id:
        base["version"] = runtime.id
    if purl is not None:
        base["purl"] = purl.to_string()
    seen = {c.get("bom-ref") for c in components}
    added = [
        c
        for c in [*(_deb(d, suite) for d in debs), *(_wheel(w, prefix) for w in wheels)]
        if c["bom-ref"] not in seen
    ]
    data["components"] = sorted([base, *components, *added], key=lambda c: str(c.get("bom-ref")))
    ref = image.get("bom-ref", "image")
    deps = [d for d in data.get("dependencies", []) if d.get("ref") != ref]
    deps.append({"ref": ref, "dependsOn": sorted(str(c["bom-ref"]) for c in data["components"])})
    data["dependencies"] = sorted(deps, key=lambda d: str(d.get("ref")))
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    problem = next(schema_validator().iter_errors(json.loads(text)), None)
    if problem is not None:
        raise ValueError(f"the debug SBOM does not validate against CycloneDX 1.6: {problem.message}")
    return text
