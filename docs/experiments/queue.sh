#!/usr/bin/env bash
# The compute queue of issue 16: every experiment at its full CPU budget, one after the other.
#
# Run it from a frozen checkout of the branch (a second worktree nobody edits), so the code that
# trains is the code that was committed, whatever happens to the main checkout meanwhile:
#
#   cd FROZEN_CHECKOUT && setsid nohup nice -n 10 docs/experiments/queue.sh >/dev/null 2>&1 &
#
# Every step logs its start, end and exit code to queue.log (QUEUE_LOG); a failed step does not
# stop the next one. The whole script is rerunnable: finished runs are skipped (their
# result.json, or the committed docs/experiments/NAME.json record), interrupted ones resume from
# their last checkpoint. One torch thread per run: on a 2-core machine shared with other work,
# more threads only wait for each other (issue 14).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
PY=${PYTHON:-$ROOT/.venv/bin/python}
LOG=${QUEUE_LOG:-$ROOT/queue.log}
export OMP_NUM_THREADS=1 PYTHONPATH=$ROOT  # this checkout's code, not the venv's editable install

stamp() { date -u '+%Y-%m-%d %H:%M:%S UTC'; }

step() {
    local name=$1
    shift
    echo "$(stamp) start $name: butcherflow experiment $name $* --threads 1" >>"$LOG"
    "$PY" -m butcherflow experiment "$name" "$@" --threads 1 \
        >>"$ROOT/queue-$name.out" 2>>"$ROOT/queue-$name.err"
    echo "$(stamp) end $name: exit $?" >>"$LOG"
}

echo "$(stamp) queue started at $(git -C "$ROOT" rev-parse --short HEAD) (pid $$)" >>"$LOG"
step coefficients --budget 1000
step translation --budget 1000    # only the missing seeds train: the rest is in the record
step extrapolation --budget 1000
step truncation                   # the declared budgets: 3000 updates or patience 5; 600
step depth --budget 1000
echo "$(stamp) queue finished" >>"$LOG"
