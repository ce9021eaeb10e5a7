"""Choose a starter environment from the catalog and render its spec.

Defaults come from the catalog, never from a hard-coded list: the newest
verified release of the framework, the newest CUDA that release publishes
wheels for and that has a runtime base image, and Python 3.11 when the
release supports it (otherwise its newest Python).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources

from packaging.version import Version

from envkit import __version__
from envkit.catalog import Catalog, FrameworkRelease
from envkit.errors import UsageError

__all__ = [
    "FRAMEWORKS",
    "StarterChoice",
    "choose_starter",
    "render_spec",
    "substitute",
    "template",
    "template_tokens",
    "valid_cudas",
]

FRAMEWORKS = ("paddle", "torch")
DEFAULT_FRAMEWORK = "torch"
_PREFERRED_PYTHON = "3.11"
_DISPLAY = {"paddle": "PaddlePaddle", "torch": "PyTorch"}


@dataclass(frozen=True)
class StarterChoice:
    """The framework release, CUDA flavour and Python of a starter spec."""

    framework: str
    version: str
    cuda: str
    python: str
    name: str
    numpy: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {
            "framework": self.framework,
            "version": self.version,
            "cuda": self.cuda,
            "python": self.python,
            "name": self.name,
        }


def template(name: str) -> str:
    """The text of a packaged template (``envkit/init/templates/NAME``)."""
    return resources.files("envkit.init").joinpath("templates").joinpath(name).read_text("utf-8")


def _buildable(catalog: Catalog, cuda: str) -> bool:
    """A spec on ``cuda`` validates without an explicit base image."""
    if cuda == "cpu":
        return True
    return catalog.cuda_release(cuda) is not None and catalog.runtime_image(cuda) is not None


def _cuda_key(cuda: str) -> tuple[int, Version]:
    return (0, Version("0")) if cuda == "cpu" else (1, Version(cuda))


def valid_cudas(catalog: Catalog, framework: str) -> list[str]:
    """CUDA flavours ``envkit init`` can start ``framework`` on, ``cpu`` first."""
    family = catalog.frameworks.get(framework)
    found = {w.cuda for r in (family.releases if family else ()) for w in r.wheels}
    return sorted((c for c in found if _buildable(catalog, c)), key=_cuda_key)


def _release_key(release: FrameworkRelease) -> tuple[bool, Version]:
    return (release.verified, Version(release.version))


def choose_starter(
    catalog: Catalog,
    framework: str | None = None,
    cuda: str | None = None,
    python: str | None = None,
    name: str | None = None,
) -> StarterChoice:
    """Pick a release, CUDA and Python the catalog supports; raise UsageError otherwise."""
    framework = framework or DEFAULT_FRAMEWORK
    family = catalog.frameworks.get(framework)
    if family is None or framework not in FRAMEWORKS:
        raise UsageError(f"unknown framework {framework!r}", hint=f"use one of {', '.join(FRAMEWORKS)}")
    cudas = valid_cudas(catalog, framework)
    if cuda is not None and cuda not in cudas:
        raise UsageError(
            f"the catalog has no {framework} wheels for CUDA {cuda} that envkit can build",
            hint=f"use --cuda one of {', '.join(cudas)}",
        )
    releases = sorted(family.releases, key=_release_key, reverse=True)
    if cuda is None:
        newest = releases[0]
        gpu = [
            w.cuda
            for w in newest.wheels
            if w.cuda != "cpu" and not w.experimental and _buildable(catalog, w.cuda)
        ]
        cuda = max(gpu, key=_cuda_key) if gpu else "cpu"
    candidates = [r for r in releases if r.wheel_for(cuda) is not None]
    if python is not None:
        fitting = [r for r in candidates if python in r.python]
        if not fitting:
            pythons = sorted({p for r in candidates for p in r.python}, key=Version)
            raise UsageError(
                f"no {framework} release in the catalog has CUDA {cuda} wheels for Python {python}",
                hint=f"use --python one of {', '.join(pythons)}",
            )
        candidates = fitting
    release = candidates[0]
    if python is None:
        python = (
            _PREFERRED_PYTHON if _PREFERRED_PYTHON in release.python else max(release.python, key=Version)
        )
    major_minor = ".".join(release.version.split(".")[:2])
    flavour = "cpu" if cuda == "cpu" else f"cuda{cuda}"
    return StarterChoice(
        framework=framework,
        version=release.version,
        cuda=cuda,
        python=python,
        name=name or f"{flavour}-{framework}{major_minor}",
        numpy=release.numpy,
    )


def template_tokens(choice: StarterChoice) -> dict[str, str]:
    """The tokens every template shares: envkit's version and the environment's name."""
    return {"@@VERSION@@": __version__, "@@ENV@@": choice.name}


def render_spec(choice: StarterChoice) -> str:
    """The starter spec's YAML text (byte-stable for a given choice)."""
    flavour = "CPU" if choice.cuda == "cpu" else f"CUDA {choice.cuda}"
    description = f"{_DISPLAY[choice.framework]} {choice.version} on {flavour}, Python {choice.python}"
    extra: list[str] = []
    if choice.numpy:
        extra += ["conda:", f"  - {json.dumps('numpy' + choice.numpy)}"]
    env: dict[str, str] = {}
    if choice.cuda == "cpu":
        env["OMP_NUM_THREADS"] = "1"
    else:
        env["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
    if choice.framework == "paddle":
        env["FLAGS_cudnn_deterministic"] = "1"
    extra.append("env:")
    extra += [f"  {key}: {json.dumps(value)}" for key, value in sorted(env.items())]
    replacements = {
        **template_tokens(choice),
        "@@DESCRIPTION@@": json.dumps(description),
        "@@PYTHON@@": choice.python,
        "@@CUDA@@": choice.cuda,
        "@@FRAMEWORK@@": choice.framework,
        "@@FW_VERSION@@": choice.version,
        "@@FLAVOUR@@": flavour,
        "@@EXTRA@@": "\n".join(extra),
    }
    return substitute(template("spec.yaml"), replacements)


def substitute(text: str, replacements: dict[str, str]) -> str:
    for token, value in replacements.items():
        text = text.replace(token, value)
    return text
