"""The multi-stage Dockerfile: a builder stage creates /opt/env, a runtime stage copies it.

Pure: (the resolved spec, inputs) -> text. Every value that reaches the file was
validated by the spec models; values are still quoted here so that a future
field cannot inject a line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from envkit._io import load_json_bounded
from envkit.catalog import InstallerFile
from envkit.catalog.require import ARCH_ENV, ArchRequirement, gpu_code_arch_requirement, nvidia_arch_env
from envkit.engine.protocol import BUILDER_OF_LABEL, LAYER_LABEL, STAGE_LABEL
from envkit.errors import UsageError
from envkit.lock.epoch import EPOCH_LABEL, LAYER_EPOCH, source_date_epoch
from envkit.lock.lockset import GPU_CODE
from envkit.render.layers import LayerGroup, layer_groups, layer_lock_name
from envkit.spec.images import RuntimeBase
from envkit.spec.models import ARCHES, CudaRuntime, Installer, Spec
from envkit.spec.resolve import ResolvedSpec

if TYPE_CHECKING:
    from envkit.lock import LockState
    from envkit.lock.lockset import Lock

__all__ = [
    "CUDA_LIB_DIR",
    "ENV_PREFIX",
    "LOCK_LABEL",
    "SPEC_LABEL",
    "USER_NAME",
    "USER_UID",
    "DockerfileInputs",
    "LayerRecipe",
    "cuda_link_step",
    "docker_word",
    "dockerfile",
    "labels",
    "nvidia_contract",
    "top_copies",
]

ENV_PREFIX = "/opt/env"
USER_NAME = "envkit"
USER_UID = 10001
SPEC_LABEL = "io.envkit.spec-sha256"  # envkit.spec.load.spec_hash of the spec
LOCK_LABEL = "io.envkit.lock-sha256"  # digest over the lock set (envkit.lock.Lock.sha256)
_CONTEXT = "/tmp/envkit"
_PACK_CHANNEL = "channel"  # envkit.offline.collect.CHANNEL: the packed local channel in the context


@dataclass(frozen=True)
class DockerfileInputs:
    """What the build context holds besides the spec: lock files, a wheelhouse."""

    spec_sha256: str
    conda_locks: tuple[str, ...] = ()  # e.g. ("conda-linux-64.lock",): install these, no solve
    pip_lock: str | None = None  # e.g. "requirements.lock": hashed pins
    lock_sha256: str | None = None
    wheelhouse: str | None = None  # e.g. "wheels": install pip packages offline from here
    conda_pack: str | None = None  # e.g. "installer": offline conda install from the packed local channel
    offline: bool = False  # the build has no network: OS libraries are checked, not installed
    sbom: str | None = None  # e.g. "sbom.cdx.json": the lock's SBOM, copied into the image (envkit.sbom)
    # venv: one image layer per package group (envkit.render.layers), each from its own lock file
    # (layers/<group>.lock) and, offline, its own wheels (<wheelhouse>/<group>/)
    layers: tuple[LayerGroup, ...] = ()
    # the image's NVIDIA_REQUIRE_ARCH from the framework's fatbins (the lock's gpu-code.json), and what
    # it came from; None: the CUDA release's oldest target, and arch_source says why
    arch_requirement: str | None = None
    arch_source: str | None = None

    @classmethod
    def from_lock(
        cls,
        spec_sha256: str,
        lock: LockState,
        wheelhouse: str | None = None,
        resolved: ResolvedSpec | None = None,
    ) -> DockerfileInputs:
        """Install from ``lock`` when it is fresh; the unlocked defaults otherwise. With ``resolved``
        a venv's pip packages install in layers by group."""
        if not lock.fresh or lock.lock is None:
            return cls(spec_sha256=spec_sha256, wheelhouse=wheelhouse)
        groups: tuple[LayerGroup, ...] = ()
        if resolved is not None and resolved.spec.installer is Installer.VENV and lock.pip_lock:
            pinned = lock.lock.files[lock.pip_lock].decode("utf-8")
            groups = layer_groups(resolved, lock.lock.contents.pip, pinned)
        arch = _arch_from_lock(lock.lock)
        return cls(
            spec_sha256=spec_sha256,
            conda_locks=lock.conda_locks,
            pip_lock=lock.pip_lock,
            lock_sha256=lock.lock_sha256,
            wheelhouse=wheelhouse,
            layers=groups,
            arch_requirement=arch.value if arch else None,
            arch_source=arch.source if arch else None,
        )

    @property
    def source_date_epoch(self) -> int:
        """The build's SOURCE_DATE_EPOCH: from the lock digest (unlocked: the spec's), never the clock."""
        return source_date_epoch(self.lock_sha256 or self.spec_sha256)


def _arch_from_lock(lock: Lock) -> ArchRequirement | None:
    """The architecture constraint the lock's ``gpu-code.json`` gives (None: no such file)."""
    if lock.gpu_code is None:
        return None
    pinned = {h for pkgs in lock.contents.pip.values() for p in pkgs for h in p.hashes}
    pinned |= {c.sha256 for pkgs in lock.contents.conda.values() for c in pkgs if c.sha256}
    where = lock.directory / GPU_CODE
    try:
        return gpu_code_arch_requirement(load_json_bounded(lock.gpu_code, 12), pinned)
    except ValueError as e:
        raise UsageError(
            f"{where}: {e}",
            hint="rewrite it: `envkit lock NAME --archives DIR` (the framework's wheel in DIR), or delete it",
        ) from e


def _arch_comment(resolved: ResolvedSpec, inputs: DockerfileInputs) -> str:
    """Where the image's ``NVIDIA_REQUIRE_ARCH`` comes from, said in the Dockerfile."""
    if not resolved.spec.is_gpu:
        return ""
    if inputs.arch_requirement:
        return f"# {ARCH_ENV}: {inputs.arch_source}\n"
    release = resolved.cuda_release
    oldest = f"CUDA {release.version}'s oldest target" if release else "no CUDA release in the catalog"
    why = inputs.arch_source or f"no {GPU_CODE} (`envkit lock NAME --archives DIR` records the framework's)"
    return f"# {ARCH_ENV}: {oldest}, not the framework's fatbins: {why}\n"


def _epoch_arg() -> str:
    """``ARG SOURCE_DATE_EPOCH``: every RUN of the stage sees it (pip and compileall write checked-hash
    .pyc files, useradd dates /etc/shadow by it); unlike ENV it is not left in the image's config.
    :data:`LAYER_EPOCH`, not the lock's date (the image's label): a layer's bytes follow its content
    alone, never the rest of the lock."""
    return f"ARG SOURCE_DATE_EPOCH={LAYER_EPOCH}\n"


def labels(spec: Spec, inputs: DockerfileInputs) -> dict[str, str]:
    found = {
        "org.opencontainers.image.title": spec.name,
        "org.opencontainers.image.description": spec.description or f"envkit environment {spec.name}",
        SPEC_LABEL: inputs.spec_sha256,
        "io.envkit.python": spec.python,
        "io.envkit.cuda": spec.cuda,
        "io.envkit.installer": spec.installer.value,
    }
    if inputs.lock_sha256:
        found[LOCK_LABEL] = inputs.lock_sha256
    found[EPOCH_LABEL] = str(inputs.source_date_epoch)
    for framework, version in spec.frameworks.items():
        found[f"io.envkit.framework.{framework}"] = version
    if spec.is_gpu and spec.cuda_runtime is CudaRuntime.PYPI:
        found["io.envkit.cuda-runtime"] = spec.cuda_runtime.value
    return found


def dockerfile(resolved: ResolvedSpec, inputs: DockerfileInputs, header: str) -> str:
    spec = resolved.spec
    base = resolved.runtime
    runtime = base.ref
    if spec.installer is Installer.VENV:
        builder = spec.base_image or runtime
    elif inputs.conda_pack and inputs.conda_locks:
        # offline: the runtime image builds too (an air-gapped engine must hold it anyway; same glibc)
        builder = runtime
    else:
        builder = resolved.builder_image
    parts = [
        header,
        f"FROM {builder} AS builder\n",
        f'LABEL {STAGE_LABEL}="builder" {BUILDER_OF_LABEL}={docker_word(spec.name)}\n',
        'SHELL ["/bin/bash", "-o", "pipefail", "-c"]\n',
        _epoch_arg(),
    ]
    if spec.installer is Installer.VENV:
        parts.append(_venv_steps(spec, inputs))
    else:
        parts.append(_conda_steps(resolved, inputs))
    if base.pypi_cuda and not inputs.layers:
        parts.append(cuda_link_step(resolved))
    parts.extend(layer_stage(resolved, inputs, g) for g in inputs.layers if g.name != "venv")
    parts.append(_runtime_stage(resolved, inputs, base, os_library_step(resolved, inputs)))
    return "".join(parts)


def _installers(resolved: ResolvedSpec) -> list[InstallerFile]:
    spec = resolved.spec
    found = []
    for platform in spec.platforms:
        arch = ARCHES[platform]
        installer = resolved.installer(platform)
        if installer is None:
            raise UsageError(
                f"the catalog has no {spec.installer.value} installer for {arch}",
                hint="choose another installer or platform",
            )
        found.append(installer)
    return found


def _fetch(resolved: ResolvedSpec, dest: str) -> str:
    cases = "".join(
        f"      {i.arch}) url={json.dumps(i.url)}; sha256={i.sha256} ;; \\\n" for i in _installers(resolved)
    )
    return (
        "RUN apt-get update \\\n"
        " && apt-get install -y --no-install-recommends ca-certificates curl \\\n"
        " && rm -rf /var/lib/apt/lists/*\n"
        'RUN case "$(uname -m)" in \\\n'
        f"{cases}"
        '      *) echo "envkit: no installer for $(uname -m)" >&2; exit 1 ;; \\\n'
        "    esac \\\n"
        f' && curl -fsSL --retry 3 -o {dest} "$url" \\\n'
        f' && echo "$sha256  {dest}" | sha256sum -c -\n'
    )


def _offline_conda_steps(spec: Spec, inputs: DockerfileInputs) -> str:
    """Install the explicit lock from the packed local channel with py-rattler: no network, no solve.

    The labels and the runtime stage are those of the online build of the same lock; only the
    builder stage differs (the runtime image itself, and the pack's py-rattler wheel instead of the
    catalog installer's download). py-rattler needs a python3 >= 3.10: the image's, else the pack's
    catalog installer (for images without Python, e.g. nvidia/cuda), installed aside only for that.
    """
    tools, ctx = inputs.conda_pack, _CONTEXT
    text = "ENV DEBIAN_FRONTEND=noninteractive PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1\n"
    if spec.mirrors.pypi:
        text += f"ENV PIP_INDEX_URL={docker_word(spec.mirrors.pypi)}\n"
    subdir = '$(case "$(uname -m)" in aarch64) echo linux-aarch64;; *) echo linux-64;; esac)'
    too_old = '"$py" -c "import sys; sys.exit(sys.version_info < (3, 10))"'
    missing = "envkit: no python3 >= 3.10 to run py-rattler (neither the image nor the pack has one)"
    script = [
        f'py="$(command -v python3 || true)"; boot={ctx}/{tools}/bootstrap-"$(uname -m)".sh',
        f'if [ -n "$py" ] && ! {too_old}; then py=; fi',
        f'if [ -z "$py" ] && [ -f "$boot" ]; then bash "$boot" -b -p {ctx}/bootstrap >/dev/null '
        f"&& py={ctx}/bootstrap/bin/python3; fi",
        f'if [ -z "$py" ]; then echo "{missing}" >&2; exit 1; fi',
        f'"$py" -m zipfile -e {ctx}/{tools}/py_rattler-*_"$(uname -m)".whl {ctx}/rattler',
        f'PYTHONPATH={ctx}/rattler "$py" {ctx}/{tools}/conda_install.py "{ctx}/conda-{subdir}.lock" \\\n'
        f"      {ctx}/{tools}/packages.json {ctx}/{_PACK_CHANNEL} {ENV_PREFIX}",
        f"rm -rf {ctx}/rattler {ctx}/pkgs {ctx}/bootstrap {ENV_PREFIX}/CACHEDIR.TAG",
    ]
    text += (
        f"COPY {tools}/ {ctx}/{tools}/\n"
        f"COPY {_PACK_CHANNEL}/ {ctx}/{_PACK_CHANNEL}/\n"
        f"COPY {' '.join(inputs.conda_locks)} {ctx}/\n"
        "RUN " + "; \\\n    ".join(script[:4]) + " \\\n && " + " \\\n && ".join(script[4:]) + "\n"
    )
    if inputs.wheelhouse:
        text += f"COPY {inputs.wheelhouse}/ {ctx}/{inputs.wheelhouse}/\n"
    return text + _pip_lock_step(inputs)


def _conda_steps(resolved: ResolvedSpec, inputs: DockerfileInputs) -> str:
    spec = resolved.spec
    if inputs.conda_pack and inputs.conda_locks:
        return _offline_conda_steps(spec, inputs)
    if spec.installer is Installer.MICROMAMBA:
        tool = "/usr/local/bin/micromamba"
        setup = _fetch(resolved, tool) + f"RUN chmod 0755 {tool}\n"
        create, clean = f"{tool} create -y -p {ENV_PREFIX}", f"{tool} clean -afy"
    else:
        setup = _fetch(resolved, "/tmp/installer.sh")
        setup += "RUN bash /tmp/installer.sh -b -p /opt/conda && rm -f /tmp/installer.sh\n"
        create, clean = f"/opt/conda/bin/conda create -y -p {ENV_PREFIX}", "/opt/conda/bin/conda clean -afy"
    text = "ENV DEBIAN_FRONTEND=noninteractive PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1\n"
    if spec.mirrors.pypi:
        text += f"ENV PIP_INDEX_URL={docker_word(spec.mirrors.pypi)}\n"
    text += setup
    if inputs.conda_locks:
        files = " ".join(inputs.conda_locks)
        text += f"COPY {files} {_CONTEXT}/\n"
        subdir = '$(case "$(uname -m)" in aarch64) echo linux-aarch64;; *) echo linux-64;; esac)'
        platform_file = f"{_CONTEXT}/conda-{subdir}.lock"
        text += f'RUN {create} --file "{platform_file}" \\\n && {clean}\n'
        text += _pip_lock_step(inputs)
    else:
        text += f"COPY environment.yml {_CONTEXT}/environment.yml\n"
        if spec.installer is Installer.MICROMAMBA:
            text += f"RUN {create} -f {_CONTEXT}/environment.yml \\\n && {clean}\n"
        else:
            # no channel of the installer's own configuration (Miniconda: Anaconda's defaults) joins the
            # environment.yml's: `nodefaults` did that for conda < 25, 26.7.1 fetches it as a channel
            # (executed: tests/integration/realconda); an empty root `channels` does it for all
            text += (
                f"RUN /opt/conda/bin/conda config --file /opt/conda/.condarc --remove-key channels "
                ">/dev/null 2>&1 || true \\\n"
                " && printf 'channels: []\\n' >> /opt/conda/.condarc \\\n"
                f" && /opt/conda/bin/conda env create -p {ENV_PREFIX} -f {_CONTEXT}/environment.yml \\\n"
                f" && {clean}\n"
            )
    return text


def _pip_lock_step(inputs: DockerfileInputs) -> str:
    if not inputs.pip_lock:
        return ""
    source = _wheel_source(inputs)
    return (
        f"COPY {inputs.pip_lock} {_CONTEXT}/{inputs.pip_lock}\n"
        f"RUN {ENV_PREFIX}/bin/python -m pip install --no-cache-dir --no-deps --require-hashes{source} "
        f"-r {_CONTEXT}/{inputs.pip_lock}\n"
    )


def _wheel_source(inputs: DockerfileInputs) -> str:
    return f" --no-index --find-links {_CONTEXT}/{inputs.wheelhouse}" if inputs.wheelhouse else ""


def _venv_steps(spec: Spec, inputs: DockerfileInputs) -> str:
    text = "ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1\n"
    if spec.mirrors.pypi:
        text += f"ENV PIP_INDEX_URL={docker_word(spec.mirrors.pypi)}\n"
    if inputs.layers:
        seeds = [g for g in inputs.layers if g.name == "venv"]
        text += f"RUN python3 -m venv --system-site-packages {ENV_PREFIX}\n"
        if seeds:  # pinned pip/setuptools/wheel replace the seeded ones here, in the venv's own layer
            text += _group_files(inputs, seeds[0]) + _group_install(inputs, seeds[0]) + "\n"
        return text + f"RUN cd / && {_FILES} > {_VENV_FILES}\n"
    if inputs.wheelhouse:
        text += f"COPY {inputs.wheelhouse}/ {_CONTEXT}/{inputs.wheelhouse}/\n"
    text += f"RUN python3 -m venv --system-site-packages {ENV_PREFIX}\n"
    if inputs.pip_lock:
        return text + _pip_lock_step(inputs)
    return text + (
        f"COPY requirements.txt {_CONTEXT}/requirements.txt\n"
        f"RUN {ENV_PREFIX}/bin/python -m pip install --no-cache-dir{_wheel_source(inputs)} "
        f"-r {_CONTEXT}/requirements.txt\n"
    )


_SHELL = 'SHELL ["/bin/bash", "-o", "pipefail", "-c"]\n'
_STAGE = "/stage"  # a layer stage's files, relative to ENV_PREFIX: what the runtime stage copies
_VENV_FILES = "/tmp/envkit-venv.files"  # the bare venv's files: a layer stage keeps only newer ones
_FILES = f"find {ENV_PREFIX[1:]} -mindepth 1 \\( -type f -o -type l \\) | LC_ALL=C sort"
# move each new path (read from stdin, relative to /) to _STAGE: a rename in the same RUN, so the
# stage's layer holds the group once, never also under ENV_PREFIX
_MOVE = (
    f"{ENV_PREFIX}/bin/python -c 'import os, sys; "
    f'[os.renames(p, "{_STAGE}/" + p[{len(ENV_PREFIX)}:]) for p in sys.stdin.read().splitlines()]\''
)


def _group_files(inputs: DockerfileInputs, group: LayerGroup) -> str:
    """COPY ``group``'s lock file and, offline, its wheels: nothing of another group."""
    lock = layer_lock_name(group.name)
    text = f"COPY {inputs.wheelhouse}/{group.name}/ {_CONTEXT}/{group.name}/\n" if inputs.wheelhouse else ""
    return text + f"COPY {lock} {_CONTEXT}/{lock}\n"


def _group_install(inputs: DockerfileInputs, group: LayerGroup) -> str:
    source = f" --no-index --find-links {_CONTEXT}/{group.name}" if inputs.wheelhouse else ""
    return (
        f"RUN {ENV_PREFIX}/bin/python -m pip install --no-cache-dir --no-deps --require-hashes{source} "
        f"-r {_CONTEXT}/{layer_lock_name(group.name)}"
    )


def layer_stage(resolved: ResolvedSpec, inputs: DockerfileInputs, group: LayerGroup) -> str:
    """The builder stage of one layer: the venv, ``group``'s lock file and wheels only, installed,
    and the files pip added moved to ``/stage`` (NVIDIA's wheels: with the CUDA links)."""
    text = f"\nFROM builder AS layer-{group.name}\n{_SHELL}{_epoch_arg()}{_group_files(inputs, group)}"
    install = _group_install(inputs, group) + " \\\n"
    if group.name == "cuda" and resolved.runtime.pypi_cuda:
        install += " && { " + cuda_link_step(resolved).removeprefix("RUN ").rstrip("\n") + "; } \\\n"
    move = f" && cd / && {_FILES} | LC_ALL=C comm -13 {_VENV_FILES} - | {_MOVE}\n"
    # the label last: only a stage that ran to its end is found as the next build's cache
    return text + install + move + f"LABEL {LAYER_LABEL}={docker_word(group.label)}\n"


def os_library_step(resolved: ResolvedSpec, inputs: DockerfileInputs) -> str:
    """Install the OS libraries the framework wheels need (with network), or check the base has them.

    Offline, a base image without them fails the build here, naming the library, instead of
    the first ``import paddle`` failing with ``ImportError: libgomp.so.1``.
    """
    needed = resolved.libraries
    if not needed:
        return ""
    checks = " && ".join(f"ldconfig -p | grep -qF '{lib.soname} '" for _, lib in needed)
    if inputs.offline or inputs.wheelhouse or inputs.conda_pack:
        lines = "".join(
            f"RUN ldconfig -p | grep -qF '{lib.soname} ' || {{ echo 'envkit: the base image lacks "
            f"{lib.soname} (Debian package {lib.deb}), which the {fw} wheels need; an offline build cannot "
            f"install it: use `envkit base-image` (it includes {lib.deb}) or a base image that has it' >&2; "
            "exit 1; }\n"
            for fw, lib in needed
        )
        return lines
    packages = " ".join(sorted({lib.deb for _, lib in needed}))
    return (
        f"RUN if ! {{ {checks}; }}; then \\\n"
        "      apt-get update \\\n"
        f"      && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends {packages} \\\n"
        "      && rm -rf /var/lib/apt/lists/*; \\\n"
        "    fi\n"
    )


def _runtime_stage(
    resolved: ResolvedSpec, inputs: DockerfileInputs, base: RuntimeBase, os_step: str = ""
) -> str:
    spec = resolved.spec
    label_lines = " \\\n      ".join(f"{k}={docker_word(v)}" for k, v in sorted(labels(spec, inputs).items()))
    env_lines = " \\\n    ".join(f"{k}={v}" for k, v in _env_words(resolved, inputs).items())
    return (
        f"\n# runtime base: {base.ref}: {base.reason}\n"
        f"{_arch_comment(resolved, inputs)}"
        f"FROM {base.ref} AS runtime\n"
        'SHELL ["/bin/bash", "-o", "pipefail", "-c"]\n'
        f"{_epoch_arg()}"
        f"RUN groupadd --gid {USER_UID} {USER_NAME} \\\n"
        f" && useradd -l --uid {USER_UID} --gid {USER_UID} --create-home --shell /bin/bash {USER_NAME}\n"
        f"{os_step}"
        f"COPY --from=builder {ENV_PREFIX} {ENV_PREFIX}\n"
        + "".join(_group_copies(inputs, base.pypi_cuda))
        + f"{_sbom_step(inputs)}"
        # the labels (the lock's digest and date among them) after the steps: a changed lock must not
        # miss Docker's cache for the user's and the unchanged groups' steps above
        f"LABEL {label_lines}\n"
        f"ENV {env_lines}\n"
        f"USER {USER_UID}:{USER_UID}\n"
        f"WORKDIR /home/{USER_NAME}\n"
        'CMD ["python"]\n'
    )


def nvidia_contract(resolved: ResolvedSpec) -> dict[str, str]:
    """What the NVIDIA Container Toolkit reads from an image's config (``nvidia/cuda`` images set them).

    ``NVIDIA_REQUIRE_CUDA``: alternatives separated by spaces (any one suffices): a driver whose CUDA
    is at least this one (the toolkit's own floor, ``min_driver`` in the catalog), or a driver at the
    minor-version-compatibility floor of this CUDA major (``compat_driver``), as ``nvidia/cuda``
    images list their compatible driver branches.
    """
    require = f"cuda>={resolved.spec.cuda}"
    release = resolved.cuda_release
    if release is not None and release.compat_driver != release.min_driver:
        require += f" driver>={release.compat_driver}"
    return {
        "NVIDIA_VISIBLE_DEVICES": "all",
        "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
        "NVIDIA_REQUIRE_CUDA": require,
    }


CUDA_LIB_DIR = f"{ENV_PREFIX}/lib/cuda"  # one directory of links the loader is told about
_LD_CONF = "/etc/ld.so.conf.d/envkit-cuda.conf"


def cuda_link_step(resolved: ResolvedSpec) -> str:
    """Link every library of NVIDIA's wheels into :data:`CUDA_LIB_DIR`, by file name and unversioned.

    Frameworks open CUDA libraries by soname (``libcudnn.so.8``) or unversioned (Paddle's dynload:
    ``libcudnn.so``, ``libcublas.so``); the wheels ship only the versioned files, each in its own
    ``site-packages/nvidia/<component>/lib``. The build fails here, naming it, when a library the
    catalog expects is missing.
    """
    spec, found = resolved.spec, resolved.cuda_wheels
    if found is None:
        raise UsageError(
            f"the catalog has no PyPI runtime wheels for CUDA {spec.cuda}",
            hint=f"use cuda_runtime: image, or one of {', '.join(resolved.cuda_wheel_versions)}",
        )
    cudnn = found.cudnn_for(resolved.cudnn)
    expected = [*found.libraries, *(cudnn.libraries if cudnn else ())]
    site = f"python{spec.python}/site-packages/nvidia"
    check = " ".join(sorted(set(expected)))
    return (
        f"RUN shopt -s nullglob; cd {ENV_PREFIX}/lib && mkdir -p cuda \\\n"
        f' && for f in {site}/*/lib/lib*.so*; do ln -sfn "../$f" "cuda/${{f##*/}}"; done \\\n'
        ' && for f in cuda/lib*.so.*; do b="${f%%.so.*}.so"; [ -e "$b" ] || ln -s "${f##*/}" "$b"; done \\\n'
        f' && for lib in {check}; do [ -e "cuda/$lib" ] || {{ echo "envkit: $lib is not in NVIDIA\'s CUDA '
        f'{spec.cuda} wheels installed here (site-packages/nvidia/*/lib)" >&2; exit 1; }}; done\n'
    )


def _group_copies(inputs: DockerfileInputs, pypi_cuda: bool) -> list[str]:
    """The runtime stage's group copies, bottom first; with NVIDIA's wheels the ``ldconfig`` step
    right after the ``cuda`` group's (what it indexes is that group's alone): a change to a group
    above then leaves it, and every layer below, as the engine has them (:func:`top_copies`)."""
    steps: list[str] = []
    for group in inputs.layers:
        if group.name == "venv":
            continue
        steps.append(f"COPY --from=layer-{group.name} {_STAGE}/ {ENV_PREFIX}/\n")
        if pypi_cuda and group.name == "cuda":
            steps.append(_ldconfig_step())
    if pypi_cuda and not any(g.name == "cuda" for g in inputs.layers):
        steps.append(_ldconfig_step())
    return steps


@dataclass(frozen=True)
class LayerRecipe:
    """One of the runtime stage's top layers made again on its own: a build context (a Dockerfile
    ``FROM scratch`` of that one ``COPY``, and the file it copies) whose image's one layer normalizes
    to the same layer as that step of the image (:mod:`envkit.reproduce.normalize`)."""

    dockerfile: str
    files: tuple[tuple[str, bytes], ...] = ()


def top_copies(
    layers: Sequence[LayerGroup], pypi_cuda: bool, stages: Mapping[str, str], sbom: tuple[str, bytes] | None
) -> tuple[LayerRecipe, ...]:
    """Recipes of the runtime stage's own layers above its last ``RUN``, bottom first: the copies of
    ``layers`` above the ``ldconfig`` step (every group's without one), from ``stages`` (group -> the
    image ID of the layer stage the builder kept), and the SBOM's (``sbom``: its name and bytes). They
    stop below a group with no kept stage: only layers above every such one can be made again alone."""
    groups = [g.name for g in layers if g.name != "venv"]
    if pypi_cuda:
        groups = groups[groups.index("cuda") + 1 :] if "cuda" in groups else []
    recipes: list[LayerRecipe | None] = [
        LayerRecipe(
            f"FROM {stages[name]} AS source\nFROM scratch\nCOPY --from=source {_STAGE}/ {ENV_PREFIX}/\n"
        )
        if name in stages
        else None
        for name in groups
    ]
    if sbom is not None:
        recipes.append(LayerRecipe(f"FROM scratch\n{_sbom_copy(sbom[0])}", (sbom,)))
    kept = len(recipes)
    while kept and recipes[kept - 1] is not None:
        kept -= 1
    return tuple(r for r in recipes[kept:] if r is not None)


def _ldconfig_step() -> str:
    """Tell the loader about :data:`CUDA_LIB_DIR` (the NVIDIA toolkit reruns ldconfig when it injects
    the driver); ldconfig's auxiliary cache records inode times, so it is not kept."""
    return (
        f"RUN printf '%s\\n' {CUDA_LIB_DIR} > {_LD_CONF} \\\n"
        " && ldconfig && rm -f /var/cache/ldconfig/aux-cache\n"
    )


def _sbom_step(inputs: DockerfileInputs) -> str:
    return _sbom_copy(inputs.sbom) if inputs.sbom else ""


def _sbom_copy(name: str) -> str:
    return f"COPY {name} {ENV_PREFIX}/share/envkit/{name}\n"


def _env_words(resolved: ResolvedSpec, inputs: DockerfileInputs) -> dict[str, str]:
    """``ENV`` words: every spec value literal; a spec's PATH goes before the environment's own."""
    own_path = f"{ENV_PREFIX}/bin:$PATH"  # $PATH: the base image's, expanded by Docker
    spec = resolved.spec
    words = {"PATH": own_path, "PYTHONUNBUFFERED": docker_word("1")}
    if spec.is_gpu and resolved.runtime.pypi_cuda:
        words.update({k: docker_word(v) for k, v in nvidia_contract(resolved).items()})
    elif spec.is_gpu:
        # the NVIDIA container runtime refuses to start the image on a driver older than this CUDA, or
        # below its major's minor-version-compatibility floor: the expression `envkit check` evaluates
        # (it replaces the nvidia/cuda base's own, whose per-branch `brand=...,driver>=N,driver<N+1`
        # alternatives refuse drivers minor-version compatibility runs: 530.30.02 for a CUDA 12.2 image)
        words["NVIDIA_REQUIRE_CUDA"] = docker_word(nvidia_contract(resolved)["NVIDIA_REQUIRE_CUDA"])
    words.update(nvidia_arch_env(spec.is_gpu, resolved.cuda_release, docker_word, inputs.arch_requirement))
    for key, value in sorted(spec.env.items()):
        if key == "PATH":
            # empty entries would put the working directory on PATH: drop them
            entries = [entry for entry in value.split(":") if entry]
            if entries:
                words["PATH"] = docker_word(":".join(entries))[:-1] + f':{own_path}"'
        else:
            words[key] = docker_word(value)
    return words


def docker_word(value: str) -> str:
    """``value`` as one double-quoted Dockerfile word that ENV and LABEL read back unchanged.

    Inside double quotes Docker's word lexer unescapes only ``\\\\``, ``\\"`` and ``\\$``
    (moby/buildkit ``frontend/dockerfile/shell/lex.go``, ``processDoubleQuote``) and passes
    every other character through, tabs and non-ASCII included; so escape exactly those three.
    (``json.dumps`` is not Dockerfile quoting: Docker would keep ``\\u00e9`` and ``\\t`` literally.)
    Newlines never reach here: the spec refuses them.
    """
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
    return f'"{escaped}"'
