"""The decision of ``envkit init --from``: what spec the evidence a source gave makes.

:func:`plan_adoption` asks the catalog once (:func:`~envkit.adopt.releases.read_releases`) and
turns what a source says (:class:`~envkit.adopt.evidence.Collected`) into a
spec: Python, CUDA and frameworks detected (:mod:`envkit.adopt.detect`), conda and pip pins kept
as written, channels and the PyPI mirror carried (credentials removed), the base image kept;
every thing not carried is a :class:`~envkit.adopt.evidence.Lost` line with its reason. The text
is validated exactly as ``envkit validate`` does (:func:`~envkit.adopt.adoption.spec_check`)
before anything is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from packaging.version import Version
from pydantic import ValidationError

from envkit.adopt.adoption import Adoption, SpecCheck, spec_check
from envkit.adopt.credentials import carry_env
from envkit.adopt.decide import Decided, decide_channels, decide_conda, decide_mirror, decide_pip
from envkit.adopt.detect import ASK, ImageFacts, cuda_evidence, image_facts, older_than_catalog, release_in
from envkit.adopt.evidence import PROXY_VARIABLES, PROXY_WHY, AdoptError, Collected, Lost, shown_item
from envkit.adopt.facts import (
    FRAMEWORK_CONDA,
    FRAMEWORK_PIP,
    Framework,
    cpu_paddle_beside_cuda_torch,
    detect_frameworks,
    facts_inventory,
    index_flavour,
    stated_cuda,
    toolkit_cuda,
)
from envkit.adopt.gpu_builds import gpu_builds_on_cpu
from envkit.adopt.hints import hinted_torch, source_facts, unpinned_on_image
from envkit.adopt.options import AdoptOptions
from envkit.adopt.python_of import choose_python, stated_python
from envkit.adopt.refusals import (
    buildable_cudas,
    check_buildable,
    refuse_ask_cuda,
    refuse_empty,
    refuse_image_framework,
    refuse_lost_frameworks,
    refuse_old_release,
    refuse_project_venv_over_image,
    refuse_torch_brought_in,
    refuse_unread_environment,
)
from envkit.adopt.releases import Releases, read_releases
from envkit.adopt.spec_text import render
from envkit.catalog import Catalog, FrameworkRelease
from envkit.spec.models import NAME_RE, Spec
from envkit.spec.provenance import SourceFact

__all__ = ["plan_adoption"]


def plan_adoption(found: Collected, catalog: Catalog, options: AdoptOptions | None = None) -> Adoption:
    """The adoption of what a source said: the catalog asked once (:func:`read_releases`), the plan
    made with those answers (:func:`_plan_with`), the spec validated as ``envkit validate`` does, on
    the tables that one call read."""
    options = options or AdoptOptions()
    releases = read_releases(catalog, found.base_image)  # the walk's one entry into the catalog
    return _plan_with(found, releases, spec_check(releases.tables or catalog), options)


@dataclass(frozen=True)
class _Stack:
    """What the plan decided of the stack: the frameworks and their releases, the CUDA, the Python
    and the base image kept, each with where it came from (``how``) and the notes so far."""

    how: dict[str, str]  # fact -> where it came from, in the order the spec's header shows them
    image: ImageFacts
    base_image: str | None
    frameworks: dict[str, Framework]
    versions: dict[str, str]
    notes: tuple[str, ...]
    cuda: str = ""
    python: str = ""
    source: tuple[SourceFact, ...] = ()


@dataclass(frozen=True)
class _Pins:
    """What the plan decided of the packages: channels, conda and pip pins, the mirror, the ``env:``
    carried, what was not carried, and the notes on them."""

    channels: list[str] | None
    conda: list[str]
    pip: list[str]
    mirror: str | None
    env: dict[str, str]
    lost: tuple[Lost, ...]
    notes: tuple[str, ...]


def _plan_with(found: Collected, releases: Releases, check: SpecCheck, options: AdoptOptions) -> Adoption:
    """The validated spec for ``found``, planned with what the catalog said (``releases``, read once by
    :func:`envkit.adopt.releases.read_releases`) and validated by ``check``
    (:func:`~envkit.adopt.adoption.spec_check`); :class:`AdoptError` when no spec envkit validates fits it."""
    found = replace(found, lost=list(found.lost), notes=list(found.notes))  # the caller's stays as read
    refuse_empty(found)
    stack = _target(found, releases, _frameworks_of(found, releases, options), options)
    pins = _pins(found, releases, stack, options)
    return _adoption(found, stack, pins, check, options)


def _frameworks_of(found: Collected, releases: Releases, options: AdoptOptions) -> _Stack:
    """The frameworks the source (or its base image) names, and the release of each."""
    how: dict[str, str] = {}
    base_image = _base_image(found)
    # a reference no spec can pin (`nvcr.io/nvidia/pytorch:` of an ARG without a default) still says
    # which framework image it is: read, so the framework is refused rather than lost
    image = image_facts(base_image or found.base_image, releases)
    refuse_project_venv_over_image(found, image.framework, image.framework in detect_frameworks(found))
    frameworks = _frameworks(found, image, base_image)
    notes = tuple(found.notes)  # with what _frameworks read (a wheel's torch, a CPU paddle kept as a package)
    index = index_flavour(found)
    cuda, python = options.cuda, options.python
    wanted_cuda = cuda or stated_cuda(found, index) or (image.cuda if image.cuda != "cpu" else None)
    wanted_python = python or stated_python(found, image.python)
    versions = _framework_versions(
        frameworks, releases, how, found, cuda=wanted_cuda, python=wanted_python, chosen=bool(cuda or python)
    )
    refuse_lost_frameworks(found, versions)
    refuse_torch_brought_in(found, versions)
    refuse_unread_environment(found, versions, image.cuda)
    return _Stack(how, image, base_image, frameworks, versions, notes)


def _target(found: Collected, releases: Releases, stack: _Stack, options: AdoptOptions) -> _Stack:
    """The CUDA and the Python the spec builds (the flags', or the evidence's), checked buildable;
    a base image of another CUDA is not carried."""
    cuda, python, how, image = options.cuda, options.python, stack.how, stack.image
    chosen_cuda = cuda or _cuda(found, stack.frameworks, stack.versions, releases, image.cuda, how)
    source = source_facts(
        found, stack.frameworks, stack.versions, cuda=None if cuda else (chosen_cuda, how), image=image
    )
    if cuda:
        how["cuda"] = f"--cuda {cuda}"
    base_image = stack.base_image
    if base_image and image.cuda and image.cuda != chosen_cuda:
        found.lose(
            found.origin,
            f"FROM {base_image}",
            f"a CUDA {image.cuda} image under a CUDA {chosen_cuda} spec: "
            "not carried (envkit uses the catalog's image for the spec's CUDA)",
        )
        base_image = None  # its Python is still the one the source installed into: kept
    chosen_python = python or choose_python(found, stack.versions, releases, image.python, how)
    if python:
        how["python"] = f"--python {python}"
    check_buildable(stack.versions, chosen_cuda, chosen_python, releases, base_image, how)
    return replace(stack, base_image=base_image, cuda=chosen_cuda, python=chosen_python, source=tuple(source))


def _pins(found: Collected, releases: Releases, stack: _Stack, options: AdoptOptions) -> _Pins:
    """The channels, conda and pip pins, mirror and ``env:`` carried for the stack decided."""
    foreign = bool(found.platform) and not (found.platform or "").startswith("linux-")
    decided = Decided()
    frameworks, cuda = stack.versions, stack.cuda
    channels = decide_channels(found, decided, keep_defaults=options.keep_defaults)
    conda = decide_conda(
        found,
        decided,
        frameworks=set(frameworks),
        keep_defaults=options.keep_defaults,
        foreign=foreign,
        python_override=options.python,
        cuda=cuda,
    )
    pip = decide_pip(found, decided, frameworks=set(frameworks))
    mirror = decide_mirror(found, decided, releases, frameworks=frameworks, cuda=cuda)
    notes = _installed_as(releases, stack)
    notes += decided.notes
    notes += _leftovers(found, stack.frameworks, frameworks)  # proxies leave found.env here
    env = carry_env(found.env, found.origin, decided.lose)  # never a credential in a committed spec
    return _Pins(channels, conda, pip, mirror, env, tuple(decided.lost), tuple(notes))


def _installed_as(releases: Releases, stack: _Stack) -> list[str]:
    """A note for each framework whose pin is installed as the catalog's wheel requirement."""
    notes = []
    for framework, version in stack.versions.items():
        wheel = releases.requested_wheel(framework, version, stack.cuda)
        pin = stack.frameworks[framework]
        if wheel is not None and pin.spec != wheel.requirement:
            notes.append(
                f"{framework}: {shown_item(pin.spec)} ({pin.where}) is installed as {wheel.requirement}"
            )
    return notes


def _adoption(
    found: Collected, stack: _Stack, pins: _Pins, check: SpecCheck, options: AdoptOptions
) -> Adoption:
    """The spec's text rendered and validated (``check``), as an :class:`Adoption`."""
    adopted_name = _name(options.name, found)
    platform = "linux-aarch64" if found.platform == "linux-aarch64" else None
    notes = [*stack.notes, *pins.notes]
    lost = (*found.lost, *pins.lost)
    text = render(
        adopted_name,
        found,
        stack.python,
        stack.cuda,
        stack.versions,
        pins.conda,
        pins.pip,
        pins.channels,
        pins.mirror,
        stack.base_image,
        platform,
        pins.env,
        list(lost),
        stack.how,
        source=list(stack.source),
        notes=notes,
    )
    spec, warnings = check(adopted_name, text, found.origin)
    detected = {"python": stack.python, "cuda": stack.cuda, **stack.versions}
    if stack.base_image:
        detected["base_image"] = stack.base_image
    return Adoption(
        source=found.origin,
        kind=found.kind,
        name=adopted_name,
        text=text,
        spec=spec,
        detected=detected,
        how=stack.how,
        lost=lost,
        notes=tuple(notes),
        warnings=(*warnings, *gpu_builds_on_cpu(found, stack.cuda)),
        pins={"conda": tuple(pins.conda), "pip": tuple(pins.pip)},
    )


def _frameworks(found: Collected, image: ImageFacts, base_image: str | None) -> dict[str, Framework]:
    """The source's framework pins, and the base image's framework when the source pins none."""
    frameworks = detect_frameworks(found)
    if image.framework == "torch" and image.version and "torch" not in frameworks:
        # the image's torch is what the source runs: a PyG page for another torch is reported, not read
        ranged = f"=={image.version}.*" if image.version.count(".") == 1 else image.version
        frameworks["torch"] = Framework("torch", ranged, "image", found.origin, base_image or "")
    hinted_torch(found, frameworks)
    unpinned_on_image(found, frameworks, image)
    if image.framework and image.framework not in frameworks:
        if image.version:
            ranged = f"=={image.version}.*" if image.version.count(".") == 1 else image.version
            frameworks[image.framework] = Framework(
                image.framework, ranged, "image", found.origin, base_image or ""
            )
        elif base_image or found.base_image:
            refuse_image_framework(found, image, base_image or found.base_image or "")
    paddle = cpu_paddle_beside_cuda_torch(found, frameworks, image.cuda)
    if paddle is not None:
        del frameworks["paddle"]
        found.notes.append(
            f"paddle: {shown_item(paddle.spec)} ({paddle.where}) is Paddle's CPU build beside torch on CUDA: "
            "carried as a package, not as the spec's framework; the stack mixes CPU and GPU builds "
            "(Paddle will not use the GPU; paddlepaddle-gpu is the CUDA build)"
        )
    return frameworks


def _leftovers(found: Collected, frameworks: dict[str, Framework], versions: dict[str, str]) -> list[str]:
    """Proxies kept out of ``env:`` (reported), and notes on a framework installed twice."""
    for key in [k for k in found.env if k.lower() in PROXY_VARIABLES]:
        found.lose(found.origin, f"{key}={found.env.pop(key)}", PROXY_WHY)
    notes = []
    for framework in versions:
        installers = {"conda" for p in found.conda if FRAMEWORK_CONDA.get(p.name) == framework} | {
            "pip" for p in found.pip if FRAMEWORK_PIP.get(p.name) == framework
        }
        if {"conda", "pip"} <= installers:
            pin = frameworks[framework]
            notes.append(
                f"{framework}: the source installs it twice, conda's package and the pip wheel; the spec "
                f"has one {framework}, the {pin.installer} one ({shown_item(pin.spec)})"
            )
    return notes


def _base_image(found: Collected) -> str | None:
    image = found.base_image
    if not image:
        return None
    if "$" in image or image == "scratch":
        found.lose(
            found.origin,
            f"FROM {image}",
            "not an image reference envkit can pin (unexpanded variable or scratch)",
        )
        return None
    try:
        Spec(name="probe", python="3.11", cuda="cpu", base_image=image)
    except ValidationError:
        found.lose(found.origin, f"FROM {image}", "not an image reference a spec accepts")
        return None
    return image


def _framework_versions(
    frameworks: dict[str, Framework],
    known: Releases,
    how: dict[str, str],
    found: Collected,
    *,
    cuda: str | None,
    python: str | None,
    chosen: bool,
) -> dict[str, str]:
    """Each framework's release: the pinned one, or the newest in range with wheels for the CUDA
    and Python the source pins (a range is never resolved before the pinned CUDA is consulted)."""
    versions: dict[str, str] = {}
    for framework, pin in sorted(frameworks.items()):
        releases = known.releases(framework)
        constraint, pypi_only = _pypi_bound(pin, releases, found)
        version, why = release_in(releases, constraint, cuda=cuda, python=python)
        why = f"{why}; {pypi_only}" if pypi_only and why != "pinned" else why
        if version is None and "has wheels for" in why:
            newest, _ = release_in(releases, pin.constraint)
            choices = buildable_cudas(known, {framework: newest}) if newest else []
            release = known.release(framework, newest) if newest else None
            raise AdoptError(
                f"{pin.where}: {shown_item(pin.spec)}: {why}; nothing was written",
                hint=f"pin a {framework} release that has them, or rerun with --cuda one of "
                f"{', '.join(choices)} "
                f"and --python one of {', '.join(release.python if release else ())} ({framework} {newest})",
            )
        if version is None:
            raise AdoptError(
                f"{pin.where}: {shown_item(pin.spec)}: {why}: the spec would lose {framework}; "
                "nothing was written",
                hint=f"pin a {framework} release the catalog knows "
                f"({', '.join(r.version for r in releases[-3:])}, ...), or `envkit catalog refresh`",
            )
        oldest = older_than_catalog(releases, version) if known.release(framework, version) is None else None
        if oldest and not chosen:  # with --cuda/--python the user chose; validate checks the bounds
            first = known.release(framework, oldest)
            bound = max(first.python, key=Version) if first else "3.8"
            stated = python if python and re.fullmatch(r"3\.\d+", python) else None
            fits = stated is not None and Version(stated) <= Version(bound)
            raise refuse_old_release(
                framework, version, oldest, pin.where, stated if fits and stated else bound
            )
        versions[framework] = version
        how[framework] = f"{shown_item(pin.spec)} ({pin.where})" + ("" if why == "pinned" else f": {why}")
    return versions


def _pypi_bound(pin: Framework, releases: tuple[FrameworkRelease, ...], found: Collected) -> tuple[str, str]:
    """An unpinned (or ranged) ``paddlepaddle-gpu`` from PyPI (no Paddle index or find-links page
    named) is a release PyPI has a GPU wheel of: the catalog's ``pypi_cuda`` (none from 3.0 on, whose
    GPU wheels are on paddlepaddle.org.cn only). The constraint to resolve, and why it was bounded."""
    constraint = pin.constraint
    named = any("paddlepaddle.org.cn" in url for url, _ in [*found.index_urls, *found.extra_urls])
    gpu = pin.installer == "pip" and pin.spec.lower().replace("_", "-").startswith("paddlepaddle-gpu")
    if not gpu or named or (constraint and constraint[:1] not in "<>~!"):
        return constraint, ""
    on_pypi = [r.version for r in releases if r.pypi_cuda]
    newest = max(on_pypi, key=Version) if on_pypi else None
    if newest is None:
        return constraint, ""
    bound = f"<={newest}"
    return (f"{constraint},{bound}" if constraint else bound), (
        f"PyPI's paddlepaddle-gpu wheels end at {newest} (later GPU releases are on paddlepaddle.org.cn "
        "only, and the source names no Paddle index)"
    )


def _cuda(
    found: Collected,
    frameworks: dict[str, Framework],
    versions: dict[str, str],
    known: Releases,
    image_cuda: str | None,
    how: dict[str, str],
) -> str:
    inventory = facts_inventory(found)
    index = index_flavour(found)
    candidates: list[tuple[str, str]] = []
    for framework, version in sorted(versions.items(), reverse=True):  # torch's first, then paddle's
        evidence = cuda_evidence(framework, version, frameworks[framework], inventory, index, known, found)
        if evidence is not None:
            candidates.append(evidence)
    if image_cuda:
        candidates.append((image_cuda, f"the base image {found.base_image}"))
    if not versions:
        toolkit = toolkit_cuda(inventory)
        if toolkit:
            candidates.append((toolkit, "the CUDA runtime packages pinned"))
    if not candidates:
        how["cuda"] = "no CUDA build pinned: cpu"
        return "cpu"
    cuda, where = candidates[0]
    if cuda == ASK:
        named = next(((c, w) for c, w in candidates[1:] if c != ASK), None)
        if named is None:
            framework, version = sorted(versions.items(), reverse=True)[0]
            raise refuse_ask_cuda(framework, version, where, buildable_cudas(known, versions))
        cuda, where = named
        candidates = [c for c in candidates if c[0] != ASK]
    for other, other_where in candidates[1:]:
        if other != cuda and not (other == "cpu" and "base image" in other_where):
            found.lose(
                found.origin,
                f"CUDA {other} ({other_where})",
                f"differs from CUDA {cuda} ({where}): the spec has one CUDA",
            )
    how["cuda"] = where
    return cuda


def _name(name: str | None, found: Collected) -> str:
    if name is not None:
        if not NAME_RE.match(name) or len(name) > 100:
            raise AdoptError(f"{name!r} is not an environment name", hint="names match [a-z0-9][a-z0-9._-]*")
        return name
    stem = Path(found.origin.removeprefix("image:")).name
    if found.kind == "dockerfile":
        stem = stem.lower().replace("dockerfile", "").strip("._-") or Path(found.origin).resolve().parent.name
    named = Path(found.name.replace("\\", "/")).name if found.name else ""  # `conda env export -p PATH`
    raw = named or stem.split(".")[0] or "adopted"
    slug = re.sub(r"[^a-z0-9._-]+", "-", raw.lower()).strip("-._")[:100]
    return slug if slug and NAME_RE.match(slug) else "adopted"
