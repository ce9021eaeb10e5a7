"""Bit-reproducible images: normalize what the engine built, verify an image against its lock.

- :mod:`envkit.reproduce.epoch`: ``SOURCE_DATE_EPOCH`` derived from the lock digest;
- :mod:`envkit.reproduce.layers`: one layer tar rewritten deterministically (sorted, clamped, numeric);
- :mod:`envkit.reproduce.image`: the saved image's own layers normalized, a deterministic config,
  the load archive;
- :mod:`envkit.reproduce.archive`: ``docker save`` / ``docker load`` on the Engine API;
- :mod:`envkit.reproduce.verify`: rebuild and compare, layer by layer and file by file.
"""
