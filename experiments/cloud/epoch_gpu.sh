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
# as a claims experiment (experiments/recipes/claims/experiments.yaml); NAME@N is a cut run of N steps (--max-steps),
# NAME+ a second run of NAME on this host (--repeat: its warm caches), a later item of the list; NAME~ a run of NAME
# as on a fresh host of a user given the compiled code an earlier run here saved (swift_plugin.py's cache artifacts),
# shipped: the inductor and Triton caches emptied, the file moved into this tree's experiments/recipes/compile_cache/
# (SHIPPED_DIR), where the plugin looks for its build's file as a user's installed copy does (a repeat too; skipped
# where no run saved one; later runs of the call load it too); NAME% (last) a profiled run (run-all --profile: two
# steps under torch.profiler for `swiftbench profile`; its epoch is not a timed one), e.g. gpu-bound@20%.
# DETACH `-`: none. Runs write to RESULTS (default
# /tmp/swiftbench-results/results: a warm machine keeps it across calls, the next call's copy of the tree would not);
# every call packs what exists. An experiment that already has a complete run there is skipped by the runner.
# Needs: ./wheelhouse (make wheelhouse, or wheelhouse-lite renamed) and the data folder (default .data) carried.
set -u
OUT=${OUT:-/tmp/epoch-out}
HW=${HW:-h200}
LOG=${LOG:-/tmp/epoch-logs}
RESULTS=${RESULTS:-/tmp/swiftbench-results/results}
MIN_S=${MIN_S:-150}  # a run of a fast recipe's epoch needs this much of the call left (model load included)
# shellcheck source=experiments/cloud/gpu_common.sh
. "$(dirname "$0")/gpu_common.sh"

run_cmd() {  # the run-all command line of item $1 (claims:NAME, NAME, NAME@STEPS, NAME+, NAME~, NAME%)
  local item=${1%\%} name steps=""
  name=${item#claims:}
  name=${name%+}
  name=${name%\~}
  case $name in *@*) steps=${name#*@}; name=${name%@*} ;; esac
  cmd=(python3 -m experiments.run.runner run-all --hw "$HW" --model "$MODEL" --data "$DATA" --experiments "$name"
       --results "$RESULTS" --no-progress)
  [ "${item#claims:}" != "$item" ] && cmd+=(--claims)
  [ -n "$steps" ] && cmd+=(--max-steps "$steps")
  [ "${item%+}" != "$item" ] || [ "${item%\~}" != "$item" ] && cmd+=(--repeat)
  [ "${1%\%}" != "$1" ] && cmd+=(--profile --repeat)  # always a run of its own
  return 0
}

SHIPPED_DIR=${SHIPPED_DIR:-$(dirname "$0")/../recipes/compile_cache}  # swift_plugin.py's SHIPPED_CACHE in this tree
as_fresh_host() {  # the last saved compiled code, shipped: caches emptied, the file beside the plugin
  local saved shipped
  saved=$(ls -t "$COMPILE_CACHE"/artifacts/*.bin 2>/dev/null | head -n 1)
  [ -n "$saved" ] || return 1
  shipped=$SHIPPED_DIR/$(basename "$saved")
  mkdir -p "$SHIPPED_DIR"
  mv "$saved" "$shipped"
  rm -rf "$COMPILE_CACHE" "$HOME/.triton/cache" "${TORCH_TMP_CACHE:-/tmp/torchinductor_$(id -un)}"  # torch's default
  echo "as a fresh host: caches emptied; compiled code shipped: $shipped ($(stat -c %s "$shipped") bytes)"
}

done_name() {  # the done-marker of item $1: one per item, so NAME and NAME+ are two runs
  local n=${1#claims:}
  n=${n//@/-at-}
  n=${n//\~/-shipped}
  n=${n//%/-profiled}
  echo "${n//+/-again}"
}

run_rest() {
  local name left
  for name in ${EXPERIMENTS//,/ }; do
    [ -f "$LOG/done-$(done_name "$name")" ] && continue
    left=$((DEADLINE - SECONDS))
    if [ "$left" -lt "$MIN_S" ]; then echo "deadline: not starting $name (${left} s left)"; continue; fi
    if [ "${name%\~}" != "$name" ] && ! as_fresh_host; then
      echo "no saved compiled code: not starting $name"; touch "$LOG/done-$(done_name "$name")"; continue
    fi
    run_cmd "$name"
    echo "== $name (${left} s left) =="
    CUDA_VISIBLE_DEVICES=${GPU:-0} timeout --signal=INT --kill-after=20 "$left" "${cmd[@]}" >>"$LOG/runs.log" 2>&1
    echo "== $name exit $? at ${SECONDS} s =="
    touch "$LOG/done-$(done_name "$name")"
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
rm -f "$LOG/detached.rc"
if [ "$DETACH" = - ]; then  # nothing detached: the list runs one run after the other
  echo 0 >"$LOG/detached.rc"
  run_rest
  finish
  exit 0
fi
run_cmd "$DETACH"
echo "== $DETACH detached at ${SECONDS} s =="
CUDA_VISIBLE_DEVICES=${GPU:-0} setsid bash -c '"$@" >>'"$LOG/runs.log"' 2>&1; echo $? >'"$LOG/detached.rc" \
  _ timeout --signal=INT --kill-after=20 1500 "${cmd[@]}" </dev/null &
echo $! >"$LOG/detached.pid"
if detached_wait "$DEADLINE"; then run_rest; else echo "detached run still going at ${SECONDS} s: collect it with 'wait'"; fi
finish
