"""Environment specs: the models, loading with line numbers, validation, the spec hash."""
