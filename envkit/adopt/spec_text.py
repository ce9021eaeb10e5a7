"""The text of an adopted spec: a header saying where each fact came from, what the source named
(read back by ``envkit validate``: :mod:`envkit.spec.provenance`), the notes and what was not
carried; then the spec's keys."""

from __future__ import annotations

import json
from pathlib import Path

from envkit import __version__
from envkit.adopt.evidence import Collected, Lost, one_line, shown_item
from envkit.spec.provenance import SourceFact, source_lines

__all__ = ["render"]


def render(
    name: str,
    found: Collected,
    python: str,
    cuda: str,
    frameworks: dict[str, str],
    conda: list[str],
    pip: list[str],
    channels: list[str] | None,
    mirror: str | None,
    base_image: str | None,
    platform: str | None,
    env: dict[str, str],
    lost: list[Lost],
    how: dict[str, str],
    *,
    source: list[SourceFact] | None = None,
    notes: list[str] | None = None,
) -> str:
    """The spec's YAML, with a header saying where each fact came from and what was not carried."""
    q = json.dumps
    lines = [
        f"# Adopted by `envkit init --from {shown_item(found.origin)}` (envkit {__version__}); edit freely."
    ]
    lines += [f"#   {key}: {one_line(value)}" for key, value in sorted(how.items())]
    lines += [line[:4] + one_line(line[4:]) for line in source_lines(source or [])]  # "#   " kept
    if notes:
        lines.append(f"# Notes ({len(notes)}):")
        lines += [f"#   - {one_line(note)}" for note in notes[:100]]
    if lost:
        lines.append(f"# Not carried ({len(lost)}; `envkit init --from ... --json` lists them too):")
        lines += [f"#   - {one_line(str(item))}" for item in lost[:200]]
        if len(lost) > 200:
            lines.append(f"#   ... and {len(lost) - 200} more")
    description = shown_item(f"Adopted from {Path(found.origin).name or found.origin} ({found.kind})")[:300]
    lines += [f"name: {name}", f"description: {q(description)}", f'python: "{python}"', f'cuda: "{cuda}"']
    if frameworks:
        lines.append("frameworks:")
        lines += [f"  {fw}: {q(version)}" for fw, version in sorted(frameworks.items())]
    if platform:
        lines.append(f"platforms: [{platform}]")
    if channels is not None:
        lines.append("channels: [" + ", ".join(q(c) for c in channels) + "]")
    if base_image:
        lines.append(f"base_image: {q(base_image)}")
    if mirror:
        lines += ["mirrors:", f"  pypi: {q(mirror)}"]
    if conda:
        lines.append("conda:")
        lines += [f"  - {q(c)}" for c in conda]
    if pip:
        lines.append("pip:")
        lines += [f"  - {q(p)}" for p in pip]
    if env:
        lines.append("env:")
        lines += [f"  {key}: {q(value)}" for key, value in sorted(env.items())]
    return "\n".join(lines) + "\n"
