"""The lock as a CycloneDX 1.6 SBOM: every conda and pip package with purl, version and hashes.

- conda: ``pkg:conda/NAME@VERSION?build=&channel=&subdir=&type=`` (the purl spec's conda type,
  https://github.com/package-url/purl-spec: ``channel`` is the channel URL the lock names),
  MD5 and SHA-256 of the archive, the download URL as a distribution reference;
- pip: ``pkg:pypi/NAME@VERSION`` (name normalized as PEP 503), the SHA-256 of the locked file;
- the base image: a ``container`` component by image ID (``pkg:docker/REPO@sha256:...``);
- CUDA and the spec's frameworks: ``envkit:cuda`` and ``envkit:framework:NAME`` properties of
  the image component (frameworks are packages of the lock, listed with the others).

Licenses: the lock records none (conda-lock.yml and requirements.lock carry no license field), so
a component has one only when ``licenses`` (e.g. read from a pack's ``index.json``) names it.
The document is deterministic: ``metadata.timestamp`` is ``SOURCE_DATE_EPOCH`` and the serial
number a UUID derived from the lock digest. It is validated against the CycloneDX 1.6 JSON
schema (cyclonedx-python-lib's strict validator) before it is returned.
"""

from __future__ import annotations

import copy
import datetime as dt
import functools
import hashlib
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cyclonedx.model import ExternalReference, ExternalReferenceType, HashAlgorithm, HashType, Property, XsUri
from cyclonedx.model.bom import Bom
from cyclonedx.model.component import Component, ComponentType
from cyclonedx.model.license import LicenseExpression
from cyclonedx.output.json import JsonV1Dot6
from cyclonedx.schema import SchemaVersion
from packageurl import PackageURL

from envkit import __version__
from envkit._pep503 import canonicalize_name
from envkit.lock import LockState
from envkit.lock.lockfile import LockContents
from envkit.lock.solver import CondaPackage, PipPackage
from envkit.spec.models import Spec

__all__ = [
    "SBOM_LABEL",
    "SBOM_NAME",
    "SBOM_PATH",
    "SERIAL_NAMESPACE",
    "ImageRef",
    "check_sbom",
    "conda_purl",
    "docker_purl",
    "lock_sbom",
    "pypi_purl",
    "sbom_sha256",
    "schema_problem",
    "schema_validator",
]

SBOM_NAME = "sbom.cdx.json"
SBOM_PATH = f"/opt/env/share/envkit/{SBOM_NAME}"  # inside the image
SBOM_LABEL = "io.envkit.sbom-sha256"
SERIAL_NAMESPACE = uuid.UUID(
    "6f1c8f2e-7d0a-4b9e-9a51-3c1f0e2d4b7a"
)  # envkit's: serial = uuid5(this, lock digest)


@dataclass(frozen=True)
class ImageRef:
    """The base image: its reference and the engine's image ID (``sha256:...``) when known."""

    ref: str
    id: str | None = None


def pypi_purl(package: PipPackage) -> PackageURL:
    return PackageURL(type="pypi", name=canonicalize_name(package.name), version=package.version)


def conda_purl(package: CondaPackage) -> PackageURL:
    channel = package.url.rsplit("/", 2)[0]
    kind = "conda" if package.url.endswith(".conda") else "tar.bz2"
    stem = package.url.rsplit("/", 1)[-1].removesuffix(".conda").removesuffix(".tar.bz2")
    build = package.build or (
        stem.rsplit("-", 2)[-1] if stem.count("-") >= 2 else ""
    )  # v1 locks: in the file name
    qualifiers = {"build": build, "channel": channel, "subdir": package.subdir or package.platform,
                  "type": kind}  # fmt: skip
    return PackageURL(type="conda", name=package.name, version=package.version, qualifiers=qualifiers)


def docker_purl(image: ImageRef) -> PackageURL | None:
    """The image as a ``pkg:docker`` purl pinned by its sha256 ID (None without one)."""
    if not image.id or not image.id.startswith("sha256:"):
        return None
    name = image.ref.split("@", 1)[0].rsplit(":", 1)[0] if "/" in image.ref or ":" in image.ref else image.ref
    return PackageURL(type="docker", name=name, version=image.id)


def _licenses(name: str, licenses: Mapping[str, str]) -> list[LicenseExpression]:
    value = licenses.get(name)
    return [LicenseExpression(value)] if value else []


def _prop(name: str, value: str) -> Property:
    return Property(name=name, value=value)


def _distribution(url: str) -> list[ExternalReference]:
    return [ExternalReference(type=ExternalReferenceType.DISTRIBUTION, url=XsUri(url))] if url else []


def _conda_component(package: CondaPackage, platform: str, known: Mapping[str, str]) -> Component:
    purl = conda_purl(package)
    hashes = [HashType(alg=HashAlgorithm.MD5, content=package.md5)] if package.md5 else []
    if package.sha256:
        hashes.append(HashType(alg=HashAlgorithm.SHA_256, content=package.sha256))
    return Component(
        name=package.name,
        version=package.version,
        purl=purl,
        bom_ref=purl.to_string(),
        hashes=hashes,
        licenses=_licenses(package.name, known),
        external_references=_distribution(package.url),
        properties=[_prop("envkit:installer", "conda"), _prop("envkit:platform", platform)],
    )


def _pip_component(package: PipPackage, platform: str, known: Mapping[str, str]) -> Component:
    purl = pypi_purl(package)
    return Component(
        name=package.name,
        version=package.version,
        purl=purl,
        bom_ref=purl.to_string(),
        hashes=[HashType(alg=HashAlgorithm.SHA_256, content=package.sha256)] if package.sha256 else [],
        licenses=_licenses(package.name, known),
        external_references=_distribution(package.url),
        properties=[_prop("envkit:installer", "pip"), _prop("envkit:platform", platform)],
    )


def lock_sbom(
    *,
    name: str,
    lock_sha256: str,
    contents: LockContents,
    base: ImageRef,
    epoch: int,
    cuda: str,
    frameworks: Mapping[str, str],
    licenses: Mapping[str, str] | None = None,
    validate: bool = True,
) -> str:
    """The SBOM of image ``envkit/NAME`` built from this lock (JSON text, validated unless
    ``validate`` is false: :func:`check_sbom` later)."""
    known = licenses or {}
    bom = Bom(serial_number=uuid.uuid5(SERIAL_NAMESPACE, lock_sha256))
    bom.metadata.timestamp = dt.datetime.fromtimestamp(epoch, tz=dt.timezone.utc)
    properties = [
        _prop("envkit:version", __version__),
        _prop("envkit:lock-sha256", lock_sha256),
        _prop("envkit:cuda", cuda),
        *(_prop(f"envkit:framework:{k}", v) for k, v in sorted(frameworks.items())),
    ]
    bom.metadata.component = Component(
        name=f"envkit/{name}", version=lock_sha256[:12], type=ComponentType.CONTAINER, bom_ref="image",
        properties=properties,
    )  # fmt: skip
    seen: dict[str, Component] = {}
    for platform in contents.platforms:
        for conda in contents.conda.get(platform, ()):
            _add(seen, _conda_component(conda, platform, known), platform)
        for pip in contents.pip.get(platform, ()):
            _add(seen, _pip_component(pip, platform, known), platform)
    bom.components.add(
        Component(
            name=base.ref, version=base.id, type=ComponentType.CONTAINER, purl=docker_purl(base),
            bom_ref="base-image", properties=[_prop("envkit:role", "base-image")],
        )
    )  # fmt: skip
    for component in seen.values():
        bom.components.add(component)
    bom.register_dependency(bom.metadata.component, list(bom.components))
    text = JsonV1Dot6(bom).output_as_string(indent=2, sort_keys=True) + "\n"
    if validate:
        check_sbom(name, text)
    return text


def check_sbom(name: str, text: str) -> None:
    """Raise ValueError when the SBOM ``text`` of ``name`` is not valid CycloneDX 1.6. The validator
    (jsonschema, and rfc3987-syntax's grammar: ~1 s to import, 4 s on a busy machine) is imported
    here, not with the module: naming an up-to-date image needs the SBOM's bytes, not this check."""
    problem = schema_problem(json.loads(text))
    if problem is not None:
        raise ValueError(f"the SBOM of {name} does not validate against CycloneDX 1.6: {problem}")


@functools.cache
def schema_validator() -> Any:
    """cyclonedx-python-lib's strict CycloneDX 1.6 validator, less the ``iri``/``iri-reference`` checks.

    With ``jsonschema[format-nongpl]`` installed (the ``json-validation`` extra), those two formats
    are checked by rfc3987-syntax's Earley parser: minutes for the SBOM of a small lock (seen in the
    test suite). Every other keyword and format (``uri``, ``uri-reference``, ``date-time`` …) is
    still checked. ``_validator`` is the library's prepared Draft 7 validator (schema + registry);
    the pin (11.12.0) keeps it stable.
    """
    from cyclonedx.validation.json import JsonStrictValidator

    strict = JsonStrictValidator(SchemaVersion.V1_6)._validator
    checker = copy.deepcopy(strict.format_checker)
    for slow in ("iri", "iri-reference"):
        checker.checkers.pop(slow, None)
    return strict.evolve(format_checker=checker)


def schema_problem(document: Any) -> str | None:
    """Why ``document`` (parsed JSON) is not valid CycloneDX 1.6, or None."""
    problem = next(schema_validator().iter_errors(document), None)
    return None if problem is None else str(problem.message)


def _add(seen: dict[str, Component], component: Component, platform: str) -> None:
    key = str(component.bom_ref)
    if key in seen:  # a noarch package locked for several platforms: one component, every platform
        seen[key].properties.add(Property(name="envkit:platform", value=platform))
        return
    seen[key] = component


def sbom_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def spec_sbom(
    spec: Spec, lock: LockState, base: ImageRef, epoch: int, *, validate: bool = True
) -> str | None:
    """The SBOM of the image ``spec`` builds from a fresh ``lock`` (None: no lock to describe)."""
    if lock.lock is None or not lock.lock_sha256:
        return None
    return lock_sbom(
        name=spec.name, lock_sha256=lock.lock_sha256, contents=lock.lock.contents, base=base, epoch=epoch,
        cuda=spec.cuda, frameworks=dict(spec.frameworks.items()),  # the set ones: dict(model) keeps None
        validate=validate,
    )  # fmt: skip
