# marl-edu: one command to set up, one to open the course, one to test.
#   make setup      create .venv and install everything (idempotent: does nothing when already done)
#   make lab        setup, then JupyterLab on notebooks/
#   make test       setup, then unit tests and nbval on every notebook
#   make notebooks  re-execute every notebook in place, top to bottom, in a fresh kernel
#   make test-browser  setup, Debian's Chromium and Playwright, then every notebook run and used in JupyterLab

SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV := .venv
VPY := $(VENV)/bin/python
WHEELHOUSE := .wheelhouse
GYM_WHEEL := $(WHEELHOUSE)/gym-0.20.0-py3-none-any.whl
STAMP := $(VENV)/.marl-edu-installed
BROWSER_STAMP := $(VENV)/.marl-edu-browser-installed
CHROMIUM ?= /usr/bin/chromium

# A Python 3.11 interpreter: ma-gym 0.0.14 does not install on 3.12 and later.
PYTHON ?= $(shell for p in python3.11 python3 python; do \
	if command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; \
	then command -v $$p; break; fi; done)

# Pass --allow-root to JupyterLab only when we are root (containers, some cloud machines).
ALLOW_ROOT := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)

.PHONY: help setup lab test notebooks wheelhouse clean check-python chromium setup-browser test-browser

help:
	@sed -n '2,6p' Makefile | sed 's/^# \{0,1\}//'

check-python:
	@if [ -z "$(PYTHON)" ] || ! "$(PYTHON)" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then \
		echo "marl-edu needs Python 3.11 (ma-gym 0.0.14 does not install on 3.12+); found: $(or $(PYTHON),none)."; \
		echo "Install it (pyenv install 3.11, your package manager's python3.11, or conda create -n marl python=3.11)"; \
		echo "and run again, or point at it: make setup PYTHON=/path/to/python3.11"; \
		exit 1; \
	fi

# gym 0.20.0 ships only as a source release whose metadata modern pip (>= 24.1) rejects, and it
# builds only with setuptools < 66 and wheel < 0.40. Build it once, in a throwaway environment with
# those old tools, then repair the one bad requirement string. The project's .venv keeps a current pip.
$(GYM_WHEEL): tools/repair_gym_wheel.py | check-python
	@echo "==> building gym 0.20.0 into $(WHEELHOUSE)/ (throwaway build environment with old setuptools)"
	rm -rf $(WHEELHOUSE)/build-env $(WHEELHOUSE)/raw
	$(PYTHON) -m venv $(WHEELHOUSE)/build-env
	$(WHEELHOUSE)/build-env/bin/python -m pip install --no-cache-dir --quiet "pip<24.1" "setuptools<66" "wheel<0.40"
	$(WHEELHOUSE)/build-env/bin/python -m pip wheel --no-cache-dir --no-deps --no-build-isolation \
		--no-binary gym gym==0.20.0 -w $(WHEELHOUSE)/raw
	$(WHEELHOUSE)/build-env/bin/python tools/repair_gym_wheel.py $(WHEELHOUSE)/raw/gym-0.20.0-py3-none-any.whl $(WHEELHOUSE)
	rm -rf $(WHEELHOUSE)/build-env $(WHEELHOUSE)/raw

wheelhouse: $(GYM_WHEEL)

$(STAMP): pyproject.toml $(GYM_WHEEL) | check-python
	@echo "==> creating $(VENV) with $(PYTHON)"
	[ -x $(VPY) ] || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet --find-links $(WHEELHOUSE) --only-binary gym -e ".[dev]"
	$(VPY) -c "import torch, gym, ma_gym, mpe2, marl_edu; print('torch', torch.__version__, '| gym', gym.__version__, '| mpe2 ok | marl_edu ok')"
	touch $(STAMP)

setup: $(STAMP)
	@echo "setup: $(VENV) is ready"

lab: setup
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks $(ALLOW_ROOT) $(LAB_ARGS)

test: setup
	$(VPY) -m pytest tests notebooks --nbval --nbval-current-env -p no:randomly --ignore=tests/browser $(PYTEST_ARGS)

# Browser tests: Debian's Chromium (no browser download at run time) driven by Playwright for Python.
chromium:
	@if [ -x "$(CHROMIUM)" ]; then echo "chromium: $$($(CHROMIUM) --version 2>/dev/null)"; \
	elif ! command -v apt-get >/dev/null 2>&1; then echo "no $(CHROMIUM) and no apt-get to install Debian's chromium"; exit 1; \
	elif [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	elif sudo -n true 2>/dev/null; then sudo -n apt-get update -qq && sudo -n DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "no $(CHROMIUM), and installing Debian's chromium needs root or passwordless sudo"; exit 1; fi
	@[ -x "$(CHROMIUM)" ] || { echo "apt-get ran but there is still no $(CHROMIUM)"; exit 1; }

$(BROWSER_STAMP): pyproject.toml $(STAMP)
	$(VPY) -m pip install --quiet --find-links $(WHEELHOUSE) --only-binary gym -e ".[dev,browser]"
	touch $(BROWSER_STAMP)

setup-browser: chromium $(BROWSER_STAMP)

test-browser: setup-browser
	MARL_EDU_CHROMIUM=$(CHROMIUM) $(VPY) -m pytest tests/browser -p no:randomly $(PYTEST_ARGS)

notebooks: setup
	$(VENV)/bin/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.timeout=600 --ExecutePreprocessor.kernel_name=python3 \
		--ExecutePreprocessor.record_timing=False notebooks/*.ipynb

clean:
	rm -rf $(VENV) $(WHEELHOUSE)
