"""The conda part: py-rattler solves in process, offline against ``file://`` channels.

``RattlerSolver.solve`` turns a :class:`CondaRequest` into locked packages:

1. solve with the spec's virtual packages (``__cuda`` from the spec, never from the host), the
   previous lock and the CUDA variant builds (:func:`~envkit.lock.conda_variants.variant_preference`)
   as the solver's preference;
2. pin CUDA variants: when several builds of the chosen version exist (cpu, cuda118, cuda121…),
   the build made for the spec's CUDA wins (the solver alone may pick any); where the preference
   already got it (the usual case) this costs a query, else a second solve with the pins;
3. verify sha256 and md5 of every ``file://`` package itself (py-rattler does not).
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import rattler

from envkit.errors import SolverFailed, Unsatisfiable, UsageError
from envkit.lock.conda_variants import variant_pins, variant_preference
from envkit.lock.solver import CondaPackage, CondaRequest, CondaSolution

__all__ = ["RattlerSolver", "verify_local_package"]

_MIRROR_HINT = (
    "check the channel URL; without internet, point mirrors.conda (or channels) at a reachable "
    "mirror or a local file:// channel"
)


class RattlerSolver:
    """Solve with py-rattler (pinned 0.28.0: its API moves between releases)."""

    def __init__(self, cache_dir: Path | None = None, timeout_s: float | None = 300.0) -> None:
        self._cache_dir = cache_dir
        self._timeout_s = timeout_s
        # one gateway for every solve of this solver (one lock: its platforms): noarch and the channels are
        # read once, not per platform; a solver sees its channels as they were at its first solve
        self._gateway: rattler.Gateway | None = None

    def _shared_gateway(self) -> rattler.Gateway:
        if self._gateway is None:
            self._gateway = rattler.Gateway(cache_dir=self._cache_dir)
        return self._gateway

    def solve(self, request: CondaRequest) -> CondaSolution:
        return asyncio.run(self._solve(request))

    async def _solve(self, request: CondaRequest) -> CondaSolution:
        gateway = self._shared_gateway()
        sources = [rattler.Channel(c) for c in request.channels]
        platforms: list[Any] = [request.platform, "noarch"]
        preferred = await self._records_for(gateway, sources, platforms, request)
        try:
            preferred += await variant_preference(gateway, sources, platforms, request)
        except Exception as e:  # the channels' first read: rattler's exception types are not importable
            raise _translate(e, request, list(request.specs)) from e
        specs = list(request.specs)
        records = await self._run(gateway, sources, platforms, specs, preferred, request)
        warnings: list[str] = []
        pins = await variant_pins(gateway, sources, platforms, records, specs, request.cuda)
        if pins:  # the preference was not enough (see variant_preference): solve again with the pins
            try:
                records = await self._run(gateway, sources, platforms, specs + pins, preferred, request)
            except Unsatisfiable:
                warnings.append(
                    f"{request.platform}: could not pin the CUDA {request.cuda} builds ({', '.join(pins)}); "
                    "kept the solver's choice"
                )
        packages = tuple(sorted((_package(r, request.platform) for r in records), key=lambda p: p.name))
        for package in packages:
            verify_local_package(package)
        return CondaSolution(packages, tuple(warnings))

    async def _run(
        self,
        gateway: rattler.Gateway,
        sources: list[rattler.Channel],
        platforms: list[Any],
        specs: list[str],
        preferred: list[Any],
        request: CondaRequest,
    ) -> list[Any]:
        virtual = [
            rattler.GenericVirtualPackage(
                rattler.PackageName(v.name), rattler.Version(v.version), rattler.BuildString(v.build)
            )
            for v in request.virtual_packages
        ]
        constraints = [f"cuda-version {request.cuda}.*"] if request.cuda else None
        timeout = datetime.timedelta(seconds=self._timeout_s) if self._timeout_s is not None else None
        try:
            records: list[Any] = await rattler.solve(
                sources,
                [rattler.MatchSpec(s) for s in specs],
                gateway=gateway,
                platforms=platforms,
                locked_packages=preferred or None,
                virtual_packages=virtual,
                constraints=constraints,
                timeout=timeout,
                channel_relations="disabled",
            )
        except Exception as e:  # rattler's exception types are not importable
            raise _translate(e, request, specs) from e
        return records

    async def _records_for(
        self,
        gateway: rattler.Gateway,
        sources: list[rattler.Channel],
        platforms: list[Any],
        request: CondaRequest,
    ) -> list[Any]:
        """The repodata records of the previous lock, found by url (the solver wants records)."""
        if not request.preferred:
            return []
        wanted = {p.url for p in request.preferred}
        names = sorted({p.name for p in request.preferred})
        try:
            result = await gateway.query(
                sources, platforms, names, recursive=False, channel_relations="disabled"
            )
        except Exception as e:
            raise _translate(e, request, list(request.specs)) from e
        return [r for subdir in result for r in subdir if str(r.url) in wanted]


def _package(record: Any, platform: str) -> CondaPackage:
    return CondaPackage(
        name=record.name.normalized,
        version=str(record.version),
        build=str(record.build),
        url=str(record.url),
        md5=record.md5.hex() if record.md5 else "",
        sha256=record.sha256.hex() if record.sha256 else "",
        platform=platform,
        subdir=str(record.subdir),
        depends=tuple(str(d) for d in record.depends),
    )


def _translate(error: Exception, request: CondaRequest, specs: Sequence[str]) -> Exception:
    kind = type(error).__name__
    text = str(error).strip()
    if kind == "InvalidMatchSpecError":
        return UsageError(
            f"a conda requirement is not a valid match spec: {text}", hint="fix the spec's conda list"
        )
    if kind == "SolverError" and "Cannot solve" in text:
        return Unsatisfiable(_explain(text, request, specs), hint=_unsat_hint(request))
    if kind in {"GatewayError", "FetchRepoDataError", "ChannelError"} or "could not find subdir" in text:
        return SolverFailed(
            f"cannot read the conda channels {', '.join(request.channels)} for {request.platform}: {text}",
            hint=_MIRROR_HINT,
        )
    return SolverFailed(f"the conda solve for {request.platform} failed ({kind}): {text}", hint=_MIRROR_HINT)


def _explain(text: str, request: CondaRequest, specs: Sequence[str]) -> str:
    """Name the spec's requirements that the solver's explanation mentions, then quote it."""
    mentioned = [s for s in specs if re.search(rf"(?<![\w.-]){re.escape(_spec_name(s))}(?![\w.-])", text)]
    virtual = ", ".join(f"{v.name} {v.version}" for v in request.virtual_packages if v.name == "__cuda")
    lines = [
        f"the conda requirements cannot all be satisfied on {request.platform}"
        + (f" (target provides {virtual})" if virtual else "")
        + ".",
    ]
    if mentioned:
        lines.append(f"conflicting requirements: {'; '.join(mentioned)}")
    lines.append("the solver says:")
    lines += [f"  {line}" for line in text.removeprefix("Cannot solve the request because of: ").splitlines()]
    return "\n".join(line.rstrip() for line in lines if line.strip())


def _unsat_hint(request: CondaRequest) -> str:
    cuda = f"; check that the channels carry builds for CUDA {request.cuda}" if request.cuda else ""
    return f"relax one of the conflicting requirements in the spec's conda list{cuda}"


def _spec_name(spec: str) -> str:
    return re.split(r"[\s=<>!~\[]", spec.split("::")[-1], maxsplit=1)[0]


def verify_local_package(package: CondaPackage) -> None:
    """Check the sha256 (and md5) of a ``file://`` package: py-rattler trusts local files."""
    parts = urlsplit(package.url)
    if parts.scheme != "file":
        return
    path = Path(unquote(parts.path))
    try:
        data = path.read_bytes()
    except OSError as e:
        raise SolverFailed(
            f"{package.name} {package.version}: {path} is in the channel's repodata but cannot be read: {e}",
            hint="re-index the local channel or restore the file",
        ) from e
    sha256 = hashlib.sha256(data).hexdigest()
    md5 = hashlib.md5(data, usedforsecurity=False).hexdigest()
    if (package.sha256 and sha256 != package.sha256) or (package.md5 and md5 != package.md5):
        raise SolverFailed(
            f"{package.name} {package.version}: {path} does not match the channel's repodata "
            f"(sha256 {sha256}, expected {package.sha256})",
            hint="the local channel or mirror holds a changed file: restore it from a trusted source, "
            "or re-index the channel if the change is intended",
        )
