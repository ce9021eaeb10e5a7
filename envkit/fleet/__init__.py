"""Probe a whole fleet: one probe task per node through a batch scheduler, reports in a shared store.

:mod:`~envkit.fleet.scheduler` (the interface), :mod:`~envkit.fleet.slurm`,
:mod:`~envkit.fleet.ray_scheduler` and :mod:`~envkit.fleet.local` (adapters),
:mod:`~envkit.fleet.fanout` (submit and follow a run),
:mod:`~envkit.fleet.task` (what runs on each node), :mod:`~envkit.fleet.run_plan` (what a probe run's
manifest holds). The store itself (layout, bounded reads, run directories) is :mod:`envkit.store`.
:mod:`~envkit.fleet.guard_replay` replays an incident's step on nodes. :mod:`~envkit.fleet.numbers`,
:mod:`~envkit.fleet.history` and :mod:`~envkit.fleet.history_html`: every run per device, and a verdict
per device; :mod:`~envkit.fleet.health` reads a node's verdict for the node checks (``envkit health``).
"""
