"""``environment.yml`` (conda's format) and ``requirements.txt`` for a spec."""

from __future__ import annotations

import yaml

from envkit.lock.inputs import conda_channels as channels
from envkit.render.pip import pip_lines
from envkit.spec.resolve import ResolvedSpec

__all__ = ["channels", "environment_yml", "requirements_txt"]


def environment_yml(resolved: ResolvedSpec, header: str) -> str:
    spec = resolved.spec
    deps: list[object] = [f"python={spec.python}", "pip", *spec.conda]
    pip = pip_lines(resolved)
    if pip:
        deps.append({"pip": pip})
    body = {"name": spec.name, "channels": channels(spec), "dependencies": deps}
    return header + yaml.safe_dump(body, sort_keys=False, default_flow_style=False, width=1000)


def requirements_txt(resolved: ResolvedSpec, header: str) -> str:
    return header + "".join(f"{line}\n" for line in pip_lines(resolved))
