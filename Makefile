# Two commands on a fresh machine:  make book   and   make test
# Both set up .venv when it is missing or older than pyproject.toml, then run.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
FMNIST := /usr/share/datasets/fashion-mnist

.PHONY: book test setup data clean bench

book: setup data  ## execute every chapter (quick profile, Fashion-MNIST) and render _build/html
	$(PY) -m overinterp.book

test: setup data  ## the test suite (tiny profile)
	$(PY) -m pytest -q

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[book,test]"
	touch $(STAMP)

# Real Fashion-MNIST from Debian's dataset-fashion-mnist when apt is usable; otherwise
# the loader falls back to $$OVERINTERP_DATA or torchvision's download.
data:
	@if [ -z "$$OVERINTERP_DATA" ] && [ ! -d $(FMNIST) ] && command -v apt-get >/dev/null; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] && echo || echo sudo -n ); \
	  ($$SUDO apt-get install -y -q dataset-fashion-mnist || \
	   ($$SUDO apt-get update -q && $$SUDO apt-get install -y -q dataset-fashion-mnist)) >/dev/null 2>&1 \
	  && echo "installed dataset-fashion-mnist" || echo "could not apt-get dataset-fashion-mnist; falling back to download"; \
	fi

bench: setup data  ## benchmarks writing JSON under benchmarks/results/
	$(PY) benchmarks/bench_train.py
	$(PY) benchmarks/bench_backselect.py

clean:
	rm -rf _build
