# The two commands a new user needs: `make demo` and `make test`. Both create .venv on first use.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# This machine's `pip install torch==2.13.0` finds a local CPU build. Where torch is already
# importable (say, your own CUDA build in this venv), nothing is reinstalled; elsewhere override:
# `make test TORCH_SPEC=torch`.
TORCH_SPEC ?= torch==2.13.0

.PHONY: install test lint typecheck pytest test-slow test-gpu demo bench clean docs docs-check

install: $(STAMP)

$(STAMP): pyproject.toml setup.py
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e ".[test,bible,tensorboard,audit,hf,design]"
	touch $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check butcherflow tests docs/tools docs/hooks.py
	$(VENV)/bin/ruff format --check butcherflow tests docs/tools docs/hooks.py

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# pytest-xdist runs one worker per core (pyproject's addopts); the slowest tests are listed at
# the end of every run
pytest: $(STAMP)
	$(PY) -m pytest --durations=15

test: lint typecheck pytest

# The full per-entry sweeps (every catalog entry, not one per structure) and the long checks;
# CI runs it after `make test`
test-slow: $(STAMP)
	$(PY) -m pytest -m slow --durations=15

# The GPU path (tests marked `cuda`: bf16 decoding, AMP, compile, NCCL DDP, GPU -> CPU resume);
# without CUDA every one of them is skipped. `bash docs/gpu/run.sh test` runs it on a bare GPU
# machine (docs/benchmarks.md, "On the GPU"); -v names each test as it ends, and PYTEST_ARGS
# adds options (run.sh: `-rA -p no:cacheprovider --junitxml=...`).
PYTEST_ARGS ?=
test-gpu: $(STAMP)
	$(PY) -m pytest tests/test_gpu.py -m cuda -rs -v -n 4 $(PYTEST_ARGS)

# The main job: prove the catalog, train gated RK2 on the Bible (German -> English) for
# DEMO_UPDATES updates, show three test verses and the test BLEU. Budgeted in updates, the demo
# trains on every machine on the same data, vocabulary and batches, from the same initial weights,
# under the same learning-rate schedule, for the same number of updates (tests/test_demo_record.py
# checks the record's batches and schedule); CPUs differ in their floating-point kernels, so the
# losses differ in their last digits and the final BLEU and chrF by a few hundredths. Its
# duration varies most: about five minutes on an idle 2-core CPU, which trains about
# DEMO_TOKENS_PER_S target tokens/s (the demo warns when this machine is far slower). The sizes, learning rate and warmup are tuned for those few minutes
# (README: what the demo prints). `make demo DEMO_UPDATES=2900` continues the same run;
# `rm -rf runs/demo` starts over.
DEMO_UPDATES ?= 800
DEMO_TOKENS_PER_S ?= 5500
DEMO_DIR ?= runs/demo
demo: $(STAMP)
	$(VENV)/bin/butcherflow check --all
	$(VENV)/bin/butcherflow train ode-transformer-rk2-gated --data bible:de-en \
	  --save-dir $(DEMO_DIR) --max-update $(DEMO_UPDATES) \
	  --expect-tokens-per-s $(DEMO_TOKENS_PER_S) \
	  --d-model 128 --n-heads 4 --d-ffn 512 --encoder-layers 2 --decoder-layers 2 \
	  --vocab-size 4000 --max-tokens 2500 --lr 3e-3 --warmup-updates 150 --dropout 0
	$(VENV)/bin/butcherflow evaluate $(DEMO_DIR) --subset test --beam 5 \
	  --print-samples 3

bench: $(STAMP)
	$(VENV)/bin/butcherflow bench order

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache

# The docs site. `make docs`: the gallery generated from the catalog (docs/gallery, not committed),
# then `mkdocs build --strict`; docs/hooks.py fails the build on a broken link, a missing image or
# a resource from another host. mkdocs refuses a site_dir inside docs/, so the site is built in
# build/ and moved to docs/_build/site. `make docs-check` opens the built site in headless
# Chromium (Debian's `chromium`): no console errors, no request to another host; screenshots go
# to docs/_build/screenshots.
DOCS_STAMP := $(VENV)/.docs-installed
DOCS_SITE := docs/_build/site
GALLERY_JOBS ?= 2

$(DOCS_STAMP): $(STAMP)
	$(PY) -m pip install -q -e ".[docs]"
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	$(VENV)/bin/butcherflow gallery --out docs/gallery --jobs $(GALLERY_JOBS)
	rm -rf build/docs-site
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir build/docs-site
	rm -rf $(DOCS_SITE) && mkdir -p docs/_build && mv build/docs-site $(DOCS_SITE)
	@echo "docs: $(DOCS_SITE)/index.html"

docs-check: $(DOCS_STAMP)
	$(PY) docs/tools/browser.py $(DOCS_SITE) --screenshots docs/_build/screenshots
