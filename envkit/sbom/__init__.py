"""Software bill of materials and provenance of an envkit image.

- :mod:`envkit.sbom.cyclonedx`: the lock's packages as a CycloneDX 1.6 JSON document
  (cyclonedx-python-lib), deterministic (dated by ``SOURCE_DATE_EPOCH``, serial number from the
  lock digest) so that it can go into a reproducible image;
- :mod:`envkit.sbom.carried`: the SBOM an image carries, read back once under one size limit and
  checked against its label;
- :mod:`envkit.sbom.provenance`: an in-toto statement with a SLSA provenance predicate per build.
"""
