"""The container engine layer: the one seam to Docker (the SDK is imported in this package only).

Two interfaces: :mod:`~envkit.engine.protocol` (``ContainerEngine``: build, inspect, images, tag,
remove, prune_builder_images, free_bytes, import_image, run; and its values, one ``ImageInfo``) and
:mod:`~envkit.engine.store` (``ImageStore``: push, pull, save, load, describe; the one door for image bytes).
Their Docker adapters are :mod:`~envkit.engine.docker_api` and :mod:`~envkit.engine.docker_store`;
:mod:`~envkit.engine.push` (the push record a fleet probe reads), :mod:`~envkit.engine.testing` (the
in-memory engine and store of the unit tests), :mod:`~envkit.engine.in_image` (an image as the place
:func:`envkit.payload.run` launches a payload). It imports no other stage but ``envkit.payload``, the
layer below it.
"""
