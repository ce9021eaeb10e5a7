"""``envkit verify``: rebuild an image from its lock and prove it is the same, with its SBOM and provenance.

- :mod:`envkit.verify.image`: rebuild through the builder and compare, layer by layer and file by file;
- :mod:`envkit.verify.attestations`: the SBOM and provenance inside the image checked against the lock.

A use case above ``envkit.build``; the normalization it compares with is :mod:`envkit.reproduce`.
"""
