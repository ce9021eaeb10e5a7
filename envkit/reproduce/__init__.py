"""Bit-reproducible images: normalize what the engine built, compare two saved images.

- :mod:`envkit.reproduce.layers`: one layer tar rewritten deterministically (sorted, clamped, numeric);
- :mod:`envkit.reproduce.normalize`: the saved image's own layers normalized, a deterministic config,
  the load archive;
- :mod:`envkit.reproduce.image_diff`: two saved images, layer by layer and file by file.

``SOURCE_DATE_EPOCH`` (derived from the lock digest) is :mod:`envkit.lock.epoch`, where the Dockerfile
takes it; ``docker save`` / ``load`` go through the :class:`envkit.engine.store.ImageStore`.
This package sits just above ``render`` and imports only ``lock`` and ``engine``; ``build`` and
``verify`` use it; ``envkit verify`` is :mod:`envkit.verify`.
"""
