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

.PHONY: demo test lint format layering pytest docs docs-serve docs-check bench clean

$(STAMP): pyproject.toml setup.py $(wildcard stage1_eval_frame/*.c stage1_eval_frame/*.h) constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet torch==2.13.0 triton==3.6.0
	$(PY) -m pip install --quiet -c constraints.txt -e '.[test,docs,triton]'
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
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

docs-serve: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve

# The built book in a real browser, offline: every page loads, links and their
# #anchors resolve, every Mermaid diagram is drawn; screenshots go to
# build/docs-check/. Not in `make test`: it needs Chromium (installed here from
# Debian's packages when missing).
docs-check: $(STAMP)
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || { \
	  echo "docs-check: installing Chromium (apt-get install chromium)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	} || { echo "docs-check: could not install Chromium with apt-get (not root?);" \
	  "install Debian's chromium package and run again" >&2; exit 1; }
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet --site-dir build/docs-check/site
	$(PY) scripts/docs_check.py build/docs-check/site build/docs-check

# Each benchmark prints ours vs eager vs torch.compile, side by side in one run.
bench: $(STAMP)
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) -m benchmarks.$$(basename $$b .py) || exit 1; done

clean:
	rm -rf $(VENV) build site *.egg-info stage1_eval_frame/*.so
