"""``environment.yml`` (conda's format) and ``requirements.txt`` for a spec."""

from __future__ import annotations

import yaml

from envkit.catalog import Catalog
from envkit.render.pip import pip_lines
from envkit.spec.models import Spec

__all__ = ["channels", "environment_yml", "requirements_txt"]


def channels(spec: Spec) -> list[str]:
    """The spec's channels, rewritten to the conda mirror when one is set."""
    result = []
    for channel in spec.channels:
        if spec.mirrors.conda and "://" not in channel:
            channel = f"{spec.mirrors.conda.rstrip('/')}/{channel}"
        result.append(channel)
    if "defaults" not in spec.channels:
        result.append("nodefaults")  # never fall back to Anaconda's default channels
    return result


def environment_yml(spec: Spec, catalog: Catalog, header: str) -> str:
    deps: list[object] = [f"python={spec.python}", "pip", *spec.conda]
    pip = pip_lines(spec, catalog)
    if pip:
        deps.append({"pip": pip})
    body = {"name": spec.name, "channels": channels(spec), "dependencies": deps}
    return header + yaml.safe_dump(body, sort_keys=False, default_flow_style=False, width=1000)


def requirements_txt(spec: Spec, catalog: Catalog, header: str) -> str:
    return header + "".join(f"{line}\n" for line in pip_lines(spec, catalog))
