"""envkit.incident: what happens after the guard recorded an incident (above :mod:`envkit.guard`).

:mod:`~envkit.incident.replay` (a dump's step run again here, the verdict and its causes),
:mod:`~envkit.incident.image_replay` and :mod:`~envkit.incident.image_side` (the same inside a container
image; :mod:`~envkit.incident.st_reader` reads the dump where safetensors is missing),
:mod:`~envkit.incident.show` and :mod:`~envkit.incident.page` (what ``envkit guard show`` prints and its
HTML page). The training loop never imports this package.
"""
