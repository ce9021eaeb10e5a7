# envkit developer targets. `make test` and `make demo` work on a fresh machine:
# they create .venv and install what they need first.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed

.PHONY: dev test test-unit test-integration lint reformat golden cli-reference demo bench bench-smoke fidelity guard-corpus gpu-check check-readme clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,torch,paddle]'
	touch $(STAMP)

dev: $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest tests --durations=25

test-unit: $(STAMP)
	$(BIN)/python -m pytest tests/unit

test-integration: $(STAMP)
	$(BIN)/python -m pytest tests/integration

lint: $(STAMP)
	$(BIN)/ruff format --check envkit tests benchmarks
	$(BIN)/ruff check envkit tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports

reformat: $(STAMP)
	$(BIN)/ruff format envkit tests benchmarks
	$(BIN)/ruff check --fix envkit tests benchmarks

golden: $(STAMP)
	ENVKIT_UPDATE_GOLDEN=1 $(BIN)/python -m pytest tests/unit/render -q

# docs/reference/cli.md and envkit/_help.py from every command's --help (a unit test compares them)
cli-reference: $(STAMP)
	$(BIN)/python -m envkit.cli.help_text
	$(BIN)/python -m envkit.cli.reference

demo: $(STAMP)
	$(BIN)/python -m envkit.demo

bench: $(STAMP)
	$(BIN)/python -m benchmarks

# every benchmark at tiny sizes (seconds each; CI runs it): a benchmark that raises fails it
bench-smoke: $(STAMP)
	$(BIN)/python -m benchmarks --smoke

# Real-world fidelity (issue 34): exact/minor/wrong/refused per class and kind; also part of bench.
fidelity: $(STAMP)
	$(BIN)/python -m benchmarks fidelity

# The guard corpus (issue 44): real training scripts, guarded, with planted faults; right/partly/wrong/
# crash/false alarm per case against its record (tests/guard_corpus/README.md). `--json`: ARGS=--json.
guard-corpus: $(STAMP)
	$(BIN)/python -m tests.guard_corpus $(ARGS)

# No venv: a GPU machine may have no network; the check needs only python3 with CUDA torch.
gpu-check:
	PYTHONPATH=. timeout 600 python3 tests/gpu/gpu_check.py --json gpu-check.json

clean:
	rm -rf $(VENV) .envkit .pytest_cache .mypy_cache .ruff_cache

check-readme: $(STAMP)
	$(BIN)/python -m pytest tests/unit/test_docs.py tests/unit/test_docs_links.py tests/unit/test_docs_figures.py -q
