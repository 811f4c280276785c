#!/usr/bin/env bash
# Issue 17's bar on one GPU: per experiment, a quick run (run-all --budget: at most BUDGET seconds of the launcher
# process, model load included) and right after it, on the same host, the full run of the same recipe (one log line per
# step, as the quick run logs); then `swiftbench quick results`: each quick estimate beside the full run's measured
# training time, and the schedule against the full run's tokens.jsonl.
#
#   bash experiments/quick_gpu.sh DEADLINE_S EXPERIMENTS [MODEL] [DATA]          (EXPERIMENTS: seed,bs16,best)
#
# The seed recipe's full epoch takes ~10 minutes on an H200: where one command may run 10 minutes at most, start it
# detached (setsid) and collect $OUT later (experiments/README of the device tool: a new session survives the call).
# Needs: ./wheelhouse (make wheelhouse) and the data folder (default .data) carried to the GPU host.
set -u
DEADLINE=${1:?usage: quick_gpu.sh DEADLINE_S EXPERIMENTS [MODEL] [DATA]}
EXPERIMENTS=${2:?experiments}
MODEL=${3:-dummy}
DATA=${4:-.data}
OUT=${OUT:-/tmp/quick-out}
HW=${HW:-h200}
BUDGET=${BUDGET:-180}
LOG=/tmp/quick-logs
# shellcheck source=experiments/gpu_common.sh
. "$(dirname "$0")/gpu_common.sh"
gpu_setup
for name in ${EXPERIMENTS//,/ }; do
  for mode in quick full; do
    left=$((DEADLINE - SECONDS))
    if [ "$left" -le 90 ]; then echo "deadline: not starting $name ($mode)"; continue; fi
    if [ "$mode" = quick ]; then extra=(--budget "$BUDGET"); else extra=(--set logging_steps=1); fi
    echo "== $name $mode (${left} s left) =="
    CUDA_VISIBLE_DEVICES=${GPU:-0} timeout --signal=INT --kill-after=20 "$left" \
      python3 -m experiments.runner run-all --hw "$HW" --model "$MODEL" --data "$DATA" --experiments "$name" \
      "${extra[@]}" --no-progress >>"$LOG/runs.log" 2>&1
    echo "== $name $mode exit $? at ${SECONDS} s =="
  done
done
python3 -m analysis.cli quick results >"$LOG/quick.md" 2>&1
python3 -m analysis.cli quick results --json >"$LOG/quick.json" 2>&1
cat "$LOG/quick.md"
gpu_pack
tail -n 20 "$LOG/runs.log"
