"""Bit-reproducible images: normalize what the engine built, compare two saved images.

- :mod:`envkit.reproduce.epoch`: ``SOURCE_DATE_EPOCH`` derived from the lock digest;
- :mod:`envkit.reproduce.layers`: one layer tar rewritten deterministically (sorted, clamped, numeric);
- :mod:`envkit.reproduce.image`: the saved image's own layers normalized, a deterministic config,
  the load archive;
- :mod:`envkit.reproduce.compare`: two saved images, layer by layer and file by file.

It imports no stage (``render`` and ``build`` use it); ``envkit verify`` is :mod:`envkit.verify`.
"""
