"""The report store: its layout, bounded reads of its files, and the runs a fleet writes into it.

:mod:`~envkit.store.layout` (where a report or a run lives, ``--store`` / ``$ENVKIT_STORE``),
:mod:`~envkit.store.reads` (every store file read bounded: a report's text, a run's JSON, ownership),
:mod:`~envkit.store.manifest` (a run's ``run.json`` as a typed value) and :mod:`~envkit.store.runs`
(run directories, task records, a run's reports and its failed tasks). Just above the shared modules:
it knows files and JSON, not what a probe report means (parsing is :mod:`envkit.probe.report`'s).
"""
