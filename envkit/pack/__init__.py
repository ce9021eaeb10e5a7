"""The air-gapped tarball: ``envkit pack`` = the offline stage's collection + the archive writer."""
