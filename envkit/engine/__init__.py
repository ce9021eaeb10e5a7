"""The container engine layer: the one seam to Docker (the SDK is imported in this package only).

:mod:`~envkit.engine.protocol` (``ContainerEngine``: build, run, inspect, tag, import; ``ImageArchive``:
facts, save, load, remove; and their values, one ``ImageInfo``), :mod:`~envkit.engine.docker_api`
(the Docker Engine API adapter of ``ContainerEngine``), :mod:`~envkit.engine.transport` (``ImageTransport``:
push, pull, save, load) and :mod:`~envkit.engine.docker_transport` (the Docker adapter of both image
seams: save and load written once), :mod:`~envkit.engine.push` (the push record a fleet probe reads)
and :mod:`~envkit.engine.testing` (the in-memory engine of the unit tests), :mod:`~envkit.engine.in_image`
(an image as the place :func:`envkit.payload.run` launches a payload). It imports no other stage but
``envkit.payload``, the layer below it.
"""
