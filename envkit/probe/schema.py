"""The probe report's identity: its ``schema`` number and its ``kind``, what every reader checks first.

It imports nothing, so a guarded run writes a probe-shaped report without importing the
report model (:mod:`envkit.probe.model`, ~7 ms of a guarded process's start)."""

from __future__ import annotations

__all__ = ["KIND", "SCHEMA"]

SCHEMA = 1
KIND = "envkit-probe-report"
