"""``envkit build NAME --debug-image``: the composition of the debug builder, and its text."""

from __future__ import annotations

from envkit.build.builder import Builder
from envkit.build.debug import DebugBuilder, DebugResult
from envkit.cli._app import services

__all__ = ["debug_builder", "debug_text"]


def debug_builder(builder: Builder) -> DebugBuilder:
    """The debug builder over ``builder`` (same engine and root), uv for the wheels' pins."""
    _, resolver = services().solvers()
    return DebugBuilder(builder, resolver, run=services().pip_runner)


def debug_text(debug: DebugResult | None) -> str:
    """The debug image's lines after the runtime build's (empty without --debug-image)."""
    if debug is None:
        return ""
    state = "up to date" if debug.status == "up-to-date" else f"built in {debug.seconds:.1f} s"
    lines = [
        f"\n{debug.name}: debug image {debug.tag} ({state}; also tagged {debug.latest})",
        f"  FROM {debug.runtime_tag} ({debug.runtime_id[:19]}); "
        f"debug layer {debug.layer_bytes / 1e6:.0f} MB; "
        f"{debug.debs} Debian packages, {debug.wheels} wheels pinned in {debug.lock_path} ({debug.lock})",
        *(f"  {note}" for note in debug.notes),
        "  run it (py-spy and gdb need SYS_PTRACE):",
        *(f"    {line}" for line in debug.run),
    ]
    return "\n".join(lines)
