# One-command set-up on a fresh machine: `make demo`, `make test`.
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo worker test test-unit lint bench clean

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) (or run: make PYTHON=python3)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[dev]"
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
test: $(STAMP)
	$(BIN)/python -m pytest -q

test-unit: $(STAMP)
	$(BIN)/python -m pytest -q -m "not integration"

# ruff, mypy, and the import contracts in pyproject.toml (layers of core/, no cycles).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache .ruff_cache .mypy_cache
