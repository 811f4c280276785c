#!/usr/bin/env bash
# Interleaved rounds on one host across device calls (issue 47): the first call sets the host up and starts
# `run-all --repeats N` detached (its own process session, so it outlasts the call); every call then waits for it
# until its deadline and packs what exists. A warm machine keeps the results folder between calls.
#
#   bash experiments/cloud/rounds_gpu.sh start DEADLINE_S EXPERIMENTS REPEATS PLAIN [MODEL] [DATA]
#   bash experiments/cloud/rounds_gpu.sh wait DEADLINE_S                 (a later call, same machine)
#
# EXPERIMENTS: comma-separated matrix experiments, NAME@STEPS a cut run; PLAIN: those that also run as the printed
# command alone (or -); PLAIN_ROUNDS=K: in the first K rounds only. Needs ./wheelhouse (make wheelhouse-lite, renamed) and the data folder (default .data) carried.
set -u
OUT=${OUT:-/tmp/rounds-out}
HW=${HW:-h200}
LOG=/tmp/rounds-logs
RESULTS=${RESULTS:-/tmp/swiftbench-results/results}
RUN_TIMEOUT=${RUN_TIMEOUT:-420}  # seconds per run before the runner stops it
# shellcheck source=experiments/cloud/gpu_common.sh
. "$(dirname "$0")/gpu_common.sh"

finish() {
  python3 -m analysis.cli tables "$RESULTS" --compact >"$LOG/tables.md" 2>&1
  gpu_pack
  tail -n 25 "$LOG/runs.log"
}

if [ "${1:-}" = wait ]; then
  DEADLINE=${2:?usage: rounds_gpu.sh wait DEADLINE_S}
  MODEL=dummy
  KEEP_START=1 gpu_setup
  if detached_wait "$DEADLINE"; then echo "set done"; else echo "set still going at ${SECONDS} s"; fi
  finish
  exit 0
fi

[ "${1:-}" = start ] || { echo "usage: rounds_gpu.sh start|wait ..."; exit 2; }
DEADLINE=${2:?deadline}
EXPERIMENTS=${3:?experiments}
REPEATS=${4:?repeats}
PLAIN=${5:?plain (or -)}
MODEL=${6:-dummy}
DATA=$(cd "${7:-.data}" && pwd)
mkdir -p "$RESULTS"
gpu_setup
rm -f "$LOG/detached.rc"
cmd=(python3 -m experiments.run.runner run-all --hw "$HW" --model "$MODEL" --data "$DATA" --experiments "$EXPERIMENTS"
     --repeats "$REPEATS" --results "$RESULTS" --timeout "$RUN_TIMEOUT" --no-progress)
[ "$PLAIN" != - ] && cmd+=(--plain "$PLAIN")
[ -n "${PLAIN_ROUNDS:-}" ] && cmd+=(--plain-rounds "$PLAIN_ROUNDS")
echo "== ${cmd[*]} (detached at ${SECONDS} s) =="
CUDA_VISIBLE_DEVICES=${GPU:-0} setsid bash -c '"$@" >>'"$LOG/runs.log"' 2>&1; echo $? >'"$LOG/detached.rc" \
  _ "${cmd[@]}" </dev/null &
echo $! >"$LOG/detached.pid"
if detached_wait "$DEADLINE"; then echo "set done"; else echo "set still going at ${SECONDS} s: collect it with 'wait'"; fi
finish
