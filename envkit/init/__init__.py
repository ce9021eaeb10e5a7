"""``envkit init``: starter spec, ``envkit.mk`` targets and CI recipes for a team repository."""

from __future__ import annotations

from envkit.init.repo import CI_TARGETS, FileChange, InitResult, init_repo
from envkit.init.starter import FRAMEWORKS, StarterChoice, choose_starter, render_spec, valid_cudas

__all__ = [
    "CI_TARGETS",
    "FRAMEWORKS",
    "FileChange",
    "InitResult",
    "StarterChoice",
    "choose_starter",
    "init_repo",
    "render_spec",
    "valid_cudas",
]
