# One-command set-up on a fresh machine: `make demo`, `make test`.
# Python 3.11, 3.12 or 3.13: the first of python3.11, python3.13, python3.12, python3 that
# runs and is 3.11 or newer, unless you name one (make PYTHON=python3.13). A venv made by
# another interpreter is kept: `make clean` first, or give each its own (VENV=~/venv-3.13).
ifeq ($(origin PYTHON),undefined)
PYTHON := $(firstword $(shell for p in python3.11 python3.13 python3.12 python3; do \
	$$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1 && echo $$p; \
	done) python3)
endif
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo worker test test-unit lint bench clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1 || { \
		echo "need Python 3.11 or newer (3.11, 3.12 and 3.13 are tested): $(PYTHON) does not run or is older"; \
		echo "  make PYTHON=/path/to/python3.13   (any Python 3.11 or newer)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The project's own modules are compiled to bytecode here: pip compiles the packages it
# installs but not an editable project, and where PYTHONDONTWRITEBYTECODE is set (as in
# many containers) every process would compile them again at its start (a worker's start
# 2.4 → 1.7 s on a slow 2-core machine, bench/startup.py). A module changed since is
# compiled at its import, as without them.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	$(BIN)/python -m compileall -q -j 0 core tasks bots
	@touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/caramba demo

# Production mode: Celery workers running agent turns (one process per core by default).
# Needs a Redis server: CARAMBA_REDIS__URL=redis://127.0.0.1:6379/0 make worker
worker: $(STAMP)
	$(BIN)/caramba worker

# The whole suite: unit tests (fakeredis) and integration tests (real Redis on
# 127.0.0.1:6379, the OpenAI-compatible HTTP fake). Exit code 5 (no tests) is a failure.
# Three pytest-xdist workers (the suite mostly waits on real processes: 5–6 min on 2 cores
# instead of 12–13); a test file's tests run on one of them (tests/conftest.py), and each
# worker runs its files in the suite's order.
test: $(STAMP)
	$(BIN)/python -m pytest -q -n 3 --dist loadfile --no-loadscope-reorder

test-unit: $(STAMP)
	$(BIN)/python -m pytest -q -m "not integration"

# ruff, mypy, and the import contracts in pyproject.toml (layers of core/, no cycles).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache .ruff_cache .mypy_cache
