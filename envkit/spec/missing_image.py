"""The hint when the catalog has no CUDA runtime image for a spec's ``cuda``.

Either NVIDIA deleted that CUDA's images (``envkit/catalog/data/removed_images.yaml``, sourced), or
the catalog does not list one yet. Either way the hint names the closest CUDA whose image the
catalog has: the same major and a newer minor first (CUDA minor-version compatibility: a build
for 11.7 runs on an 11.8 runtime), preferring one the spec's frameworks publish wheels for.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

import yaml

from envkit.catalog import Catalog
from envkit.errors import CatalogError
from envkit.spec.models import Spec

__all__ = ["deleted_image", "missing_image_hint", "removed_cudas"]

_TAG_VERSION = re.compile(r"(?P<version>\d+\.\d+(?:\.\d+)?)(?:-.*)?", re.DOTALL)
_NVIDIA_CUDA = ("nvidia/cuda:", "docker.io/nvidia/cuda:", "nvcr.io/nvidia/cuda:")


@functools.cache
def _removed() -> tuple[dict[str, str], frozenset[str]]:
    """(CUDA version -> the source saying NVIDIA deleted its images, the tag versions deleted)."""
    text = (
        resources.files("envkit.catalog").joinpath("data").joinpath("removed_images.yaml").read_text("utf-8")
    )
    try:
        data = yaml.safe_load(text)
        sources = {str(e["cuda"]): str(e["source"]) for e in data["removed"]}
        deleted = frozenset(str(v) for e in data["removed"] for v in e["deleted"])
    except (yaml.YAMLError, KeyError, TypeError) as e:
        raise CatalogError(
            f"envkit/catalog/data/removed_images.yaml is invalid: {e}", hint="reinstall envkit"
        ) from e
    return sources, deleted


def removed_cudas() -> dict[str, str]:
    """CUDA version -> the source saying NVIDIA deleted its images."""
    return _removed()[0]


def deleted_image(ref: str) -> bool:
    """Whether ``ref`` is an ``nvidia/cuda`` tag whose version NVIDIA deleted (``11.7.0-...``; the
    newest patch of a minor, ``11.7.1-...``, stayed)."""
    tag = next((ref[len(p) :] for p in _NVIDIA_CUDA if ref.startswith(p)), None)
    match = _TAG_VERSION.fullmatch(tag) if tag is not None else None
    return match is not None and match["version"] in _removed()[1]


def _key(version: str) -> tuple[int, int]:
    major, _, minor = version.partition(".")
    return (int(major), int(minor or 0)) if major.isdigit() and (minor or "0").isdigit() else (0, 0)


def missing_image_hint(spec: Spec, catalog: Catalog) -> tuple[str, str]:
    """(message, hint) for a GPU spec whose CUDA has no runtime image in the catalog."""
    wanted = _key(spec.cuda)
    with_image = sorted(
        {b.cuda for b in catalog.base_images if b.kind == "cuda-runtime" and b.cuda}, key=_key
    )
    releases = [catalog.framework_release(f, v) for f, v in spec.frameworks.items()]

    def wheels_for(cuda: str) -> bool:
        return all(r is not None and r.wheel_for(cuda) is not None for r in releases)

    same_major = [c for c in with_image if _key(c)[0] == wanted[0] and _key(c) > wanted]
    ranked = sorted(same_major, key=lambda c: (not wheels_for(c), _key(c))) or sorted(
        with_image, key=lambda c: (not wheels_for(c), abs(_key(c)[0] - wanted[0]), _key(c))
    )
    removed = removed_cudas().get(spec.cuda)
    message = (
        f"NVIDIA deleted the CUDA {spec.cuda} images from Docker Hub and NGC (its container support "
        "policy; sources in envkit/catalog/data/removed_images.yaml)"
        if removed
        else f"the catalog has no CUDA {spec.cuda} runtime image"
    )
    if not ranked:
        return message, "set base_image explicitly"
    best = ranked[0]
    image = catalog.runtime_image(best)
    frameworks = " and ".join(f"{f} {v}" for f, v in spec.frameworks.items())
    verb = "publishes" if len(spec.frameworks.items()) == 1 else "publish"
    wheels = f"; {frameworks} {verb} wheels for CUDA {best}" if frameworks and wheels_for(best) else ""
    other = (
        f"a copy of a CUDA {spec.cuda} image in your own registry"
        if removed
        else f"an nvidia/cuda:{spec.cuda}.x runtime tag"
    )
    shown = image.ref if image else "?"
    hint = f"closest CUDA with an image: {best} ({shown}){wheels}"
    return message, f'{hint}: set cuda: "{best}", or set base_image to {other}'
