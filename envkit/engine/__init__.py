"""The container engine layer: what every stage needs from Docker, behind plain-value interfaces.

:mod:`~envkit.engine.protocol` (``ContainerEngine`` and its values), :mod:`~envkit.engine.docker_api`
(the Docker Engine API adapter), :mod:`~envkit.engine.transport` and
:mod:`~envkit.engine.docker_transport` (push, pull, save, load), :mod:`~envkit.engine.push` (the
push record a fleet probe reads) and :mod:`~envkit.engine.testing` (the in-memory engine of the unit
tests). The lowest stage: it imports no other stage.
"""
