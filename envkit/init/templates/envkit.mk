# envkit.mk: the `make env-*` targets for this repository's environments.
# Written by `envkit init` (envkit @@VERSION@@); yours to edit. `make env-help` lists the targets.
# Override any variable on the command line, e.g. `make env-check ENV=other-env LABEL=ci`.

ENVKIT        ?= envkit
PYTHON        ?= python3
# envkit's pinned source for env-install: a git URL at a commit or a wheel URL with its sha256
# (never a bare name: `envkit` on PyPI is an unrelated project).
ENVKIT_PIP_SPEC ?= @@PIP_SPEC_MAKE@@
ENV           ?= @@ENV@@
REPORTS       ?= .envkit/reports
BASELINE      ?= environments/baselines/$(ENV).json
CURRENT       ?= $(REPORTS)/$(ENV).json
COMPARE_HTML  ?= $(REPORTS)/$(ENV)-compare.html
SNAPSHOT      ?= $(REPORTS)/snapshot.json
LABEL         ?= current
DIFF_A        ?= $(BASELINE)
DIFF_B        ?= $(CURRENT)
AUDIT_FAIL_ON ?= high

ENVKIT_MK := $(lastword $(MAKEFILE_LIST))

.PHONY: env-help env-install env-lock env-build env-probe env-baseline env-compare env-snapshot env-diff env-audit env-check

env-help: ## List the env-* targets and the variables they use
	@echo 'envkit targets (environment $(ENV); override with ENV=NAME):'
	@awk -F':.*## ' '/^env-[a-z-]+:.*## /{printf "  %-13s %s\n", $$1, $$2}' $(ENVKIT_MK)
	@echo 'variables: ENVKIT=$(ENVKIT) BASELINE=$(BASELINE) CURRENT=$(CURRENT) LABEL=$(LABEL) AUDIT_FAIL_ON=$(AUDIT_FAIL_ON)'

env-install: ## Install envkit from its pinned source (ENVKIT_PIP_SPEC)
	@case '$(ENVKIT_PIP_SPEC)' in \
	  *' @ git+'*@????????????????????????????????????????|*' @ '*'.whl#sha256='????????????????????????????????????????????????????????????????) ;; \
	  *) echo 'envkit.mk: ENVKIT_PIP_SPEC must pin envkit: envkit-dl @ git+URL@COMMIT or envkit-dl @ URL.whl#sha256=HEX' >&2; exit 1 ;; \
	esac
	$(PYTHON) -m pip install '$(ENVKIT_PIP_SPEC)'

env-lock: ## Pin environments/ENV.yaml into images/ENV/ (conda and pip locks)
	$(ENVKIT) lock $(ENV)

env-build: ## Build the image of ENV from its lock
	$(ENVKIT) build $(ENV)

env-probe: env-build ## Run the numerical probe in the image; writes CURRENT
	@mkdir -p $(dir $(CURRENT))
	$(ENVKIT) probe --image $(ENV) -o $(CURRENT) --label $(LABEL)

env-baseline: env-build ## Probe the image into BASELINE (commit it: env-check compares against it)
	@mkdir -p $(dir $(BASELINE))
	$(ENVKIT) probe --image $(ENV) -o $(BASELINE) --label baseline

env-compare: ## Compare CURRENT with BASELINE: verdict and causes; HTML in COMPARE_HTML
	@mkdir -p $(dir $(COMPARE_HTML))
	$(ENVKIT) probe --compare $(BASELINE) $(CURRENT) --html $(COMPARE_HTML)

env-snapshot: ## Record this machine's environment (packages, drivers) in SNAPSHOT
	@mkdir -p $(dir $(SNAPSHOT))
	$(ENVKIT) snapshot -o $(SNAPSHOT)

env-diff: ## Show package drift between DIFF_A and DIFF_B (default: baseline vs current report)
	$(ENVKIT) diff $(DIFF_A) $(DIFF_B)

env-audit: ## Audit the locked packages; fails on findings of severity AUDIT_FAIL_ON or worse
	$(ENVKIT) audit $(ENV) --fail-on $(AUDIT_FAIL_ON)

env-check: ## The CI gate: lock is fresh, audit is clean, probe matches the baseline
	$(ENVKIT) lock $(ENV) --check
	$(ENVKIT) audit $(ENV) --fail-on $(AUDIT_FAIL_ON)
	$(ENVKIT) build $(ENV)
	@mkdir -p $(sort $(dir $(CURRENT) $(COMPARE_HTML)))
	$(ENVKIT) probe --image $(ENV) -o $(CURRENT) --label $(LABEL)
	$(ENVKIT) probe --compare $(BASELINE) $(CURRENT) --html $(COMPARE_HTML)
