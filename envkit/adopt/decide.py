"""Which of a source's channels, conda pins, pip pins and indexes a spec carries, and why not the rest.

- ``defaults`` (Anaconda's main channel: its terms of service require a paid licence for
  organisations of 200 or more people, https://www.anaconda.com/legal/terms/terms-of-service)
  is replaced by conda-forge unless ``--keep-defaults``; the build strings of its packages
  name defaults' builds, so those pins keep their version and drop the build.
- A source from another platform (a Windows or macOS export) keeps versions, drops builds, and
  loses the packages only that platform has.
- Framework packages become ``frameworks:`` (envkit installs the framework's wheel for the
  spec's CUDA); conda's CUDA plumbing for pytorch (``pytorch-cuda``, ``cudatoolkit``,
  ``cpuonly``, ``pytorch-mutex``) becomes ``cuda:``; conda's torchvision/torchaudio/torchtext
  move to pip beside the torch wheel (conda's would pull conda's pytorch back in).
- The first ``--index-url`` that is not a framework's own index becomes ``mirrors.pypi``
  (credentials removed); framework indexes come from the catalog; other indexes are reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from envkit._pep503 import canonicalize_name
from envkit.adopt.evidence import Collected, CondaPin, Lost, is_defaults, shown_item, without_credentials
from envkit.adopt.facts import FRAMEWORK_CONDA, FRAMEWORK_PIP
from envkit.adopt.releases import Releases
from envkit.spec.models import Spec

__all__ = ["Decided", "decide_channels", "decide_conda", "decide_mirror", "decide_pip"]

_CUDA_PLUMBING = {"pytorch-cuda", "pytorch-mutex", "cpuonly", "_pytorch_select", "cudatoolkit"}
_TORCH_COMPANIONS = {"torchvision", "torchaudio", "torchtext", "torchdata"}
# conda packages built against (or depending on) conda's pytorch: beside the torch wheel the solver
# would install conda's pytorch too. pip name to move them to, or None (no wheel on PyPI: reported).
_BUILT_ON_CONDA_TORCH: dict[str, str | None] = {
    "pytorch-lightning": "pytorch-lightning",
    "lightning": "lightning",
    "torchmetrics": "torchmetrics",
    "xformers": "xformers",
    "pyg": "torch-geometric",
    "pytorch3d": None,
    "pytorch-scatter": None,
    "pytorch-sparse": None,
    "pytorch-cluster": None,
    "pytorch-spline-conv": None,
    "torchtriton": None,
}
_NO_PIP_WHY = {
    "torchtriton": "the torch wheel brings its own triton",
    "pytorch3d": "PyPI has no pytorch3d wheels: build it in your own image, FROM the one envkit builds",
}
# conda packages only Windows / macOS builds exist for (conda-forge and defaults)
_FOREIGN_ONLY = re.compile(
    r"^(vc|vs2015_runtime|vc14_runtime|vs20\d\d_.*|ucrt|pywin32|pywin32-ctypes|pywinpty|winpty|"
    r"win_inet_pton|wincertstore|menuinst|m2w64-.*|msys2-.*|console_shortcut|powershell_shortcut|"
    r"appnope|pyobjc-.*|libcxx-.*|llvm-openmp-osx)\Z"
)
_FRAMEWORK_INDEX = re.compile(r"download\.pytorch\.org/whl|paddlepaddle\.org\.cn/(?:whl|packages)")
_INDEX_OWNER = (("download.pytorch.org", "torch"), ("paddlepaddle.org.cn", "paddle"))
_FLAVOUR = re.compile(r"/(cu\d{3}|cpu)(?:/|\b)")
_SOLVER_CHANNELS = {"nodefaults", "pypi"}


@dataclass
class Decided:
    """What adopting a source decided: what was lost and why, notes, pins moved to pip."""

    lost: list[Lost] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    defaults_dropped: bool = False
    moved: list[str] = field(default_factory=list)  # conda pins that go to pip (torchvision beside torch)

    def lose(self, where: str, item: str, why: str) -> None:
        self.lost.append(Lost(where, shown_item(item), why))


def decide_channels(found: Collected, decided: Decided, *, keep_defaults: bool) -> list[str] | None:
    """The spec's channels (None: the source names none, the spec's default conda-forge stands)."""
    if not found.channels and not found.conda:
        return None
    if not found.channels and found.kind == "environment.yml":
        decided.lose(
            found.origin,
            "channels: (none)",
            "the file names no channel, so conda uses its configured default (Anaconda's defaults unless "
            "configured otherwise): the spec uses conda-forge",
        )
    kept: list[str] = []
    for channel in dict.fromkeys(found.channels):
        if channel in _SOLVER_CHANNELS:
            continue  # `nodefaults`: not a channel (envkit adds no defaults); `pypi`: conda's pip rows
        if is_defaults(channel) and not keep_defaults:
            decided.defaults_dropped = True
            continue
        clean, removed = without_credentials(channel) if "://" in channel else (channel, None)
        if clean is None:
            decided.lose(found.origin, channel, f"a channel URL carrying {removed}: not carried")
            continue
        if removed:
            decided.lose(
                found.origin,
                channel,
                f"{removed} removed from the channel URL (use `conda token set` or ~/.netrc)",
            )
        if not _valid_channel(clean):
            decided.lose(found.origin, clean, "not a channel name or URL a spec accepts")
            continue
        kept.append("defaults" if is_defaults(clean) else clean)
    if decided.defaults_dropped:
        decided.lose(
            found.origin,
            "channel defaults",
            "Anaconda's defaults channel needs a paid licence for "
            "organisations of 200+ people (Anaconda terms of service); replaced by conda-forge "
            "(--keep-defaults keeps it)",
        )
        if "conda-forge" not in kept:
            kept.append("conda-forge")
    return list(dict.fromkeys(kept or ["conda-forge"]))


def _valid_channel(channel: str) -> bool:
    try:
        Spec(name="probe", python="3.11", cuda="cpu", channels=(channel,))
    except ValueError:
        return False
    return True


def decide_conda(
    found: Collected,
    decided: Decided,
    *,
    frameworks: set[str],
    keep_defaults: bool,
    foreign: bool,
    python_override: str | None,
    cuda: str = "cpu",
) -> list[str]:
    """The conda pins the spec carries, as written where they can be."""
    kept: list[str] = []
    defaults_builds = 0
    moved: list[str] = []
    torch_from_conda = any(FRAMEWORK_CONDA.get(p.name) == "torch" for p in found.conda)
    for pin in found.conda:
        if FRAMEWORK_CONDA.get(pin.name) in frameworks:
            continue  # carried as frameworks:
        if pin.name in _CUDA_PLUMBING and (frameworks or pin.name != "cudatoolkit"):
            _plumbing(pin, decided, cuda)
            continue
        if pin.name in _TORCH_COMPANIONS and "torch" in frameworks and torch_from_conda:
            moved.append(_as_pip(pin.name, pin.spec, pin.version))
            decided.notes.append(
                f"{pin.spec} ({pin.where}): moved to pip as {moved[-1]}, beside the torch wheel"
            )
            continue
        if pin.name in _BUILT_ON_CONDA_TORCH and "torch" in frameworks:
            _built_on_conda_torch(pin, decided, moved)
            continue
        if pin.name == "python" and python_override:
            decided.lose(pin.where, pin.spec, f"replaced by --python {python_override}")
            continue
        if foreign and _FOREIGN_ONLY.match(pin.name):
            decided.lose(pin.where, pin.spec, f"a {found.platform} package: Linux has no build of it")
            continue
        spec = pin.spec
        from_defaults = pin.channel is not None and is_defaults(pin.channel)
        unknown_channel = pin.channel is None and decided.defaults_dropped
        if pin.build and (foreign or ((from_defaults or unknown_channel) and not keep_defaults)):
            spec = f"{pin.name}=={pin.version}" if pin.version else pin.name
            defaults_builds += not foreign
        elif pin.channel and "::" in pin.spec and is_defaults(pin.channel) and not keep_defaults:
            spec = pin.spec.split("::", 1)[1]
        if not _valid_match_spec(spec):
            decided.lose(pin.where, pin.spec, "not a conda match spec a spec accepts")
            continue
        kept.append(spec)
    _conda_notes(found, decided, foreign=foreign, defaults_builds=defaults_builds)
    decided.moved = moved
    return list(dict.fromkeys(kept))


def _plumbing(pin: CondaPin, decided: Decided, cuda: str) -> None:
    """conda's CUDA plumbing for pytorch: the spec's ``cuda:`` says it, unless it names another CUDA."""
    said = _plumbing_says(pin.name, pin.spec, pin.version, pin.build)
    if said == "cuda" and cuda == "cpu":  # pytorch-mutex=1.0=cuda: a CUDA build, whichever
        decided.lose(pin.where, pin.spec, "asks for a CUDA build; the spec is cpu: not carried")
    elif said is not None and said not in ("cuda", cuda):
        decided.lose(pin.where, pin.spec, f"says CUDA {said}; the spec's CUDA is {cuda}: not carried")
    else:
        decided.notes.append(
            f'{pin.spec} ({pin.where}): carried as cuda: "{cuda}" '
            "(the framework wheel brings its CUDA libraries)"
        )


def _built_on_conda_torch(pin: CondaPin, decided: Decided, moved: list[str]) -> None:
    """A conda package of conda's pytorch beside the torch wheel: moved to pip, or reported."""
    pip_name = _BUILT_ON_CONDA_TORCH[pin.name]
    if pip_name is None:
        why = _NO_PIP_WHY.get(
            pin.name,
            "built against conda's pytorch (two torches beside the torch wheel); its wheels for one "
            "torch+CUDA are on PyG's page (data.pyg.org): pip-install "
            f"{pin.name.replace('pytorch-', 'torch-')} "
            "from your mirror",
        )
        decided.lose(pin.where, pin.spec, f"a conda package of conda's pytorch: {why}; not carried")
        return
    moved.append(_as_pip(pip_name, pin.spec.replace(pin.name, pip_name, 1), pin.version))
    decided.notes.append(
        f"{pin.spec} ({pin.where}): depends on conda's pytorch (the solver would install a second torch "
        f"beside the wheel): moved to pip as {moved[-1]}"
    )


def _plumbing_says(name: str, spec: str, version: str, build: str | None) -> str | None:
    """The CUDA (or ``cpu``) a piece of conda's CUDA plumbing names, or None when it names none."""
    if name == "cpuonly" or (name == "pytorch-mutex" and "cpu" in (build or spec.rsplit("=", 1)[-1])):
        return "cpu"
    if name == "pytorch-mutex" and "cuda" in (build or spec.rsplit("=", 1)[-1]):
        return "cuda"
    if name in ("pytorch-cuda", "cudatoolkit"):
        rest = spec.split("::", 1)[-1][len(name) :].strip()
        single = re.match(r"^(?:==?)?\s*(\d+)\.(\d+)(?:\.\d+)*(?:\.\*|\*)?(?:[=\s].*)?\Z", version or rest)
        return f"{int(single[1])}.{single[2]}" if single else None
    return None


def _conda_notes(found: Collected, decided: Decided, *, foreign: bool, defaults_builds: int) -> None:
    if not found.channels and any(p.build for p in found.conda) and not foreign:
        decided.notes.append(
            "the listing names no channel: builds kept as listed (if they are Anaconda defaults' builds, "
            "`envkit lock` says so; --keep-defaults keeps that channel)"
        )
    if foreign:
        decided.notes.append(
            f"the source is from {found.platform}: conda versions kept, "
            "builds dropped (they are that platform's)"
        )
    if defaults_builds:
        decided.notes.append(
            f"{defaults_builds} conda pins named builds of the defaults channel: "
            "versions kept, builds dropped"
        )


def _as_pip(name: str, spec: str, version: str) -> str:
    if version:
        return f"{name}=={version}"
    rest = spec.split("::", 1)[-1][len(name) :].strip()
    if rest.startswith("=") and not rest.startswith("=="):
        return f"{name}=={rest[1:].split('=', 1)[0].rstrip('.*')}.*"
    return f"{name}{rest.replace(' ', '')}" if rest else name


def _valid_match_spec(spec: str) -> bool:
    try:
        Spec(name="probe", python="3.11", cuda="cpu", conda=(spec,))
    except ValueError:
        return False
    return True


def _valid_requirement(spec: str) -> bool:
    try:
        Spec(name="probe", python="3.11", cuda="cpu", pip=(spec,))
    except ValueError:
        return False
    return True


def decide_pip(found: Collected, decided: Decided, *, frameworks: set[str]) -> list[str]:
    kept: list[str] = list(decided.moved)
    for pin in found.pip:
        if FRAMEWORK_PIP.get(canonicalize_name(pin.name)) in frameworks:
            continue  # carried as frameworks:
        if not _valid_requirement(pin.spec):
            decided.lose(
                pin.where, pin.spec, "not a requirement a spec accepts (a direct URL or an invalid line)"
            )
            continue
        kept.append(pin.spec)
    return list(dict.fromkeys(kept))


def decide_mirror(
    found: Collected, decided: Decided, releases: Releases, *, frameworks: dict[str, str], cuda: str
) -> str | None:
    """``mirrors.pypi``: the first ``--index-url`` that is not a framework's own index. A framework's
    index is "carried by frameworks:" only where the spec has that framework on that index's flavour."""
    framework_indexes = releases.framework_indexes
    mirror: str | None = None
    for url, where in found.index_urls:
        if url.rstrip("/") in framework_indexes or _FRAMEWORK_INDEX.search(url):
            _framework_index(url, where, "--index-url", decided, releases, frameworks=frameworks, cuda=cuda)
            continue
        clean, removed = without_credentials(url)
        if clean is None:
            decided.lose(where, f"--index-url {url}", f"carries {removed}: not carried")
            continue
        if removed:
            decided.lose(
                where,
                f"--index-url {url}",
                f"{removed} removed: put credentials in ~/.netrc or pip's keyring, "
                "never in a spec (it is committed and baked into images)",
            )
        if mirror is None:
            mirror = clean
        elif clean.rstrip("/") != mirror.rstrip("/"):
            decided.lose(
                where, f"--index-url {clean}", f"a second index: the spec has one PyPI mirror ({mirror})"
            )
    for url, where in found.extra_urls:
        if url.rstrip("/") in framework_indexes or _FRAMEWORK_INDEX.search(url):
            _framework_index(
                url,
                where,
                "--extra-index-url/--find-links",
                decided,
                releases,
                frameworks=frameworks,
                cuda=cuda,
            )
            continue
        why = "an extra index: the spec has one PyPI index (mirrors.pypi); put these packages on it"
        if "data.pyg.org" in url or "pytorch-geometric.com" in url:
            why = (
                "PyG's wheel page (torch-scatter & co. built for one torch+CUDA): "
                "the spec has one PyPI index "
                "(mirrors.pypi) and no find-links; put those wheels on your mirror"
            )
        decided.lose(where, f"--extra-index-url/--find-links {url}", why)
    if mirror is not None and not _valid_mirror(mirror):
        decided.lose(found.origin, f"--index-url {mirror}", "not an http(s):// or file:// URL")
        return None
    return mirror


def _framework_index(
    url: str,
    where: str,
    option: str,
    decided: Decided,
    releases: Releases,
    *,
    frameworks: dict[str, str],
    cuda: str,
) -> None:
    """A framework's own index: carried (the catalog names the wheel's index) only when the spec has
    that framework on that index's CUDA flavour; reported otherwise."""
    owner = next((fw for host, fw in _INDEX_OWNER if host in url), None)
    flavour = _FLAVOUR.search(url)
    wanted = "cpu" if cuda == "cpu" else "cu" + cuda.replace(".", "")
    if owner is None or owner not in frameworks:
        decided.lose(
            where,
            f"{option} {url}",
            f"a {owner or 'framework'} index, but the spec has no {owner or 'such framework'}: not carried",
        )
    elif flavour is not None and flavour[1] != wanted:
        decided.lose(
            where,
            f"{option} {url}",
            f"the {owner} index for {flavour[1]} under a CUDA {cuda} spec: the {owner} wheel comes from the "
            f"catalog's index for {wanted}; not carried",
        )
    else:
        wheel = releases.requested_wheel(owner, frameworks[owner], cuda)
        source = f"from {wheel.index}" if wheel is not None and wheel.index else "from PyPI"
        installs = wheel.requirement if wheel is not None else f"{owner} {frameworks[owner]}"
        decided.notes.append(
            f"{shown_item(url)} ({where}): a framework's index: frameworks: installs {installs} {source}"
        )


def _valid_mirror(url: str) -> bool:
    try:
        Spec(name="probe", python="3.11", cuda="cpu", mirrors={"pypi": url})
    except ValueError:
        return False
    return True
