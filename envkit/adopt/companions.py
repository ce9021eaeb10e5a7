"""A torch companion pinned from another release than torch (``torch==2.1.2`` beside
``torchaudio==2.2.0``): refused, with both pins. Each torchvision/torchaudio wheel of the releases in
the drift rule ``torch-companion-release`` requires its own torch exactly (torchaudio 2.2.0:
``Requires-Dist: torch (==2.2.0)``), so pip cannot install such a source, and any spec written from
it would carry one of the two pins and drop the other's meaning. Releases the table does not pair
(torch 2.10 on; torchaudio 2.11.0 requires no torch at all) are not judged."""

from __future__ import annotations

from envkit.adopt.evidence import AdoptError, Collected, PipPin, shown_item
from envkit.drift.rules import load_rules

__all__ = ["companion_conflicts", "refuse_mismatched_companions"]


def _pairs() -> dict[str, dict[str, str]]:
    rule = next(r for r in load_rules().rules if r.id == "torch-companion-release")
    pairs: dict[str, dict[str, str]] = rule.params["pairs"]
    return pairs


def _minor(version: str) -> str:
    return ".".join(version.split("+", 1)[0].split(".")[:2])


def companion_conflicts(found: Collected) -> list[str]:
    """Each exact companion pin whose release pairs with another torch than the exact torch pin."""
    exact: dict[str, PipPin] = {p.name: p for p in found.pip if p.version}
    torch = exact.get("torch")
    if torch is None:
        return []
    wanted = _pairs().get(_minor(torch.version))
    if wanted is None:
        return []
    said = []
    for name, minor in wanted.items():
        pin = exact.get(name)
        if pin is not None and _minor(pin.version) != minor:
            said.append(
                f"{shown_item(pin.spec)} ({pin.where}) is not torch {_minor(torch.version)}'s {name} "
                f"({minor}.x), beside {shown_item(torch.spec)} ({torch.where})"
            )
    return said


def refuse_mismatched_companions(found: Collected) -> None:
    said = companion_conflicts(found)
    if said:
        raise AdoptError(
            f"{found.origin}: {'; '.join(said[:3])}: each companion wheel requires its own torch release, "
            "so pip cannot install these pins together; envkit does not choose which one the project "
            "meant; nothing was written",
            hint="pin torch and its companions from one release "
            "(https://github.com/pytorch/vision#installation), then rerun",
        )
