# The two commands a new user needs: `make demo` and `make test`. Both create .venv on first use.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# This machine's `pip install torch==2.13.0` finds a local CPU build. Where torch is already
# importable (say, your own CUDA build in this venv), nothing is reinstalled; elsewhere override:
# `make test TORCH_SPEC=torch`.
TORCH_SPEC ?= torch==2.13.0

.PHONY: install test lint typecheck pytest test-slow demo bench clean

install: $(STAMP)

$(STAMP): pyproject.toml setup.py
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e ".[test,bible]"
	touch $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check butcherflow tests
	$(VENV)/bin/ruff format --check butcherflow tests

typecheck: $(STAMP)
	$(VENV)/bin/mypy

pytest: $(STAMP)
	$(PY) -m pytest

test: lint typecheck pytest

test-slow: $(STAMP)
	$(PY) -m pytest -m slow

demo: $(STAMP)
	$(VENV)/bin/butcherflow check --all

bench: $(STAMP)
	$(VENV)/bin/butcherflow bench order

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
