"""The torch a source implies without pinning it: a wheel or find-links page built for a torch
release (:mod:`envkit.init.wheel_names`) read against the source's own torch pin."""

from __future__ import annotations

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envkit.init.adopted import Collected
from envkit.init.detect import Framework, release_in
from envkit.init.wheel_names import TorchHint

__all__ = ["hinted_torch"]


def hinted_torch(found: Collected, frameworks: dict[str, Framework]) -> None:
    """A wheel or find-links page built for a torch release (``flash_attn-...+cu126torch2.6``,
    ``data.pyg.org/whl/torch-2.1.0+cu121.html``) says which torch the project runs: it is the torch
    of a source that pins none, narrows an unpinned ``torch``, and is reported when the pin differs."""
    for hint in found.torch_hints[:1]:
        torch = frameworks.get("torch")
        read = f"{hint.what} ({hint.where}) is built for torch {hint.torch}"
        if torch is None or not torch.constraint:
            spec = f"torch{hint.constraint}"
            frameworks["torch"] = Framework("torch", hint.constraint, "pip", hint.where, spec)
            said = "pins no torch" if torch is None else f"does not pin {torch.spec} ({torch.where})"
            found.notes.append(f"torch: the source {said}; {read}: read as {spec}")
        elif not _fits(release_in((), torch.constraint)[0], hint):
            found.lose(hint.where, hint.what, f"built for torch {hint.torch}; the source pins {torch.spec}")


def _fits(version: str | None, hint: TorchHint) -> bool:
    try:
        return version is not None and Version(Version(version).public) in SpecifierSet(hint.constraint)
    except (InvalidVersion, InvalidSpecifier):
        return True
