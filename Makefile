# Two entry points for a fresh machine: `make demo` (the main job) and `make test` (the full test suite).
VENV ?= .venv
PIP := $(VENV)/bin/pip
BIN := $(VENV)/bin
PIP_INSTALL := $(PIP) install --quiet --disable-pip-version-check -c constraints.txt

.PHONY: demo test setup-demo setup-test system-deps lint typecheck bench clean

DEMO_RUN ?= runs/demo-gemma-3-270m

demo: setup-demo
	$(BIN)/rescue-bench run --model local/gemma-3-270m --data demo --tasks all --out $(DEMO_RUN)
	$(BIN)/rescue-bench report $(DEMO_RUN) --out $(DEMO_RUN)/report

test: setup-test
	$(BIN)/python -m pytest

$(VENV)/bin/python:
	python3 -m venv $(VENV)

setup-demo: $(VENV)/bin/python
	$(PIP_INSTALL) -e '.[local,bertscore]'

setup-test: $(VENV)/bin/python system-deps
	$(PIP_INSTALL) -e '.[all,dev]'

# ffmpeg (clips), chromium (browser tests) and PostgreSQL (review app) come from Debian when missing.
system-deps:
	@bash scripts/system-deps.sh

lint:
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts
	PYTHONPATH=src $(BIN)/lint-imports --no-cache

typecheck:
	$(BIN)/mypy

clean:
	rm -rf $(VENV) runs .pytest_cache .mypy_cache .ruff_cache
