PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# pytest-xdist workers: one per core (the CI machine has 2)
JOBS ?= auto
# what test-torch runs (a subset: make test-torch VERSION=2.14.1 TESTS=tests/export)
TESTS ?= tests

.PHONY: demo test test-full test-torch wheel-smoke bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)

# (safetrace/__init__.py holds the version the installed metadata records)
$(STAMP): $(BIN)/python pyproject.toml constraints.txt safetrace/__init__.py
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e '.[dev,docs]'
	# ExecuTorch's wheel pins another torch: --no-deps keeps the pinned one (pyproject's
	# executorch extra lists the same packages)
	$(BIN)/pip install -q -c constraints.txt --no-deps executorch==1.5.1 flatbuffers ruamel.yaml pyyaml tabulate
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m safetrace.demo

# the default run: slow tests deselected (pyproject's addopts), two samples per op of the
# rule tables; about 7 minutes of CPU, under 4 minutes on 2 cores
test: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) tests

# everything: the slow tests and every rule sample (the run before a release)
test-full: $(STAMP)
	SAFETRACE_RULE_SAMPLES=all SAFETRACE_EMPTY_SAMPLES=all \
		$(BIN)/python -m pytest -n $(JOBS) -m '' tests

# the suite against another torch release, in its own venv (.venv-torch-$(VERSION)):
#   make test-torch VERSION=2.14.1
# results are recorded in docs/compatibility.md
test-torch:
	@test -n "$(VERSION)" || { echo "usage: make test-torch VERSION=2.14.1"; exit 2; }
	test -x .venv-torch-$(VERSION)/bin/python || $(PY) -m venv .venv-torch-$(VERSION)
	.venv-torch-$(VERSION)/bin/pip install -q --upgrade pip
	.venv-torch-$(VERSION)/bin/pip install -q "torch==$(VERSION)" -e '.[dev,docs]'
	.venv-torch-$(VERSION)/bin/python -c "import torch; print('torch', torch.__version__)"
	.venv-torch-$(VERSION)/bin/python -m pytest -n $(JOBS) $(TESTS)

# the built wheel in a clean venv with only its declared dependencies (no numpy)
wheel-smoke: $(STAMP)
	HOST_PY=$(BIN)/python tools/wheel_smoke.sh

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_trace.py

clean:
	rm -rf $(VENV) .venv-torch-*
