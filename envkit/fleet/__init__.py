"""Probe a whole fleet: one probe task per node through a batch scheduler, reports in a shared store.

:mod:`~envkit.fleet.scheduler` (the interface), :mod:`~envkit.fleet.slurm` and
:mod:`~envkit.fleet.local` (adapters), :mod:`~envkit.fleet.fanout` (submit and follow a run),
:mod:`~envkit.fleet.task` (what runs on each node), :mod:`~envkit.fleet.store` (the run's layout),
:mod:`~envkit.fleet.guard_replay` (an incident's step replayed on nodes).
"""
