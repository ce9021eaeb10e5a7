"""An image's SBOM with its GPU readiness facts: the CUDA libraries it loads, the GPU code it carries.

The SBOM inside an image is the lock's (:mod:`envkit.sbom.cyclonedx`): written before the build,
part of the build context, so content addressed and reproducible. What the built image turns out
to load and carry is known only after the build (``envkit check``), so it goes into a copy: the
same document with ``envkit:gpu:*`` and ``envkit:cuda:*`` properties on the image component and
the BOM ``version`` one higher (CycloneDX: a changed BOM keeps its serial number and raises its
version). Pure: JSON text in, JSON text out, validated against CycloneDX 1.6.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from envkit._io import load_json_bounded
from envkit.sbom.cyclonedx import schema_problem

__all__ = ["MAX_DEPTH", "readiness_properties", "with_readiness"]

MAX_DEPTH = 64
PREFIXES = ("envkit:gpu:", "envkit:cuda:driver-floor")


def readiness_properties(summary: Mapping[str, object], floors: Mapping[str, object]) -> list[dict[str, str]]:
    """The facts as CycloneDX properties (name, value), sorted: per framework the CUDA it was built
    for and each library version it loads; per library with GPU code its fatbins, SASS and PTX;
    the driver floors of its CUDA runtime."""
    props: dict[str, str] = {}
    for fw, entry in sorted(_obj(summary.get("frameworks")).items()):
        e = _obj(entry)
        for key in ("cuda_build", "cudnn_build", "cuda_runtime"):
            if e.get(key):
                props[f"envkit:gpu:{fw}:{key.replace('_', '-')}"] = str(e[key])
        for lib, version in sorted(_obj(e.get("loaded")).items()):
            props[f"envkit:gpu:{fw}:loaded:{lib}"] = str(version)
    for lib, code in sorted(_obj(summary.get("gpu_code")).items()):
        c = _obj(code)
        props[f"envkit:gpu:code:{lib}:fatbins"] = str(c.get("fatbins", 0))
        for key in ("sass", "ptx"):
            found = c.get(key)
            archs = found if isinstance(found, list) else []
            props[f"envkit:gpu:code:{lib}:{key}"] = " ".join(str(a) for a in archs) or "none"
    for key, value in sorted(floors.items()):
        if value:
            props[f"envkit:cuda:driver-floor:{key}"] = str(value)
    return [{"name": k, "value": v} for k, v in sorted(props.items())]


def with_readiness(sbom_text: str, summary: Mapping[str, object], floors: Mapping[str, object]) -> str:
    """``sbom_text`` (a CycloneDX JSON SBOM) with the readiness facts on its image component.

    ``ValueError`` (a short reason) when the text is not a CycloneDX document with an image
    component, or the result does not validate. Readiness properties already there are replaced.
    """
    try:
        doc = load_json_bounded(sbom_text, MAX_DEPTH)
    except ValueError as e:
        raise ValueError(f"not JSON: {e}") from e
    if not isinstance(doc, dict) or doc.get("bomFormat") != "CycloneDX":
        raise ValueError("not a CycloneDX document (no bomFormat: CycloneDX)")
    component = _obj(doc.get("metadata")).get("component")
    if not isinstance(component, dict):
        raise ValueError("the SBOM names no image (metadata.component)")
    kept = [
        p
        for p in component.get("properties", [])
        if not (isinstance(p, dict) and str(p.get("name", "")).startswith(PREFIXES))
    ]
    component["properties"] = sorted(
        [*kept, *readiness_properties(summary, floors)],
        key=lambda p: (str(p.get("name")), str(p.get("value"))),
    )
    version = doc.get("version")
    doc["version"] = (version if isinstance(version, int) and not isinstance(version, bool) else 1) + 1
    problem = schema_problem(doc)
    if problem is not None:
        raise ValueError(f"with the readiness facts it does not validate against CycloneDX 1.6: {problem}")
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def _obj(value: Any) -> dict[str, object]:
    return dict(value) if isinstance(value, Mapping) else {}
