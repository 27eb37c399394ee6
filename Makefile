# Two commands on a fresh machine:  make book   and   make test
# Both set up .venv when it is missing or older than pyproject.toml, then run. The venv is made by
# $(PYTHON) (Python >= 3.11; another with PYTHON=python3.11 make book), and made again when its own
# python no longer runs or is too old.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
FMNIST := /usr/share/datasets/fashion-mnist
MATHJAX := .mathjax/node_modules/mathjax/es5/tex-mml-chtml.js

.PHONY: book test setup data browser mathjax clean bench publish

book: setup data mathjax  ## execute every chapter (quick profile, Fashion-MNIST) and render _build/html
	$(PY) -m overinterp book

test: setup data browser mathjax  ## the test suite (tiny profile)
	$(PY) -m pytest -q

setup: $(STAMP)

# The Python the project needs, read from pyproject.toml's requires-python (">=3.11").
REQUIRES_PYTHON := $(or $(shell sed -n 's/^requires-python *= *">= *\([0-9.]*\)".*/\1/p' pyproject.toml),3.11)
# major.minor of the interpreter $(1), empty where it does not run
pyversion = $(shell $(1) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
# "y" where version $(1) is older than $(2) (major.minor)
older = $(shell awk -v a="$(1)" -v b="$(2)" 'BEGIN { split(a, x, "."); split(b, y, "."); \
          if (x[1] + 0 < y[1] + 0 || (x[1] + 0 == y[1] + 0 && x[2] + 0 < y[2] + 0)) print "y" }')
# Why an existing .venv must be made again, empty where it is fine: its python no longer runs (made on
# another machine, or by an interpreter since removed), is older than REQUIRES_PYTHON, or is not the
# version of a PYTHON given explicitly (PYTHON=python3.12 make setup switches the venv to it).
VENV_VERSION := $(if $(wildcard $(VENV)),$(or $(call pyversion,$(PY)),none))
VENV_STALE := $(strip \
  $(if $(filter none,$(VENV_VERSION)),a python that no longer runs,\
  $(if $(VENV_VERSION),$(if $(call older,$(VENV_VERSION),$(REQUIRES_PYTHON)),Python $(VENV_VERSION) (older than $(REQUIRES_PYTHON)),\
  $(if $(filter-out default file,$(origin PYTHON)),$(if $(filter-out $(VENV_VERSION),$(or $(call pyversion,$(PYTHON)),$(VENV_VERSION))),\
       Python $(VENV_VERSION) (not $(PYTHON)'s $(call pyversion,$(PYTHON)))))))))
# One line and exit 1 where $(PYTHON) is missing or older than REQUIRES_PYTHON.
CHECK_PYTHON = $(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] < tuple(map(int, "$(REQUIRES_PYTHON)".split("."))))' \
	  2>/dev/null || { echo "make: overinterp needs Python >= $(REQUIRES_PYTHON), and PYTHON=$(PYTHON) is \
	  $$(command -v $(PYTHON) >/dev/null && $(PYTHON) --version 2>&1 | head -n 1 || echo 'not found'): pick another, e.g. \
	  PYTHON=python$(REQUIRES_PYTHON) make $(or $(MAKECMDGOALS),setup)" >&2; exit 1; }

.PHONY: venv-stale
$(STAMP): pyproject.toml $(if $(VENV_STALE),venv-stale)
	@if [ -n "$(VENV_STALE)" ] || [ ! -x $(PY) ]; then $(CHECK_PYTHON); fi
	$(if $(VENV_STALE),@echo "$(VENV) was made by $(VENV_STALE): making it again with $(PYTHON)" && rm -rf $(VENV))
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[book,test]"
	touch $(STAMP)

# Debian packages when apt is usable (root or password-less sudo): the real Fashion-MNIST
# (else the loader falls back to $$OVERINTERP_DATA or torchvision's download) and, for the
# tests, a headless chromium that plays the human-benchmark quiz.
APT = SUDO=$$( [ "$$(id -u)" = 0 ] && echo || echo sudo -n ); \
	  ($$SUDO apt-get install -y -q $(1) || ($$SUDO apt-get update -q && $$SUDO apt-get install -y -q $(1))) \
	  >/dev/null 2>&1 && echo "installed $(1)" || echo "could not apt-get $(1)"

data:
	@if [ -z "$$OVERINTERP_DATA" ] && [ ! -d $(FMNIST) ] && command -v apt-get >/dev/null; then \
	  $(call APT,dataset-fashion-mnist); fi

browser:
	@if ! command -v chromium >/dev/null && command -v apt-get >/dev/null; then $(call APT,chromium); fi

# MathJax 3 served with the book (see _config.yml), so formulas render offline and in the
# headless-chromium tests: npm's mathjax package in .mathjax/, which ignores itself in git.
# Nothing to do when it is there; without npm the book still builds, with raw formulas offline.
mathjax:
	@if [ ! -f $(MATHJAX) ]; then \
	  if ! command -v npm >/dev/null; then \
	    echo "npm not found: no local MathJax, formulas stay raw LaTeX (install npm and rerun make)"; \
	  elif mkdir -p .mathjax && echo '*' > .mathjax/.gitignore && \
	       npm install --prefix .mathjax --no-save --no-audit --no-fund --loglevel=error mathjax@3 >/dev/null 2>&1 && \
	       [ -f $(MATHJAX) ]; then echo "installed MathJax 3 in .mathjax/"; \
	  else echo "could not npm install mathjax@3: formulas stay raw LaTeX (rerun make when the npm registry is reachable)"; fi; \
	fi

bench: setup data  ## benchmarks writing JSON under benchmarks/results/
	$(PY) benchmarks/bench_train.py
	$(PY) benchmarks/bench_backselect.py

# Jupyter Book's manual way to publish: push _build/html (after `make book`) to the gh-pages
# branch of origin (-n: .nojekyll, so _static/ is served; -p: push; -f: replace the branch).
# The Pages workflow (.github/workflows/book.yml) does the same on every push to main.
publish: setup
	@test -f _build/html/index.html || { echo "no _build/html/index.html: run make book first"; exit 1; }
	$(VENV)/bin/ghp-import -n -p -f _build/html

clean:
	rm -rf _build
