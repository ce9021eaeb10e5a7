"""The guard corpus: real public training scripts, guarded, with planted faults and their records."""
