"""Check a syntactically valid spec against the catalog's facts."""

from __future__ import annotations

import difflib
import re
from typing import Protocol

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from envkit._pep503 import canonicalize_name
from envkit._safe import redact, url_credentials
from envkit.catalog import FRAMEWORK_PACKAGES, Catalog, KnownBadRule
from envkit.errors import Problem
from envkit.spec.images import cudnn_version
from envkit.spec.missing_image import missing_image_hint
from envkit.spec.models import ARCHES, CudaRuntime, Installer, Spec
from envkit.spec.yamlsrc import Located

__all__ = ["check_against_catalog", "pinned_specifiers"]

# Versions used to decide whether a spec's constraint admits a known-bad range.
_PROBE_VERSIONS = ("1.21.6", "1.23.5", "1.24.4", "1.26.4", "2.0.2", "2.1.3", "2.2.6", "2.3.5",
                   "2.4.6", "3.0.0")  # fmt: skip
_CONDA_PIN = re.compile(r"^(?:[^:]+::)?([A-Za-z0-9_.\-]+)\s*([=<>!~].*)?\Z")


def check_against_catalog(
    spec: Spec, catalog: Catalog, located: Located, filename: str, *, strict: bool = False
) -> tuple[list[Problem], list[str]]:
    """Problems (errors) and warnings. ``strict`` turns "not in the catalog" warnings into errors."""
    problems: list[Problem] = []
    warnings: list[str] = []

    def problem(path: tuple[str | int, ...], message: str, hint: str | None = None) -> None:
        problems.append(Problem(filename, located.line_of(path), ".".join(map(str, path)), message, hint))

    if spec.is_gpu and catalog.cuda_release(spec.cuda) is None:
        known = catalog.cuda_versions()
        close = difflib.get_close_matches(spec.cuda, known, n=3, cutoff=0.5)
        problem(
            ("cuda",),
            f"CUDA {spec.cuda} is not in the catalog",
            f"known: {', '.join(close or known)}, or cpu",
        )

    _check_frameworks(spec, catalog, problem, warnings, strict=strict)
    _check_installers(spec, catalog, problem, warnings)
    _check_known_bad(spec, catalog, problem, warnings)
    _check_base_image(spec, catalog, problem, warnings)
    _check_credentials(spec, problem)
    return problems, warnings


def _check_credentials(spec: Spec, problem: _Reporter) -> None:
    """URLs in a spec end up in environment.yml, lock files and image layers: no credentials."""
    urls: list[tuple[tuple[str | int, ...], str]] = [
        (("channels", i), c) for i, c in enumerate(spec.channels)
    ]
    urls += [(("mirrors", k), u) for k in ("pypi", "conda") if (u := getattr(spec.mirrors, k))]
    for path, url in urls:
        found = url_credentials(url)
        if found:
            problem(
                path,
                f"{redact(url)} carries credentials ({found}); they would be written into "
                "environment.yml, the lock files and the image",
                "remove them from the spec: put them in ~/.netrc (machine HOST login USER password TOKEN) "
                "or the tool's own credential store (`conda token set`, pip's keyring), "
                "which conda, pip and uv read at lock and build time",
            )


def pinned_specifiers(spec: Spec) -> dict[str, SpecifierSet]:
    """Version constraints per normalized package name, from frameworks, pip and conda."""
    found: dict[str, SpecifierSet] = {}
    for framework, version in spec.frameworks.items():
        packages = FRAMEWORK_PACKAGES[framework]
        if framework == "paddle":  # what the spec installs: paddlepaddle on CPU, paddlepaddle-gpu on CUDA
            packages = ("paddlepaddle",) if spec.cuda == "cpu" else ("paddlepaddle-gpu",)
        for package in packages:
            found[package] = SpecifierSet(f"=={version}")
    for line in spec.pip:
        req = Requirement(line)
        name = canonicalize_name(req.name)
        found[name] = found.get(name, SpecifierSet()) & req.specifier
    for line in spec.conda:
        match = _CONDA_PIN.match(line.split("[", 1)[0].strip())
        if not match:
            continue
        name, constraint = canonicalize_name(match.group(1)), (match.group(2) or "").split()[:1]
        text = constraint[0] if constraint else ""
        if text.startswith("=") and not text.startswith("=="):
            text = "==" + text.lstrip("=").split("=", 1)[0]
        try:
            found[name] = found.get(name, SpecifierSet()) & SpecifierSet(text.replace("*", "0"))
        except ValueError:
            continue
    return found


def _check_known_bad(spec: Spec, catalog: Catalog, problem: _Reporter, warnings: list[str]) -> None:
    pins = pinned_specifiers(spec)
    for rule in catalog.known_bad:
        verdict = _rule_verdict(rule, pins)
        if verdict == "error":
            problem(("pip",), f"known-bad combination [{rule.id}]: {rule.message}", rule.fix)
        elif verdict == "warning":
            warnings.append(f"{spec.name}: may hit [{rule.id}] ({rule.message}); {rule.fix}")


def _rule_verdict(rule: KnownBadRule, pins: dict[str, SpecifierSet]) -> str | None:
    """'error' when the spec forces the bad combination, 'warning' when it allows it."""
    forced = True
    for package, bad in rule.when.items():
        constraint = pins.get(package)
        if constraint is None:
            if package != "numpy":
                return None
            forced = False
            continue
        admitted = [v for v in _PROBE_VERSIONS if v in constraint] if package == "numpy" else None
        if admitted is None:
            version = str(next(iter(constraint))).lstrip("=") if len(constraint) == 1 else None
            if version is None or version not in SpecifierSet(bad):
                return None
            continue
        bad_set = SpecifierSet(bad)
        if not any(v in bad_set for v in admitted):
            return None
        if any(v not in bad_set for v in admitted):
            forced = False
    return "error" if forced else "warning"


def _check_frameworks(
    spec: Spec, catalog: Catalog, problem: _Reporter, warnings: list[str], *, strict: bool
) -> None:
    """Each framework release: in the catalog, with wheels for the spec's Python and CUDA."""
    for framework, version in spec.frameworks.items():
        path = ("frameworks", framework)
        release = catalog.framework_release(framework, version)
        if release is None:
            impossible = catalog.impossible(framework, version, spec.cuda, spec.python)
            if impossible:
                problem(path, impossible, f"pick a {framework} release, CUDA and Python that exist together")
                continue
            known = catalog.framework_versions(framework)
            close = difflib.get_close_matches(version, known, n=3, cutoff=0.6)
            message = (
                f"{framework} {version} is not in the catalog: envkit cannot check its wheels; "
                "`envkit catalog refresh` to update"
            )
            hint = f"closest known: {', '.join(close)}" if close else f"known: {known[0]} ... {known[-1]}"
            if strict:
                problem(path, message, hint)
            else:
                warnings.append(f"{spec.name}: {message} ({hint})")
            continue
        if release.yanked:
            warnings.append(f"{spec.name}: {framework} {version} is yanked on PyPI; pick another release")
        if spec.python not in release.python:
            problem(
                path,
                f"{framework} {version} publishes no wheels for Python {spec.python} "
                f"(it has wheels for Python {', '.join(release.python)})",
                f"use python one of {', '.join(release.python)}, or another {framework} release",
            )
        if release.wheel_for(spec.cuda) is None:
            flavours = ", ".join(w.cuda for w in release.wheels)
            note = f" (catalog note: {release.note})" if release.note else ""
            problem(
                path,
                f"{framework} {version} has no published wheels for CUDA {spec.cuda}",
                f"available: {flavours}{note}",
            )


def _check_installers(spec: Spec, catalog: Catalog, problem: _Reporter, warnings: list[str]) -> None:
    if not spec.installer.uses_conda:
        return
    for platform in spec.platforms:
        arch = ARCHES[platform]
        installer = catalog.installer(spec.installer.value, arch, spec.python)
        if installer is None:
            problem(
                ("installer",),
                f"the catalog has no {spec.installer.value} installer for {platform}",
                "use installer miniconda or miniforge, or drop the platform",
            )
        elif not installer.verified:
            warnings.append(
                f"{spec.name}: the {spec.installer.value} installer's sha256 for {platform} comes from a "
                f"single secondary source ({installer.source}); the build fails if it is wrong"
            )


def _check_cuda_runtime(spec: Spec, catalog: Catalog, problem: _Reporter) -> bool:
    """``cuda_runtime: pypi``: a CUDA spec whose CUDA has a wheel set; True when it applies."""
    if spec.cuda_runtime is not CudaRuntime.PYPI:
        return False
    if not spec.is_gpu:
        problem(
            ("cuda_runtime",), "cuda_runtime: pypi is for CUDA specs; this one is cpu", "remove cuda_runtime"
        )
        return True
    found = catalog.cuda_wheels(spec.cuda)
    if found is None:
        known = ", ".join(s.cuda for s in catalog.cuda_wheel_sets)
        problem(
            ("cuda_runtime",),
            f"the catalog knows no NVIDIA runtime wheels on PyPI for CUDA {spec.cuda}",
            f"use cuda_runtime: image (nvidia/cuda), or a CUDA with PyPI wheels: {known}",
        )
        return True
    cudnn = cudnn_version(spec, catalog)
    own = any(framework in found.framework_pins for framework, _ in spec.frameworks.items())
    if cudnn and not own and found.cudnn_for(cudnn) is None:
        pinned = ", ".join(w.version for w in found.cudnn) or "none"
        problem(
            ("cuda_runtime",),
            f"the framework needs cuDNN {cudnn}; the catalog pins no {found.cudnn_package} {cudnn}.x "
            f"for CUDA {spec.cuda} (pinned: {pinned}; PyPI has {', '.join(found.cudnn_on_pypi) or 'none'})",
            "use cuda_runtime: image, or add the cuDNN wheel to envkit/catalog/data/cuda_wheels.yaml",
        )
    return True


def _check_base_image(spec: Spec, catalog: Catalog, problem: _Reporter, warnings: list[str]) -> None:
    if _check_cuda_runtime(spec, catalog, problem) and not spec.base_image:
        return  # the registry-free base of the catalog
    if spec.base_image:
        if catalog.base_image(spec.base_image) is None:
            close = catalog.closest_images(spec.base_image)
            hint = f"closest known: {', '.join(close)}" if close else "no similar tag is known"
            warnings.append(
                f"{spec.name}: base image {spec.base_image} is not in the catalog ({hint}); "
                "fine for private registries, but check the tag exists"
            )
        return
    if spec.installer is Installer.VENV:
        images = [b.ref for b in catalog.base_images if b.cuda == spec.cuda or (not spec.is_gpu and b.python)]
        problem(
            ("installer",),
            "installer venv uses the base image's own Python, so base_image is required",
            f"e.g. base_image: {images[0]}" if images else "set base_image to an image with python3",
        )
    elif spec.is_gpu and catalog.runtime_image(spec.cuda) is None:
        problem(("cuda",), *missing_image_hint(spec, catalog))


class _Reporter(Protocol):
    def __call__(self, path: tuple[str | int, ...], message: str, hint: str | None = None) -> None: ...
