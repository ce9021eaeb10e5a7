"""The Docker Engine API adapter (docker SDK, low-level ``APIClient`` for streamed builds).

Only this module imports ``docker``. Every SDK or ``requests`` error becomes an
:class:`~envkit.errors.EngineError` with a hint, at this edge.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import io
import os
import re
import shutil
import socket
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import docker
import docker.errors
import docker.types
import requests.exceptions

from envkit.engine.pip_messages import PIP_NO_MATCH
from envkit.engine.protocol import (
    BUILDER_OF_LABEL,
    LAYER_LABEL,
    STAGE_LABEL,
    BuildContext,
    BuildEvent,
    ImageInfo,
    Mount,
    RunResult,
)
from envkit.engine.run_bounds import (
    MAX_RUN_OUTPUT_BYTES,
    env_seconds,
    output_too_large,
    read_output,
    run_timeout,
    timed_out,
)
from envkit.errors import BuildFailed, ContainerCommandMissing, EngineError, EngineUnavailable

__all__ = ["DockerEngine", "build_failure", "engine_timeout", "patient", "translate_error"]

TIMEOUT_ENV = "ENVKIT_ENGINE_TIMEOUT"
DEFAULT_TIMEOUT_S = 60  # docker's own client default

BUILD_TIMEOUT_S = 3 * 3600  # a quiet `pip install torch` step can take minutes between lines
PATIENT_TIMEOUT_S = 3 * 3600  # saving, loading or removing a multi-GB image: minutes without a byte
_STEP = re.compile(r"^Step (\d+/\d+) : (.*)\Z")
_TAIL = 25

_BASE_IMAGE = re.compile(
    r"pull access denied|repository does not exist|manifest unknown|manifest for .* not found|"
    r"no such host|failed to resolve|dial tcp|TLS handshake timeout|i/o timeout|"
    r"server misbehaving|connection refused.*registry|requested access to the resource is denied",
    re.IGNORECASE,
)
_DISK_FULL = re.compile(r"no space left on device", re.IGNORECASE)
_FROM = re.compile(r"^Step \d+/\d+ : FROM (\S+)", re.MULTILINE)

_DAEMON_HINT = (
    "start the Docker daemon (`sudo systemctl start docker`, or `sudo dockerd &`), "
    "or point DOCKER_HOST at a running engine (e.g. unix:///run/user/1000/docker.sock)"
)
_SOCKET_HINT = (
    "add your user to the docker group (`sudo usermod -aG docker $USER`, then log in again), "
    "run rootless Docker, or set DOCKER_HOST to a socket you may use"
)
# what the SDK raises at this edge; every one becomes an EngineError (translate_error)
_SDK_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException, OSError)
_DISK_HINT = "free disk space: `docker system df`, then `docker image prune` (or remove old envkit/* tags)"


# What runc says when a container's command cannot be executed (the explanation of the 400/500
# APIError of `start`), e.g. exec: "python3": executable file not found in $PATH: unknown
_MISSING_COMMAND = re.compile(
    r'exec: "(?P<cmd>[^"]+)": (?:executable file not found in \$PATH|stat [^:]*: no such file or directory'
    r"|no such file or directory|permission denied)"
)


def translate_error(error: BaseException, *, what: str = "the Docker engine") -> EngineError:
    """Map docker / requests exceptions to an envkit error with a hint, by type and status code.

    - an :class:`docker.errors.APIError` is the engine's answer: its status code and explanation
      decide (a container command that does not exist is its own message, not "daemon down");
    - connection errors, a missing or refused socket (anywhere in the cause chain): the engine is
      unavailable; a socket we may not open: permission;
    - a timeout, a full disk (``ENOSPC``): said so; anything else: the first line of the error.
    """
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    chain = _chain(error)
    api = next((e for e in chain if isinstance(e, docker.errors.APIError)), None)
    if api is not None:
        return _api_error(api, what)
    if any(isinstance(e, PermissionError) for e in chain):
        return EngineUnavailable(f"permission denied on the Docker socket ({host})", hint=_SOCKET_HINT)
    if any(isinstance(e, OSError) and e.errno == errno.ENOSPC for e in chain):
        return EngineError(f"{what}: the disk is full ({_first_line(str(error))})", hint=_DISK_HINT)
    if any(isinstance(e, requests.exceptions.Timeout | TimeoutError) for e in chain):
        return EngineError(
            f"{what} did not answer in time",
            hint=f"is the daemon overloaded? retry, check `docker info`, or wait longer (${TIMEOUT_ENV})",
        )
    unreachable = (requests.exceptions.ConnectionError, ConnectionError, FileNotFoundError)
    if any(isinstance(e, unreachable) for e in chain):
        return EngineUnavailable(f"cannot reach the Docker daemon at {host}", hint=_DAEMON_HINT)
    if isinstance(error, docker.errors.DockerException) and not error.__cause__ and not error.__context__:
        # docker.from_env() wraps "no engine" in a bare DockerException ("Error while fetching server
        # API version: ..."), the connection error only in its text
        return EngineUnavailable(f"cannot reach the Docker daemon at {host}: {_first_line(str(error))}",
                                 hint=_DAEMON_HINT)  # fmt: skip
    return EngineError(
        f"{what}: {_first_line(_chain_text(error))}",
        hint="check `docker info`; rerun with --debug for details",
    )


def _api_error(error: docker.errors.APIError, what: str) -> EngineError:
    status = error.status_code
    explanation = str(error.explanation or error)
    missing = _MISSING_COMMAND.search(explanation)
    if missing:
        return ContainerCommandMissing(
            f"{what}: the container's command {missing.group('cmd')!r} does not exist in the image "
            f"(or is not executable)",
            hint="check that the image has it on PATH (python3 for the probe); the Docker daemon is fine",
        )
    if _DISK_FULL.search(explanation):
        return EngineError(f"{what}: the disk is full ({_first_line(explanation)})", hint=_DISK_HINT)
    if status == 404:
        return EngineError(f"{what}: not found: {_first_line(explanation)}", hint="check the name or tag")
    if status in (401, 403):
        return EngineError(f"{what}: refused by the engine ({status}): {_first_line(explanation)}",
                           hint="check your registry login and permissions")  # fmt: skip
    if status == 409:
        return EngineError(
            f"{what}: conflict: {_first_line(explanation)}", hint="retry; is another build running?"
        )
    kind = "the engine failed" if error.is_server_error() else "the engine refused the request"
    return EngineError(
        f"{what}: {kind} ({status}): {_first_line(explanation)}",
        hint="check `docker info`; rerun with --debug for details",
    )


def _chain(error: BaseException) -> list[BaseException]:
    found: list[BaseException] = []
    seen: BaseException | None = error
    while seen is not None and len(found) < 8 and seen not in found:
        found.append(seen)
        seen = seen.__cause__ or seen.__context__
    return found


def build_failure(error: str, tail: Sequence[str]) -> BuildFailed:
    """Classify a failed build from its error message and the last lines of output."""
    text = "\n".join([*tail, error])
    pin = PIP_NO_MATCH.search(text)
    froms = _FROM.findall(text)
    if _DISK_FULL.search(text):
        return BuildFailed(f"the disk is full: {error}", hint=_DISK_HINT, log_tail=tail)
    if pin:
        return BuildFailed(
            f"pip found no distribution for {pin.group(1)} inside the image",
            hint="check that pin in the spec's pip: list (does that version exist for this Python?); "
            "with --offline envkit fetches wheels on the host and reports this before building",
            log_tail=tail,
        )
    if _BASE_IMAGE.search(error):
        image = froms[-1] if froms else "the base image"
        return BuildFailed(
            f"base image {image} is not present locally and cannot be pulled: {error}",
            hint="`docker pull` or `docker load` it, or set base_image to an image present locally",
            log_tail=tail,
        )
    return BuildFailed(
        f"a build step failed: {error}", hint="read the last lines above and the full log", log_tail=tail
    )


def engine_timeout(environ: Mapping[str, str] = os.environ) -> int:
    """The client timeout in seconds: ``$ENVKIT_ENGINE_TIMEOUT`` (1 to 86400), else 60."""
    return env_seconds(environ, TIMEOUT_ENV, DEFAULT_TIMEOUT_S)


@contextlib.contextmanager
def patient(api: Any) -> Iterator[None]:
    """The client's timeout raised to :data:`PATIENT_TIMEOUT_S` for one call (saving, loading or
    removing a multi-GB image), its own restored after."""
    before = getattr(api, "timeout", None)  # None: a client without one (a test's spec'd mock)
    if before is None:
        yield
        return
    api.timeout = PATIENT_TIMEOUT_S
    try:
        yield
    finally:
        api.timeout = before


def _connect(seconds: int) -> Any:
    """An API client at the daemon's own API version (``version="auto"`` asks it). A unix socket is
    tried first with a socket of our own, closed whatever happens: the SDK's failed connect (no
    socket file, nobody listening, no permission) leaves its socket to the garbage collector."""
    host = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    try:
        if host.startswith("unix://"):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                probe.settimeout(seconds)
                probe.connect(host.removeprefix("unix://"))
        return docker.APIClient(**docker.utils.kwargs_from_env(), version="auto", timeout=seconds)
    except _SDK_ERRORS as e:
        raise translate_error(e) from e


class DockerEngine:
    """:class:`~envkit.engine.protocol.ContainerEngine` on the Docker Engine API."""

    def __init__(
        self, client: Any | None = None, *, timeout: int | None = None, max_output: int = MAX_RUN_OUTPUT_BYTES
    ) -> None:
        """``timeout``: seconds a call may wait for the daemon's answer (``$ENVKIT_ENGINE_TIMEOUT``,
        else 60: a daemon busy saving or loading a multi-GB image can take longer); ``max_output``:
        bytes of each stream of a run read at most (:mod:`envkit.engine.run_bounds`)."""
        if client is None:
            client = _connect(engine_timeout() if timeout is None else timeout)
        self.api = client
        self.max_output = max_output

    def build(
        self,
        context: BuildContext,
        tag: str,
        *,
        labels: Mapping[str, str],
        nocache: bool = False,
        network: bool = True,
    ) -> Iterator[BuildEvent]:
        tail: collections.deque[str] = collections.deque(maxlen=_TAIL)
        # a file is the request body as it is: the SDK (requests) sends it in blocks, sized by fstat
        body = io.BytesIO(context) if isinstance(context, bytes) else context
        try:
            stream = self.api.build(
                fileobj=body, custom_context=True, tag=tag, labels=dict(labels),
                nocache=nocache, rm=True, forcerm=True, pull=False, decode=True, timeout=BUILD_TIMEOUT_S,
                network_mode=None if network else "none",
            )  # fmt: skip
            failed: BuildFailed | None = None
            for chunk in stream:
                if failed is not None:
                    continue  # read the stream to its end: the connection is released, not leaked
                if "error" in chunk:
                    detail = chunk.get("errorDetail") or {}
                    failed = build_failure(str(detail.get("message") or chunk["error"]).strip(), tuple(tail))
                    continue
                message = str(chunk.get("stream") or chunk.get("status") or "").rstrip("\n")
                if not message:
                    continue
                tail.extend(message.splitlines())
                step = _STEP.match(message.strip())
                yield BuildEvent(message, step=f"{step.group(1)} {step.group(2)}" if step else None)
            if failed is not None:
                raise failed
        except BuildFailed:
            raise
        except _SDK_ERRORS as e:
            failure = translate_error(e, what="the build")
            if isinstance(e, docker.errors.APIError) and not isinstance(failure, EngineUnavailable):
                raise build_failure(_first_line(_chain_text(e)), tuple(tail)) from e
            raise failure from e

    def inspect(self, image: str, *, history: bool = False) -> ImageInfo | None:
        try:
            data = self.api.inspect_image(image)
            entries = self.api.history(image) if history else None
        except docker.errors.NotFound:  # ImageNotFound is one
            return None
        except _SDK_ERRORS as e:
            raise translate_error(e) from e
        info = image_info(data)
        return replace(info, history=len(entries or ())) if history else info

    def images(self, label: str) -> list[ImageInfo]:
        try:
            listed = self.api.images(filters={"label": label})
        except _SDK_ERRORS as e:
            raise translate_error(e) from e
        found = [self.inspect(str(item["Id"])) for item in listed]
        return [i for i in found if i is not None]

    def tag(self, image: str, tag: str) -> None:
        repository, _, name = tag.rpartition(":")
        try:
            self.api.tag(image, repository, name, force=True)
        except _SDK_ERRORS as e:
            raise translate_error(e, what=f"tagging {tag}") from e

    def remove(self, image: str) -> None:
        try:  # a CUDA image's layers (GBs) take minutes to delete on a busy disk
            with patient(self.api):
                self.api.remove_image(image, noprune=False)
        except docker.errors.NotFound:
            return
        except _SDK_ERRORS as e:
            raise translate_error(e, what=f"removing {image}") from e

    def prune_builder_images(self, name: str, keep: Collection[str] = ()) -> int:
        filters = {"dangling": True, "label": [f"{STAGE_LABEL}=builder", f"{BUILDER_OF_LABEL}={name}"]}
        try:
            if not keep:
                pruned = self.api.prune_images(filters=filters)
                return int((pruned or {}).get("SpaceReclaimed") or 0)
            freed = 0
            for image in self.api.images(filters=filters) or ():
                if ((image.get("Labels") or {}).get(LAYER_LABEL)) in keep:
                    continue  # a layer stage of this build: the next build's cache
                with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
                    self.api.remove_image(image["Id"], noprune=False)  # in use or gone: left
                    freed += int(image.get("Size") or 0)
        except _SDK_ERRORS as e:
            raise translate_error(e, what=f"removing the builder images of {name}") from e
        return freed

    def free_bytes(self) -> int | None:
        """The free space of ``DockerRootDir`` when the engine is on this machine (a unix socket and
        the directory exists here); None otherwise."""
        host = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
        if not host.startswith("unix://"):
            return None
        try:
            root = str((self.api.info() or {}).get("DockerRootDir") or "")
        except _SDK_ERRORS as e:
            raise translate_error(e) from e
        try:
            return shutil.disk_usage(root).free if root and Path(root).is_dir() else None
        except OSError:
            return None

    def import_image(self, rootfs_tar: Path, tag: str, *, changes: Sequence[str] = ()) -> ImageInfo:
        repository, _, name = tag.rpartition(":")
        try:
            self.api.import_image_from_file(
                str(rootfs_tar), repository=repository, tag=name, changes=list(changes)
            )
        except _SDK_ERRORS as e:
            raise translate_error(e, what=f"importing {tag}") from e
        info = self.inspect(tag)
        if info is None:
            raise EngineError(f"the engine imported {tag} but cannot find it", hint="run `docker images`")
        return info

    def run(
        self,
        image: str,
        argv: Sequence[str],
        *,
        mounts: Sequence[Mount] = (),
        env: Mapping[str, str] | None = None,
        gpus: bool = False,
        network: bool = False,
        timeout_s: float | None = None,
    ) -> RunResult:
        binds = {m.source: {"bind": m.target, "mode": "ro" if m.read_only else "rw"} for m in mounts}
        requests_ = [docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])] if gpus else None
        seconds = run_timeout() if timeout_s is None else timeout_s
        container: dict[str, object] | None = None
        try:
            host_config = self.api.create_host_config(
                binds=binds, network_mode=None if network else "none", device_requests=requests_
            )
            container = self.api.create_container(
                image, command=list(argv), environment=dict(env or {}), host_config=host_config
            )
            self.api.start(container)
            status = self._wait(container, seconds, image, argv)
            stdout, stderr = (self._output(container, name, image, argv) for name in ("stdout", "stderr"))
        except docker.errors.ImageNotFound as e:
            raise EngineError(
                f"no such image: {image}", hint=f"build it first: envkit build NAME ({e})"
            ) from e
        except _SDK_ERRORS as e:
            raise translate_error(e, what=f"running {image}") from e
        finally:
            if container is not None:
                # A leftover container is not worth masking the real result (force: a running one is killed).
                with contextlib.suppress(docker.errors.DockerException, requests.exceptions.RequestException):
                    self.api.remove_container(container, force=True)
        return RunResult(int(status.get("StatusCode", -1)), stdout, stderr)

    def _wait(self, container: dict[str, object], seconds: float, image: str, argv: Sequence[str]) -> Any:
        """The container's exit status; :class:`ContainerTimedOut` when it runs past ``seconds``."""
        started = time.monotonic()
        try:
            return self.api.wait(container, timeout=seconds)
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError) as e:
            if time.monotonic() - started < seconds * 0.9:  # the daemon went away: not our limit
                raise
            raise timed_out(image, argv, seconds) from e

    def _output(self, container: dict[str, Any], name: str, image: str, argv: Sequence[str]) -> str:
        """One stream of the finished container, at most ``max_output`` bytes read."""
        stream = self.api.logs(
            container, stdout=name == "stdout", stderr=name == "stderr", stream=True, follow=False
        )
        try:
            data = read_output(stream, self.max_output)
        finally:
            stream.close()  # the SDK's: shuts the socket down (the rest is never read) ...
            response = getattr(stream, "_response", None)
            if response is not None:  # ... but leaves the response's file, and so the socket, open
                response.close()
        if data is None:
            raise output_too_large(image, argv, name, self.max_output)
        return data.decode("utf-8", "replace")


def image_info(data: Mapping[str, Any]) -> ImageInfo:
    """The :class:`ImageInfo` of an ``inspect_image`` answer (its history is not counted here)."""
    config = data.get("Config") or {}
    return ImageInfo(
        id=str(data.get("Id", "")),
        tags=tuple(sorted(data.get("RepoTags") or ())),
        labels=dict(config.get("Labels") or {}),
        user=str(config.get("User") or ""),
        size=int(data.get("Size") or 0),
        diff_ids=tuple(str(d) for d in (data.get("RootFS") or {}).get("Layers") or ()),
    )


def _chain_text(error: BaseException) -> str:
    parts: list[str] = []
    seen: BaseException | None = error
    while seen is not None and len(parts) < 6:
        parts.append(f"{type(seen).__name__}: {seen}")
        seen = seen.__cause__ or seen.__context__
    return "\n".join(parts)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "unknown error"
