"""The offline stage: every file an air-gapped build needs, checked against the lock, as context entries.

Both ``envkit build --offline/--pack`` and ``envkit pack`` use it; neither imports the other.

- :mod:`~envkit.offline.wheelhouse`: ``pip download`` of requirements.lock for the image's platform;
- :mod:`~envkit.offline.collect`: the lock's conda packages, the installer wheel (conda channel
  collection, hash-checked, cached by content);
- :mod:`~envkit.offline.archive`: reading a pack and verifying it against the lock;
- :mod:`~envkit.offline.packed`: the build-context entries of an offline conda build;
- :mod:`~envkit.offline.request`, :mod:`~envkit.offline.pack_manifest`, :mod:`~envkit.offline.fetch`:
  what a pack must hold, its manifest, and how files are downloaded;
- :mod:`~envkit.offline.debs`, :mod:`~envkit.offline.debug_fetch`: the debug image's locked .deb
  files and wheels (its lock: :mod:`envkit.lock.debug_tools`), fetched and hash-checked.

Layers: below ``build`` and ``pack``, above ``render`` (see docs/concepts/design.md).
"""
