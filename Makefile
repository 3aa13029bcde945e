# minidynamo: `make demo` and `make test` set everything up on a fresh machine.
# torch==2.13.0 is installed first and on its own, so that pip takes the CPU
# build (3.11) and never pulls another torch to satisfy `torch>=2.11`. On 3.13
# the registry has only the CUDA build (about 2.7 GB of wheels with its NVIDIA
# libraries: README, "Python versions"). Triton is pinned in constraints.txt;
# on CPU its interpreter runs stage 6's kernels in the tests.
#
# Another Python: `make test PYTHON=/path/to/python3.13 VENV=.venv313`.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.minidynamo-installed
CPUS := $(shell nproc 2>/dev/null || echo 2)

# The Pythons whose frame layout the C hook reads and whose bytecode the VM runs.
SUPPORTED := 3.11 3.12 3.13
SUPPORTED_WORDS := 3.11, 3.12 and 3.13
version_of = $(shell $(1) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)

.PHONY: demo test lint format layering pytest docs test-solutions docs-serve docs-check bench clean python-version

$(STAMP): pyproject.toml setup.py $(wildcard stage1_eval_frame/*.c stage1_eval_frame/*.h) constraints.txt | python-version
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -c constraints.txt torch==2.13.0 triton
	$(PY) -m pip install --quiet -c constraints.txt -e '.[test,docs,triton]'
	touch $@

# One line instead of a pip traceback when the Python is one minidynamo does not support, or
# when the venv was made by another Python than PYTHON (an existing .venv is never replaced).
BAD_PYTHON = minidynamo runs on CPython $(SUPPORTED_WORDS), and $(PYTHON) is $(or $(1),not found): \
  choose one with PYTHON=, e.g. make demo PYTHON=python3.13
OTHER_VENV = $(VENV) has Python $(1) and $(PYTHON) is $(2): \
  pick a venv for it, e.g. VENV=.venv$(subst .,,$(2)), or make clean
python-version:
	$(eval PYTHON_VERSION := $(call version_of,$(PYTHON)))
	$(eval VENV_VERSION := $(if $(wildcard $(PY)),$(call version_of,$(PY)),$(PYTHON_VERSION)))
	$(if $(filter $(SUPPORTED),$(PYTHON_VERSION)),,$(error $(call BAD_PYTHON,$(PYTHON_VERSION))))
	$(if $(filter $(VENV_VERSION),$(PYTHON_VERSION)),,$(error $(call OTHER_VENV,$(VENV_VERSION),$(PYTHON_VERSION))))

# The tour runs one program through all six stages and prints each step.
demo: $(STAMP)
	$(VENV)/bin/minidynamo tour

test: $(STAMP) lint layering pytest docs test-solutions

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

# Each exercise's published solution (docs/solutions/) makes its test pass in a copy of
# the tree, and the shipped code fails it; the copies run in parallel.
test-solutions: $(STAMP)
	$(PY) scripts/test_solutions.py --jobs $(CPUS)

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
