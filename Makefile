# marl-edu: one command to set up, one to open the course, one to test.
#   make setup      create .venv and install everything (idempotent: does nothing when already done)
#   make lab        setup, then JupyterLab on notebooks/
#   make test       setup, then unit tests and nbval on every notebook, on every core (make test-unit: unit tests only)
#   make test-smoke setup, then a quick check of the environment: install, imports, envs, files, two notebooks
#   make notebooks  re-execute every notebook in place, top to bottom, in a fresh kernel
#   make test-browser  setup, Debian's Chromium and Playwright, then every notebook run and used in JupyterLab
#                      (PYTEST_ARGS="-m ci": the notebooks with controls, one training panel, as CI does)
#   make test-ray   setup and the ray extra, then compare.py and sweep.py on Ray and on the local pool: the same results
#   make test-colab    every notebook run as in Google Colab (Python 3.13 with Colab's package versions)
#   make site       setup and the site extra, then the course's website into _site/html/ (no notebook executed)
#   make constraints   (maintainers) record this environment's versions for make setup, after make test passed
# Options, used when the environment is created: PYTHON=/path/to/python3.X (3.11 to 3.13), TORCH_INDEX=url;
# VENV=folder (default .venv; an existing environment, such as a conda one, is installed into). For make test and
# test-unit: TEST_WORKERS=n parallel workers (default auto: one per core, at most 4; 0: one process, no workers).

SHELL := /bin/bash
.DEFAULT_GOAL := help

# The environment to install into: .venv, or VENV=folder on the command line (an environment variable named VENV,
# which other tools may set, is ignored).
ifneq ($(origin VENV),command line)
VENV := .venv
endif
VPY := $(VENV)/bin/python
WHEELHOUSE := .wheelhouse
GYM_WHEEL := $(WHEELHOUSE)/gym-0.20.0-py3-none-any.whl
STAMP := $(VENV)/.marl-edu-installed
BROWSER_STAMP := $(VENV)/.marl-edu-browser-installed
SITE_STAMP := $(VENV)/.marl-edu-site-installed
SITE_INDEX := _site/html/index.html
CHROMIUM ?= /usr/bin/chromium

# Any supported interpreter, newest first: python3.13 on PATH, then pyenv's 3.13, then the same for 3.12 and 3.11;
# python3 or python last.
SUPPORTED := import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))
PYTHON ?= $(shell root=$$(pyenv root 2>/dev/null); for v in 3.13 3.12 3.11; do \
	for p in python$$v $$(ls -d "$$root"/versions/$$v.*/bin/python$$v 2>/dev/null | sort -V -r) python3 python; do \
	if "$$p" -c "import sys; sys.exit(sys.version_info[:2] != ($${v/./, }))" >/dev/null 2>&1; then \
	command -v "$$p"; exit; fi; done; done)
PYTHON := $(PYTHON)# searched once, not at every use (each search runs pyenv's shims: about half a second)
# The interpreter of the environment we install into: an existing one's (a conda env: VENV=$$CONDA_PREFIX), else PYTHON's.
ENV_PYTHON = $(if $(wildcard $(VPY)),$(VPY),$(PYTHON))
PY_VERSION = $(if $(ENV_PYTHON),$(shell "$(ENV_PYTHON)" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null))
# The versions CI tested on this Python (see the README); torch is left to pyproject's range.
CONSTRAINTS = constraints/python$(PY_VERSION).txt
TORCH_REQUIREMENT := $(shell sed -n 's/^ *"\(torch[^"]*\)".*/\1/p' pyproject.toml)
PIP_INSTALL = $(VPY) -m pip install --quiet --find-links $(WHEELHOUSE) --only-binary gym -c $(CONSTRAINTS)

# Pass --allow-root to JupyterLab only when we are root (containers, some cloud machines).
ALLOW_ROOT := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)

.PHONY: help setup lab test test-unit test-smoke test-ray notebooks wheelhouse constraints clean check-python \
	chromium setup-browser setup-extras test-browser test-colab setup-site site

help:
	@sed -n '2,15p' Makefile | sed 's/^# \{0,1\}//'

ifeq ($(strip $(VENV)),)
$(error VENV is empty: activate the conda environment first (for VENV="$$CONDA_PREFIX"), or leave VENV out for .venv)
endif

check-python:
	@if [ -n "$(wildcard $(VPY))" ] && ! "$(VPY)" -c '$(SUPPORTED)' 2>/dev/null; then \
		echo "$(VENV) has Python $(PY_VERSION); marl-edu needs 3.11, 3.12 or 3.13: 'make clean' (for .venv) or give"; \
		echo "another environment with VENV=folder"; \
		exit 1; \
	fi
	@if [ -z "$(ENV_PYTHON)" ] || ! "$(ENV_PYTHON)" -c '$(SUPPORTED)' 2>/dev/null; then \
		echo "marl-edu needs Python 3.11, 3.12 or 3.13; found: $(or $(ENV_PYTHON),none)$(if $(PY_VERSION), (Python $(PY_VERSION)))."; \
		if other=$$(python3 --version 2>/dev/null) && ! python3 -c '$(SUPPORTED)' 2>/dev/null; then \
			echo "(python3 on your PATH is $$other, which the course does not support yet.)"; fi; \
		echo "Install one (python.org, your package manager's python3.13, brew install python@3.13, pyenv install 3.13,"; \
		echo "or conda: see the README) and run again, or point at it: make setup PYTHON=/path/to/python3.13"; \
		exit 1; \
	fi
	@if [ "$(origin PYTHON)" = "command line" ] && [ -x "$(VPY)" ] && [ "$$("$(PYTHON)" -c 'import sys; print(sys.version_info[:2])' 2>/dev/null)" != "$$("$(VPY)" -c 'import sys; print(sys.version_info[:2])')" ]; then \
		echo "$(VENV) already uses Python $(PY_VERSION), not $(PYTHON): 'make clean' first, or give another VENV=folder"; \
		exit 1; \
	fi

$(VPY): | check-python
	@[ ! -e "$(VENV)" ] || { echo "$(VENV) exists but has no bin/python: remove it, or choose another VENV=folder"; exit 1; }
	@echo "==> creating $(VENV) with $(PYTHON) ($(PY_VERSION))"
	@"$(PYTHON)" -m venv "$(VENV)" || { rm -rf "$(VENV)"; echo "could not create $(VENV): on Debian and Ubuntu, install the"; \
		echo "venv module first (sudo apt install python$(PY_VERSION)-venv) and run again"; exit 1; }

# gym 0.20.0 ships only as a source release that no setuptools builds on every supported Python; it is pure
# Python, so tools/build_gym_wheel.py assembles its wheel with the standard library (see the README).
$(GYM_WHEEL): tools/build_gym_wheel.py | $(VPY)
	@echo "==> assembling gym 0.20.0's wheel into $(WHEELHOUSE)/"
	$(VPY) tools/build_gym_wheel.py $(WHEELHOUSE)

wheelhouse: $(GYM_WHEEL)

# Only the supported Pythons have a constraints file: check the Python first, so an unsupported one gets the message.
$(CONSTRAINTS): | check-python

# TORCH_INDEX: where to take torch from, for example PyTorch's CPU-only index (see the README); a torch already in
# the environment that satisfies pyproject's range is kept either way.
$(STAMP): pyproject.toml $(CONSTRAINTS) $(GYM_WHEEL) | $(VPY)
	$(VPY) -m pip install --quiet --upgrade pip
	$(if $(TORCH_INDEX),$(VPY) -m pip install --quiet --index-url $(TORCH_INDEX) "$(TORCH_REQUIREMENT)")
	$(PIP_INSTALL) -e ".[dev]"
	$(VPY) -c "import torch, gym, ma_gym, mpe2, lbforaging, marl_edu, sys; print('Python', sys.version.split()[0], '| torch', torch.__version__, '| gym', gym.__version__, '| mpe2 ok | lbforaging ok | marl_edu ok')"
	touch $(STAMP)

setup: $(STAMP)
	@echo "setup: $(VENV) is ready"

lab: setup
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks $(ALLOW_ROOT) $(LAB_ARGS)

# Tests run in parallel worker processes (pytest-xdist), one per core: a notebook's cells stay in one worker, in order
# (tests/conftest.py). At most 4: each worker holds torch and, while it runs a notebook, that notebook's kernel (about
# 1 GB together), and the longest tests and notebooks take about a minute each, so more workers gain little.
TEST_WORKERS ?= auto
XDIST = -n $(TEST_WORKERS) $(if $(filter auto logical,$(TEST_WORKERS)),--maxprocesses 4)

test: setup
	$(VPY) -m pytest tests notebooks --nbval --nbval-current-env -p no:randomly --ignore=tests/browser $(XDIST) $(PYTEST_ARGS)

test-unit: setup
	$(VPY) -m pytest tests -p no:randomly --ignore=tests/browser $(XDIST) $(PYTEST_ARGS)

# A quick check of an environment: the tests marked smoke in tests/conftest.py (what can differ between Pythons) and
# nbval on the first two notebooks, in one process (workers would each import torch and collect every test first).
test-smoke: setup
	$(VPY) -m pytest tests notebooks --nbval --nbval-current-env -p no:randomly --ignore=tests/browser -m smoke \
		$(PYTEST_ARGS)

# Ray (an optional extra: the benchmarks' grids on a Ray cluster or a local Ray instance) against the local pool.
RAY_STAMP := $(VENV)/.marl-edu-ray-installed
$(RAY_STAMP): pyproject.toml $(STAMP)
	$(PIP_INSTALL) -e ".[dev,ray]"
	touch $(RAY_STAMP)

# (A local Ray node that times out starting, as one has on a busy machine, is started again: marl_edu/runs/grid.py.)
test-ray: $(RAY_STAMP)
	RAY_USAGE_STATS_ENABLED=0 $(VPY) -m pytest tests/test_compare_runners.py \
		-p no:randomly $(PYTEST_ARGS)

# Browser tests: Debian's Chromium (no browser download at run time) driven by Playwright for Python.
chromium:
	@if [ -x "$(CHROMIUM)" ]; then echo "chromium: $$($(CHROMIUM) --version 2>/dev/null)"; \
	elif ! command -v apt-get >/dev/null 2>&1; then echo "no $(CHROMIUM) and no apt-get to install Debian's chromium"; exit 1; \
	elif [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	elif sudo -n true 2>/dev/null; then sudo -n apt-get update -qq && sudo -n DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "no $(CHROMIUM), and installing Debian's chromium needs root or passwordless sudo"; exit 1; fi
	@[ -x "$(CHROMIUM)" ] || { echo "apt-get ran but there is still no $(CHROMIUM)"; exit 1; }

$(BROWSER_STAMP): pyproject.toml $(STAMP)
	$(PIP_INSTALL) -e ".[dev,browser]"
	touch $(BROWSER_STAMP)

setup-browser: chromium $(BROWSER_STAMP)

test-browser: setup-browser $(SITE_INDEX)
	MARL_EDU_CHROMIUM=$(CHROMIUM) $(VPY) -m pytest tests/browser -p no:randomly $(PYTEST_ARGS)

# The course's website (tools/site.py, book/conf.py): the site extra, then Sphinx into _site/html/, again only when a
# notebook, a result, a medium or the site's own files changed. tests/browser/test_site.py reads it in Chromium.
SITE_SOURCES = $(shell find notebooks media book -type f -not -path '*/.ipynb_checkpoints/*'; \
	find results -type f -not -path 'results/tmp/*') tools/site.py tools/results_page.py pyproject.toml
$(SITE_STAMP): pyproject.toml $(STAMP)
	$(PIP_INSTALL) -e ".[dev,site]"
	touch $(SITE_STAMP)

setup-site: $(SITE_STAMP)

$(SITE_INDEX): $(SITE_STAMP) $(SITE_SOURCES)
	$(VPY) tools/site.py

site: $(SITE_INDEX)
	@echo "site: $(SITE_INDEX) is up to date (serve it with: $(VPY) -m http.server -d _site/html)"

# The ray, browser and site extras (Playwright; not Chromium) at once, ahead of make test-ray, make test-browser and
# make site (CI installs them in the background while other tests run).
setup-extras: $(RAY_STAMP) $(BROWSER_STAMP) $(SITE_STAMP)

notebooks: setup
	$(VENV)/bin/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.timeout=600 --ExecutePreprocessor.kernel_name=python3 \
		--ExecutePreprocessor.record_timing=False notebooks/*.ipynb

# Only the repository's own environments: never a VENV given on the command line (it may be a conda environment).
clean:
	rm -rf .venv .venv-3.1[123] .venv-colab $(WHEELHOUSE) .colab-installed

# Record the versions of this environment for `make setup` on its Python, after `make test` passed with them.
# torch (and the CUDA packages a PyPI torch brings) stay out: pyproject's range decides, so a torch you have is kept.
# The site extra is installed first, so that its pins stay in every Python's file (tests/test_install.py).
constraints: setup-site
	{ echo "# The versions 'make test' passed with on Python $(PY_VERSION), recorded by 'make constraints' on $$(date +%F)"; \
	  echo "# with $$($(VPY) -c 'import torch; print("torch", torch.__version__)'). 'make setup' installs with -c this file,"; \
	  echo "# so the course installs the same way later; torch is left to pyproject.toml's range."; \
	  $(VPY) -m pip freeze --all --exclude-editable | grep -viE '^(pip|torch|triton|nvidia-[a-z0-9-]+|cuda-[a-z0-9-]+)==' \
	  | sort -f; } > $(CONSTRAINTS).tmp && mv $(CONSTRAINTS).tmp $(CONSTRAINTS)
	@echo "wrote $(CONSTRAINTS)"

# Every notebook run the way Colab would: Python 3.13 with Colab's published package versions (tools/colab_like.txt),
# a stand-in google.colab, and the notebooks' own setup cell cloning this checkout's HEAD (see tools/colab_like.py).
PYTHON313 ?= $(shell root=$$(pyenv root 2>/dev/null); for p in python3.13 $$(ls -d "$$root"/versions/3.13.*/bin/python3.13 \
	2>/dev/null | sort -V -r); do "$$p" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 13))' 2>/dev/null \
	&& { command -v "$$p"; exit; }; done)
test-colab:
	@[ -n "$(PYTHON313)" ] || { echo "make test-colab needs a Python 3.13 (Colab's): none on PATH or under pyenv"; exit 1; }
	$(PYTHON313) tools/colab_like.py --python $(PYTHON313) $(COLAB_ARGS)
