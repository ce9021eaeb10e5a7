"""``envkit check``: run the readiness payload (in an image or on this host) and give verdicts per target.

The payload is ``envkit/payload/scripts/ready.py``, launched by :func:`envkit.payload.run` (in an
image: mounted read-only, as the probe is); it needs no GPU and no network. The verdicts are pure
(:mod:`envkit.readiness.rules`).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from envkit import _proc, payload
from envkit.catalog import Catalog
from envkit.errors import ProbeError, SbomNotCarried, UsageError
from envkit.readiness.facts import ReadinessFacts, parse_facts
from envkit.readiness.packages import package_findings, walk_findings
from envkit.readiness.requirements import requirement_findings
from envkit.readiness.rules import (
    ReadinessFinding,
    arch_findings,
    driver_findings,
    driver_floors,
    environment_findings,
    format_version,
    runtime_cuda,
    summarize,
    toolkit_findings,
)
from envkit.readiness.targets import Target
from envkit.sbom.carried import carried_sbom
from envkit.sbom.readiness import with_readiness

if TYPE_CHECKING:
    from envkit.engine.protocol import ContainerEngine

__all__ = [
    "CheckResult",
    "TargetVerdict",
    "check",
    "facts_in_image",
    "facts_on_host",
    "fingerprint_facts",
    "readiness_sbom",
]


def _base(path: str) -> str:
    """The file name of a path inside the image (a string, not a host path)."""
    return path.rsplit("/", 1)[-1]


PAYLOAD_TIMEOUT = 900


def facts_in_image(
    engine: ContainerEngine, image: str, catalog: Catalog, caches: Sequence[str] = ()
) -> ReadinessFacts:
    """Run the payload inside ``image`` (no GPU, no network), the payload directory mounted read-only;
    ``caches``: JIT cache directories inside the image to read too."""
    from envkit.engine.in_image import InImage

    if engine.inspect(image) is None:
        raise ProbeError(f"image {image} does not exist", hint=f"build it first: `envkit build {image}`")
    argv = ["--spec", json.dumps(catalog.gpu.payload_spec())]
    for cache in caches:
        argv += ["--cache", cache]
    result = payload.run(InImage(engine, image, env={"PYTHONDONTWRITEBYTECODE": "1"}), "ready.py", argv)
    if result.code != 0:
        tail = "\n".join(result.stderr.strip().splitlines()[-10:])
        raise ProbeError(
            f"the readiness payload failed in {image} (exit {result.code}):\n{tail}",
            hint="does the image have python3 (3.8 or newer)?",
        )
    return parse_facts(result.stdout, image)


def facts_on_host(
    sites: Sequence[str],
    catalog: Catalog,
    *,
    python: str | None = None,
    env: Mapping[str, str] | None = None,
    run: _proc.Runner = _proc.run,
    caches: Sequence[str] = (),
) -> ReadinessFacts:
    """Run the payload with this host's (or ``python``'s) interpreter over ``sites``.

    Opening the libraries runs their constructors (the code of whoever made ``sites``): the payload
    opens each in a child with an emptied environment, a scratch directory and no network where
    ``unshare`` allows (``--sandbox``; ``facts.load_sandbox`` says what held)."""
    argv = ["--sandbox", "--spec", json.dumps(catalog.gpu.payload_spec())]
    for site in sites:
        argv += ["--site", site]
    for cache in caches:
        argv += ["--cache", cache]
    full_env = {**os.environ, **(env or {}), "PYTHONDONTWRITEBYTECODE": "1"}
    where = payload.Host(python or sys.executable, env=full_env, timeout_s=PAYLOAD_TIMEOUT, runner=run)
    result = payload.run(where, "ready.py", argv)
    if result.code != 0:
        tail = "\n".join(result.stderr.strip().splitlines()[-10:])
        raise ProbeError(
            f"the readiness payload failed on this host (exit {result.code}):\n{tail}",
            hint="rerun with --debug",
        )
    return parse_facts(result.stdout, "this host")


@dataclass(frozen=True)
class TargetVerdict:
    """One target's verdict: ready or will-fail, and the findings behind it."""

    target: Target
    status: str
    findings: tuple[ReadinessFinding, ...]

    def to_json(self) -> dict[str, object]:
        t = self.target
        cc = f"{t.cc[0]}.{t.cc[1]}" if t.cc else None
        return {
            "target": {"label": t.label, "gpu": t.gpu, "compute_capability": cc, "driver": t.driver},
            "status": self.status,
            "findings": [f.to_json() for f in self.findings],
        }


@dataclass(frozen=True)
class CheckResult:
    """The environment's facts and a verdict per target."""

    where: str
    facts: ReadinessFacts
    environment: tuple[ReadinessFinding, ...]
    verdicts: tuple[TargetVerdict, ...]

    @property
    def ok(self) -> bool:
        return all(v.status == "ready" for v in self.verdicts)

    def to_json(self) -> dict[str, object]:
        return {
            "where": self.where,
            "summary": fingerprint_facts(self.facts),
            "load_sandbox": dict(self.facts.load_sandbox) if self.facts.load_sandbox is not None else None,
            "nvidia_require": dict(self.facts.nvidia_require),
            "packages": {
                path: {"name": o.name, "version": o.version, "via": o.via}
                for path, o in self.facts.owners.items()
            },
            "environment": [f.to_json() for f in self.environment],
            "verdicts": [v.to_json() for v in self.verdicts],
        }


def fingerprint_facts(facts: ReadinessFacts) -> dict[str, Any]:
    """The compact facts a probe fingerprint, an SBOM or `envkit diff` carries: per framework, the
    CUDA it was built for, the runtime and library versions loaded (and from where), and the GPU
    architectures of each library with GPU code."""
    out: dict[str, object] = {}
    for name, fw in facts.frameworks.items():
        loaded = {lib: format_version(lib, v) for lib, v in sorted(fw.loaded.versions.items())}
        files = sorted(
            {p for paths in fw.loaded.maps.values() for p in paths if "nvidia" in p or "cuda" in p}
        )
        out[name] = {
            "version": fw.version,
            "cuda_build": fw.cuda,
            "cudnn_build": fw.cudnn,
            "cuda_runtime": runtime_cuda(fw),
            "loaded": loaded,
            "loaded_files": files,
        }
    archs = {
        (lib.soname or _base(lib.path)): {
            "fatbins": lib.fatbins,
            "sass": sorted(lib.sass),
            "ptx": sorted(lib.ptx),
        }
        for lib in facts.libraries.values()
        if lib.fatbins
    }
    return {"frameworks": out, "gpu_code": dict(sorted(archs.items()))}


def check(facts: ReadinessFacts, targets: Sequence[Target], catalog: Catalog, *, where: str) -> CheckResult:
    """A verdict per target (one for the environment alone when no target is given)."""
    env = tuple(environment_findings(facts, catalog)) + tuple(walk_findings(facts))
    verdicts = []
    for target in targets or [Target("the environment (no GPU or driver named)")]:
        findings = (
            env
            + tuple(toolkit_findings(facts, target, catalog))
            + tuple(arch_findings(facts, target, catalog))
            + tuple(package_findings(facts, target))
            + tuple(requirement_findings(facts, target, catalog))
            + tuple(driver_findings(facts, target, catalog))
        )
        verdicts.append(TargetVerdict(target, summarize(findings), findings))
    return CheckResult(where, facts, env, tuple(verdicts))


def readiness_sbom(engine: ContainerEngine, image: str, facts: ReadinessFacts, catalog: Catalog) -> str:
    """The SBOM ``image`` carries (:func:`~envkit.sbom.carried.carried_sbom`: checked against its label)
    with the readiness facts (:func:`fingerprint_facts`, the driver floors) added: a copy for the host."""
    try:
        text = carried_sbom(engine, image)
    except SbomNotCarried as e:  # no label: the image is the wrong argument; a wrong SBOM: a broken image
        raise (ProbeError if e.labelled else UsageError)(e.message, hint=e.hint) from e
    try:
        return with_readiness(text, fingerprint_facts(facts), driver_floors(facts, catalog))
    except ValueError as e:
        raise ProbeError(f"the SBOM in {image}: {e}", hint="rebuild the image: `envkit build NAME`") from e
