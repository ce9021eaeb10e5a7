"""When ``envkit init --from`` must not write a spec: a framework that would be lost, a CUDA the
source asks for without naming it, an environment that lives in a file envkit did not read; and
the choices a refusal's hint may offer (only what the catalog can build); and
:func:`check_buildable`, the planned stack's last check.

A confident wrong spec is worse than a refusal: each of these used to be written as a
"no framework" or "cpu" spec with exit 0. Every refusal says what was read, why no spec follows,
and what to pass or change to get one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from envkit.adopt.detect import ImageFacts
from envkit.adopt.evidence import AdoptError, Collected, shown_item
from envkit.adopt.releases import Releases
from envkit.spec.missing_image import deleted_image, removed_cudas

__all__ = [
    "buildable_cudas",
    "check_buildable",
    "refuse_ask_cuda",
    "refuse_empty",
    "refuse_image_framework",
    "refuse_lost_frameworks",
    "refuse_old_release",
    "refuse_project_venv_over_image",
    "refuse_torch_brought_in",
    "refuse_unread_environment",
]

_FRAMEWORK_ITEM = re.compile(
    r"^(?:[\w.-]+::?)?(?:-e\s+)?(?P<name>torch|pytorch|pytorch-gpu|pytorch-cpu|paddlepaddle|paddlepaddle-gpu)"
    r"(?![\w.-])|(?:^|[/\s@])(?P<wheel>torch|paddlepaddle(?:_gpu)?)-\d[\w.+-]*\.whl"
)
_OWNER = {
    "torch": "torch",
    "pytorch": "torch",
    "pytorch-gpu": "torch",
    "pytorch-cpu": "torch",
    "paddlepaddle": "paddle",
    "paddlepaddle-gpu": "paddle",
    "paddlepaddle_gpu": "paddle",
}


def buildable_cudas(
    releases: Releases, versions: Mapping[str, str], base_image: str | None = None
) -> list[str]:
    """The CUDA flavours (``cpu`` first) every framework release of the spec has a wheel for and
    envkit has an image for: what a hint may offer. No frameworks: the CUDAs with a runtime image."""
    choices = ["cpu", *(c for c in releases.cuda_versions if base_image or releases.has_runtime_image(c))]
    for framework, version in versions.items():
        release = releases.release(framework, version)
        if release is not None:
            choices = [c for c in choices if release.wheel_for(c) is not None]
    return choices


def refuse_lost_frameworks(found: Collected, versions: Mapping[str, str]) -> None:
    """A framework the source names but the spec would not carry (a local wheel, a line that is
    no requirement, a listing row without a version): a refusal, never a "no framework" spec."""
    for lost in found.lost:
        match = _FRAMEWORK_ITEM.search(lost.item)
        if not match:
            continue
        framework = _OWNER[(match["name"] or match["wheel"]).lower()]
        if framework in versions:
            continue
        raise AdoptError(
            f"{lost.where}: {lost.item}: {lost.why}; the spec would lose {framework}, so nothing was written",
            hint=f"pin a {framework} release in the source as a plain requirement "
            f"(e.g. {'torch==2.5.1' if framework == 'torch' else 'paddlepaddle-gpu==2.6.2'}), "
            "or remove the line to adopt the environment without it",
        )


# packages each of whose releases requires one exact torch release, a CUDA build from PyPI
_BRINGS_TORCH = frozenset({"vllm", "sglang", "xformers"})


def refuse_torch_brought_in(found: Collected, versions: Mapping[str, str]) -> None:
    """No framework pinned, but a package that pins its own torch (vllm, sglang, xformers): the spec
    would say "no framework, cpu" of a CUDA torch stack. A refusal naming the package."""
    if versions:
        return
    pin = next((p for p in found.pip if p.name in _BRINGS_TORCH), None)
    if pin is None:
        return
    raise AdoptError(
        f"{pin.where}: {shown_item(pin.spec)}: {pin.name} requires one exact torch release (a CUDA build) "
        "that the source does not name; a spec without it would say 'no framework, cpu'; nothing was written",
        hint=f"pin the torch release your {pin.name} requires (`pip show {pin.name}` lists it) in the source "
        "or adopt the environment's `pip freeze`",
    )


def refuse_old_release(framework: str, version: str, oldest: str, where: str, python: str) -> AdoptError:
    return AdoptError(
        f"{where}: {framework} {version} is older than every {framework} release the catalog knows "
        f"({oldest} on): envkit cannot tell which CUDA and Python its wheels have; nothing was written",
        hint=f"pin {framework} {oldest} or later in the source, or adopt it anyway (validate then warns that "
        f"the catalog cannot check it): rerun with --cuda cpu --python {python}",
    )


def refuse_image_framework(found: Collected, image: ImageFacts, base_image: str) -> None:
    """A base image that brings the framework in a build the catalog cannot name (NGC, no tag)."""
    if image.framework is None or image.version or not image.unknown:
        return
    example = (
        "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime"
        if image.framework == "torch"
        else "paddlepaddle/paddle:3.0.0-gpu-cuda12.6-cudnn9.5-trt10.5"
    )
    ngc = image.ngc
    if ngc is not None:
        line = (
            f"pip install torch=={ngc.release_line}.*" if ngc.release_line else "pip install torch==VERSION"
        )
        raise AdoptError(
            f"{found.origin}: the base image {base_image} brings {ngc.describe()}: no published torch "
            "wheel is NVIDIA's build, so a spec would be another environment; nothing was written",
            hint=f"to adopt the nearest published release, pin it in the Dockerfile ({line}) and rerun "
            f"with --python {ngc.python}; or use an image whose tag names the release, e.g. {example}",
        )
    raise AdoptError(
        f"{found.origin}: the base image {base_image} brings {image.framework} ({image.unknown}): "
        f"envkit cannot tell which {image.framework} release it is, and no published wheel matches "
        "such a build; nothing was written",
        hint=f"pin the {image.framework} release in the Dockerfile (pip install ...==VERSION), or use an "
        f"image whose tag names the release, e.g. {example}",
    )


_FRAMEWORK_WORD = re.compile(r"download\.pytorch\.org|paddlepaddle\.org\.cn|torch|paddle", re.I)


def refuse_unread_environment(found: Collected, versions: Mapping[str, str], image_cuda: str | None) -> None:
    """No framework read, on a CUDA base image, while the environment is installed from a file
    envkit did not read (``uv sync``, ``conda env create -f``, ``pip install -r`` of a file not
    beside it): the framework is most likely there. Adopt that file instead."""
    if versions or not found.unread:
        return
    named = _FRAMEWORK_WORD.search(" ".join(u for u, _ in found.index_urls + found.extra_urls))
    channel = next((c for c in found.channels if _FRAMEWORK_WORD.search(c)), None)  # conda's `pytorch`
    built_on = next(
        (pin.spec for pins in (found.pip, found.conda) for pin in pins if _FRAMEWORK_WORD.search(pin.name)),
        None,
    )  # torch-geometric, torchvision, paddleocr: a package that needs the framework
    scripted = next(((w, x) for w, x in found.unread if _FRAMEWORK_WORD.search(x)), None)
    branch = found.other_branches[0] if found.other_branches else None
    if (
        image_cuda in (None, "cpu")
        and not named
        and scripted is None
        and not (channel and built_on)
        and branch is None
    ):
        return
    where, what = scripted or found.unread[0]
    why = (
        f"the environment of this CUDA {image_cuda} image is installed from"
        if image_cuda not in (None, "cpu")
        else f"a framework is installed (the shell branch not read, `{shown_item(branch[1])}` at "
        f"{branch[0]}, installs it; the branch read does not) from"
        if branch is not None and not named and scripted is None
        else f"a framework is installed (the {channel} channel is named, and {shown_item(built_on)} "
        "is built on it) from"
        if channel and built_on and not named and scripted is None
        else "a framework is installed (a framework's index is named, or a script installs it) from"
    )
    raise AdoptError(
        f"{where}: {shown_item(what)}: {why} "
        "a file envkit did not read, and the source itself names no framework; nothing was written "
        "(a spec without the framework would build a different environment)",
        hint="run envkit init --from on that file (requirements.txt, environment.yml, uv.lock, "
        "poetry.lock), or pin the framework in the source",
    )


def refuse_project_venv_over_image(found: Collected, image_framework: str | None, pinned: bool) -> None:
    """``uv sync`` on an image that brings the framework: uv installs the project's locked environment
    into a venv of its own (``.venv``), so what runs is that lock's, not the image's framework, and
    the lock is a file envkit did not read here."""
    if image_framework is None or pinned:
        return
    synced = next(((w, x) for w, x in found.unread if x.startswith("uv sync")), None)
    if synced is None:
        return
    where, what = synced
    raise AdoptError(
        f"{where}: {shown_item(what)} installs the project's locked environment into its own venv: the "
        f"{image_framework} of the base image {found.base_image} is not the one that runs, and the lock is "
        "a file envkit did not read; nothing was written",
        hint="run envkit init --from on the project's uv.lock (or pyproject.toml)",
    )


def refuse_empty(found: Collected) -> None:
    """A source that installs nothing (a requirements file of comments, an index line alone): no spec
    follows from it, and an empty CPU spec would say the team's environment is empty."""
    content = (found.conda, found.pip, found.base_image, found.unread, found.lost, found.torch_hints)
    if any(content) or found.python or found.cuda_requirement:
        return
    raise AdoptError(
        f"{found.origin}: the source installs nothing (no requirement, package or base image; comments "
        "are not read); nothing was written",
        hint="adopt the file that installs the environment, or write the spec with `envkit init --framework`",
    )


def refuse_ask_cuda(framework: str, version: str, why: str, choices: list[str]) -> AdoptError:
    gpu = [c for c in choices if c != "cpu"]
    return AdoptError(
        f"the source asks for a CUDA build of {framework} {version} but names no CUDA version ({why}); "
        "envkit does not guess it (cpu would be a different environment); nothing was written",
        hint=f"rerun with --cuda one of {', '.join(gpu)}"
        if gpu
        else f"no CUDA build of {framework} {version} "
        "is in the catalog: rerun with --cuda cpu, or pin another release",
    )


def check_buildable(
    versions: dict[str, str],
    cuda: str,
    python: str,
    known: Releases,
    base_image: str | None,
    how: dict[str, str],
) -> None:
    """The detected CUDA and Python must be ones envkit can build: a clear refusal otherwise."""
    _check_releases(versions, cuda, python, known, base_image, how)
    _check_images(versions, cuda, python, known, base_image, how)


def _check_releases(
    versions: dict[str, str],
    cuda: str,
    python: str,
    known: Releases,
    base_image: str | None,
    how: dict[str, str],
) -> None:
    """Each framework release has wheels for the CUDA (one envkit builds) and the Python."""
    for framework, version in versions.items():
        release = known.release(framework, version)
        if release is None:
            continue
        # a kept base image has the spec's CUDA (one of another CUDA is dropped): it builds that one only
        buildable = buildable_cudas(known, {framework: version})
        if base_image and release.wheel_for(cuda) and known.knows_cuda(cuda) and cuda not in buildable:
            buildable.append(cuda)
        if release.wheel_for(cuda) is None or cuda not in buildable:
            raise AdoptError(
                f"the source is {framework} {version} on CUDA {cuda} ({how.get('cuda', '?')}); "
                f"envkit can build "
                f"{framework} {version} for {', '.join(buildable) or 'no CUDA'} only; nothing was written",
                hint=f"rerun with --cuda one of {', '.join(buildable)} (the spec then says so)"
                if buildable
                else f"pin another {framework} release in the source",
            )
        if python not in release.python:
            raise AdoptError(
                f"the source is {framework} {version} on Python {python} ({how.get('python', '?')}); "
                f"{framework} {version} publishes wheels for Python {', '.join(release.python)}; "
                "nothing was written",
                hint=f"rerun with --python one of {', '.join(release.python)}",
            )


def _check_images(
    versions: dict[str, str],
    cuda: str,
    python: str,
    known: Releases,
    base_image: str | None,
    how: dict[str, str],
) -> None:
    """The combination is one the catalog allows, and the CUDA has an image to build on."""
    for framework, version in versions.items():
        impossible = known.impossible(framework, version, cuda, python)
        if impossible:
            raise AdoptError(
                f"{impossible}; nothing was written", hint="rerun with another --cuda or --python"
            )
    if cuda != "cpu" and not known.knows_cuda(cuda):
        raise AdoptError(
            f"the source is on CUDA {cuda} ({how.get('cuda', '?')}), which envkit's catalog does not know; "
            "nothing was written",
            hint=f"rerun with --cuda one of {', '.join(buildable_cudas(known, versions))}",
        )
    if base_image and deleted_image(base_image):
        raise AdoptError(
            f"the source's base image {base_image} is a CUDA {cuda} image, and NVIDIA deleted it "
            "from Docker Hub and NGC (sources in envkit/catalog/data/removed_images.yaml); "
            "nothing was written",
            hint=f"rerun with --cuda one of {', '.join(buildable_cudas(known, versions))} "
            "(the image is then "
            "reported, not kept), or use a copy of it in your own registry",
        )
    if cuda != "cpu" and not base_image and not known.has_runtime_image(cuda):
        why = (
            "whose nvidia/cuda images NVIDIA deleted from Docker Hub and NGC (sources in "
            "envkit/catalog/data/removed_images.yaml)"
            if cuda in removed_cudas()
            else "for which the catalog has no CUDA runtime image"
        )
        raise AdoptError(
            f"the source is on CUDA {cuda} ({how.get('cuda', '?')}), {why}; nothing was written",
            hint=f"rerun with --cuda one of {', '.join(buildable_cudas(known, versions))}, or name a base "
            "image in the source",
        )
