#!/usr/bin/env bash
# Full epochs on one GPU of one host, for the ratios that must come from one host (a recipe's time to finish the job
# against the seed recipe's, issues 32 and 33): DETACH's full run first, in its own process session so that it outlasts
# this device command (the seed recipe's epoch takes 10-14 minutes on an H200), then, once it has ended, each of
# EXPERIMENTS one after the other. Running the seed recipe first also pays a fresh machine's one-time costs before the
# fast recipes are timed (results/findings/quick-runs_h200_2026-12-02.md: a machine's first run of a recipe was slower).
#
#   bash experiments/cloud/epoch_gpu.sh DEADLINE_S DETACH EXPERIMENTS [MODEL] [DATA]
#   bash experiments/cloud/epoch_gpu.sh wait DEADLINE_S EXPERIMENTS [MODEL] [DATA]     (a later call, same machine)
#
# EXPERIMENTS: comma-separated; a name of experiments/recipes/recipes.yaml runs as a matrix experiment, `claims:NAME`
# as a claims experiment (experiments/recipes/claims/experiments.yaml). Runs write to RESULTS (default
# /tmp/swiftbench-results/results: a warm machine keeps it across calls, the next call's copy of the tree would not);
# every call packs what exists. An experiment that already has a complete run there is skipped by the runner.
# Needs: ./wheelhouse (make wheelhouse, or wheelhouse-lite renamed) and the data folder (default .data) carried.
set -u
OUT=${OUT:-/tmp/epoch-out}
HW=${HW:-h200}
LOG=/tmp/epoch-logs
RESULTS=${RESULTS:-/tmp/swiftbench-results/results}
MIN_S=${MIN_S:-150}  # a run of a fast recipe's epoch needs this much of the call left (model load included)
# shellcheck source=experiments/cloud/gpu_common.sh
. "$(dirname "$0")/gpu_common.sh"

run_cmd() {  # the run-all command line of experiment $1 (claims:NAME or a matrix name)
  local name=${1#claims:}
  cmd=(python3 -m experiments.run.runner run-all --hw "$HW" --model "$MODEL" --data "$DATA" --experiments "$name"
       --results "$RESULTS" --no-progress)
  [ "$name" != "$1" ] && cmd+=(--claims)
}

run_rest() {
  local name left
  for name in ${EXPERIMENTS//,/ }; do
    [ -f "$LOG/done-${name#claims:}" ] && continue
    left=$((DEADLINE - SECONDS))
    if [ "$left" -lt "$MIN_S" ]; then echo "deadline: not starting $name (${left} s left)"; continue; fi
    run_cmd "$name"
    echo "== $name (${left} s left) =="
    CUDA_VISIBLE_DEVICES=${GPU:-0} timeout --signal=INT --kill-after=20 "$left" "${cmd[@]}" >>"$LOG/runs.log" 2>&1
    echo "== $name exit $? at ${SECONDS} s =="
    touch "$LOG/done-${name#claims:}"
  done
}

finish() {
  python3 -m analysis.cli tables "$RESULTS" --compact >"$LOG/tables.md" 2>&1
  gpu_pack
  tail -n 12 "$LOG/runs.log"
}

if [ "${1:-}" = wait ]; then
  DEADLINE=${2:?usage: epoch_gpu.sh wait DEADLINE_S EXPERIMENTS [MODEL] [DATA]}
  EXPERIMENTS=${3:?experiments}
  MODEL=${4:-dummy}
  DATA=$(cd "${5:-.data}" && pwd)
  KEEP_START=1 gpu_setup
  if detached_wait "$DEADLINE"; then run_rest; else echo "detached run still going at ${SECONDS} s"; fi
  finish
  exit 0
fi

DEADLINE=${1:?usage: epoch_gpu.sh DEADLINE_S DETACH EXPERIMENTS [MODEL] [DATA]}
DETACH=${2:?detach}
EXPERIMENTS=${3:?experiments}
MODEL=${4:-dummy}
DATA=${5:-.data}
mkdir -p "$RESULTS"
DATA=$(cd "$DATA" && pwd)
gpu_setup
run_cmd "$DETACH"
echo "== $DETACH detached at ${SECONDS} s =="
rm -f "$LOG/detached.rc"
CUDA_VISIBLE_DEVICES=${GPU:-0} setsid bash -c '"$@" >>'"$LOG/runs.log"' 2>&1; echo $? >'"$LOG/detached.rc" \
  _ timeout --signal=INT --kill-after=20 1500 "${cmd[@]}" </dev/null &
echo $! >"$LOG/detached.pid"
if detached_wait "$DEADLINE"; then run_rest; else echo "detached run still going at ${SECONDS} s: collect it with 'wait'"; fi
finish
