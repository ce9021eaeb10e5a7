"""Comparing probe reports: two (:mod:`~envkit.comparison.pairwise`) or many (:mod:`~envkit.comparison.nway`).

The verdict bands (:mod:`~envkit.comparison.bands`), the likely causes of a difference
(:mod:`~envkit.comparison.causes`) and the self-contained HTML pages (:mod:`~envkit.comparison.html`,
:mod:`~envkit.comparison.nway_html`). Pure: typed reports (:class:`envkit.probe.model.ProbeReport`)
in, values out. Above the probe stage, below fleet and the CLI.
"""
