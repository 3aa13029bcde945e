# minidynamo: `make demo` and `make test` set everything up on a fresh machine.
# torch==2.13.0 is installed first and on its own, so that pip takes the CPU
# build and never pulls the multi-GB CUDA one to satisfy `torch>=2.11`.
# Triton is pinned to the GPU machine's version; on CPU its interpreter runs
# stage 6's kernels in the tests.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.minidynamo-installed
CPUS := $(shell nproc 2>/dev/null || echo 2)

.PHONY: demo test lint format layering pytest docs docs-serve bench clean

$(STAMP): pyproject.toml setup.py stage1_eval_frame/_eval_frame.c
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet torch==2.13.0 triton==3.6.0
	$(PY) -m pip install --quiet -e '.[test,docs,triton]'
	touch $@

# The tour runs one program through all six stages and prints each step.
demo: $(STAMP)
	$(VENV)/bin/minidynamo tour

test: $(STAMP) lint layering pytest docs

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

layering: $(STAMP)
	$(VENV)/bin/lint-imports

# -n: pytest-xdist spreads the tests over the machine's cores.
pytest: $(STAMP)
	$(VENV)/bin/pytest -n $(CPUS) -q

docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict

docs-serve: $(STAMP)
	$(VENV)/bin/mkdocs serve

# Each benchmark prints ours vs eager vs torch.compile, side by side in one run.
bench: $(STAMP)
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) -m benchmarks.$$(basename $$b .py) || exit 1; done

clean:
	rm -rf $(VENV) build site *.egg-info stage1_eval_frame/*.so
