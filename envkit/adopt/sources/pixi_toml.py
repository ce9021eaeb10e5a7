"""A pixi manifest (``pixi.toml``, or ``pyproject.toml`` with ``[tool.pixi.*]``) -> pins.

Read: ``[dependencies]`` (conda match specs: ``"3.11.*"``, ``{ version = "2.4.*", channel =
"pytorch", build = "cuda*" }``), ``[pypi-dependencies]`` (``">=2.5"``, ``{ version = "==2.5.1",
index = "https://download.pytorch.org/whl/cu124" }``, ``{ extras = [...] }``; ``git``/``path``/``url``
sources are reported), ``[system-requirements] cuda`` (``"12.0"``, or ``{ version = "12.0" }``: the
CUDA driver the machine must have, so conda-forge's ``pytorch`` is its CUDA build, whose CUDA it does
not name: envkit asks for ``--cuda``), the channels and platforms of
``[project]``/``[workspace]``, and the features of one environment: ``default`` unless
``--environment NAME`` chooses another (pixi's default feature is always in).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from envkit._toml import TOMLDecodeError, loads
from envkit.adopt.evidence import AdoptError, Collected, shown_item
from envkit.adopt.sources.conda_env import conda_pin
from envkit.adopt.sources.reader import Read, SourceText
from envkit.adopt.sources.requirements import add_requirement

__all__ = ["is_pixi_manifest", "read_pixi_manifest", "read_pixi_toml"]


def is_pixi_manifest(name: str, text: str) -> bool:
    return name == "pixi.toml" or (name == "pyproject.toml" and "[tool.pixi." in text)


def _table(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key)
    return value if isinstance(value, Mapping) else {}


def read_pixi_toml(source: SourceText) -> Read:
    """A pixi manifest (``pixi.toml``, or ``pyproject.toml`` with ``[tool.pixi]``): the environment
    ``source.environment`` names, or the default one (no inventory: a manifest is no listing)."""
    return read_pixi_manifest(source.text, source.label, environment=source.environment), None


def read_pixi_manifest(text: str, label: str, *, environment: str | None = None) -> Collected:
    """The pins of one environment of the manifest (``default`` unless ``environment``)."""
    try:
        data: Mapping[str, object] = loads(text)
    except TOMLDecodeError as e:
        raise AdoptError(f"{label}: not TOML ({e}); nothing was written", hint="check the file") from e
    pixi = _table(_table(data, "tool"), "pixi") if label.endswith("pyproject.toml") else data
    found = Collected(label, "pixi.toml")
    project = _table(pixi, "workspace") or _table(pixi, "project")
    found.name = str(project.get("name") or "") or None
    features = _features(pixi, environment, label, found)
    channels = [str(c) for c in project.get("channels") or [] if isinstance(c, str)]
    platforms = [str(p) for p in project.get("platforms") or [] if isinstance(p, str)]
    if platforms and "linux-64" not in platforms:
        found.platform = "linux-aarch64" if "linux-aarch64" in platforms else platforms[0]
    for name, feature in features:
        where = label if name == "default" else f"{label} [feature.{name}]"
        channels += [str(c) for c in feature.get("channels") or [] if isinstance(c, str)]
        _system(feature, where, found)
        for package, value in _table(feature, "dependencies").items():
            _conda(str(package), value, f"{where} dependencies.{package}", found)
        for package, value in _table(feature, "pypi-dependencies").items():
            _pypi(str(package), value, f"{where} pypi-dependencies.{package}", found)
        for target in _table(feature, "target"):
            found.lose(where, f"[target.{target}]", "dependencies of one platform only: not read")
    found.channels.extend(dict.fromkeys(channels))
    if environment is None and not _has_framework(found):
        _refuse_frameworkless_default(pixi, label)
    return found


_FRAMEWORKS = {"pytorch", "pytorch-gpu", "pytorch-cpu", "torch", "paddlepaddle", "paddlepaddle-gpu"}


def _has_framework(found: Collected) -> bool:
    return any(p.name in _FRAMEWORKS for p in found.conda) or any(p.name in _FRAMEWORKS for p in found.pip)


def _refuse_frameworkless_default(pixi: Mapping[str, object], label: str) -> None:
    """The default environment has no framework while others do: which one is the team's is a choice."""
    declared = _table(pixi, "feature")
    with_framework = []
    for name, listed in _table(pixi, "environments").items():
        names = listed.get("features", []) if isinstance(listed, Mapping) else listed or []
        tables = [
            _table(declared.get(n) or {}, k) for n in names for k in ("dependencies", "pypi-dependencies")
        ]
        if any(set(map(str, t)) & _FRAMEWORKS for t in tables):
            with_framework.append(str(name))
    if with_framework:
        raise AdoptError(
            f"{label}: the default environment has no framework; {', '.join(with_framework[:8])} "
            f"{'has' if len(with_framework) == 1 else 'have'} one; nothing was written",
            hint=f"choose one: envkit init --from {label} --environment {with_framework[0]}",
        )


def _features(
    pixi: Mapping[str, object], environment: str | None, label: str, found: Collected
) -> list[tuple[str, Mapping[str, Any]]]:
    """The default feature (the top-level tables) and the features ``environment`` lists."""
    environments = _table(pixi, "environments")
    declared = _table(pixi, "feature")
    chosen = environment or "default"
    listed = environments.get(chosen)
    if environment and listed is None and environment != "default":
        raise AdoptError(
            f"{label}: no environment {environment!r} (it has {', '.join(['default', *environments])}); "
            "nothing was written",
            hint="envkit init --from pixi.toml --environment NAME",
        )
    names = listed.get("features", []) if isinstance(listed, Mapping) else listed or []
    no_default = isinstance(listed, Mapping) and listed.get("no-default-feature") is True
    features: list[tuple[str, Mapping[str, object]]] = [] if no_default else [("default", pixi)]
    for name in names:
        feature = declared.get(name)
        if not isinstance(feature, Mapping):
            raise AdoptError(
                f"{label}: environment {chosen} names feature {name!r}, which the manifest does not "
                "declare; nothing was written",
                hint=f"add [feature.{name}] or fix [environments]",
            )
        features.append((str(name), feature))
    others = [str(e) for e in environments if e != chosen]
    found.notes.append(
        f"read environment {chosen} of {label} (features: {', '.join(n for n, _ in features) or 'none'})"
        + (f"; not read: {', '.join(others)} (--environment to choose)" if others else "")
    )
    return features


def _system(feature: Mapping[str, object], where: str, found: Collected) -> None:
    cuda = _table(feature, "system-requirements").get("cuda")
    version = cuda.get("version") if isinstance(cuda, Mapping) else cuda
    if isinstance(version, (str, int, float)) and str(version).strip():
        found.cuda_requirement = (str(version).strip(), f"{where} system-requirements.cuda")


def _conda(name: str, value: object, where: str, found: Collected) -> None:
    if isinstance(value, str):
        conda_pin(name if value.strip() in ("", "*") else f"{name} {value.strip()}", where, found)
    elif isinstance(value, Mapping):
        version = str(value.get("version") or "").strip()
        build = str(value.get("build") or "").strip()
        channel = value.get("channel")
        spec = name + (f" {version}" if version and version != "*" else (" *" if build else ""))
        spec += f" {build}" if build else ""
        conda_pin(f"{channel}::{spec}" if isinstance(channel, str) else spec, where, found)
    else:
        found.lose(where, f"{name} = {shown_item(str(value))}", "not a conda dependency pixi writes")


def _pypi(name: str, value: object, where: str, found: Collected) -> None:
    if isinstance(value, str):
        add_requirement(name if value.strip() in ("", "*") else f"{name}{value.strip()}", where, found)
        return
    if not isinstance(value, Mapping):
        found.lose(where, f"{name} = {shown_item(str(value))}", "not a PyPI dependency pixi writes")
        return
    for source in ("git", "path", "url"):
        if source in value:
            found.lose(where, f"{name} = {{ {source} = {shown_item(str(value[source]))} }}", _WHY[source])
            return
    extras = value.get("extras")
    extra = f"[{','.join(str(e) for e in extras)}]" if isinstance(extras, list) and extras else ""
    version = str(value.get("version") or "").strip()
    add_requirement(f"{name}{extra}{version if version != '*' else ''}", where, found)
    index = value.get("index")
    if isinstance(index, str) and index:
        found.extra_urls.append((index, where))


_WHY = {
    "git": "a VCS checkout: the spec pins released versions only",
    "path": "a local project or wheel (a file on that machine): not carried",
    "url": "a direct URL: a spec's pins come from an index, with hashes",
}
