#!/usr/bin/env bash
# Issue 17's bar on one GPU: per experiment, a quick run (run-all --budget: at most BUDGET seconds of the launcher
# process, model load included) and right after it, on the same host, the full run of the same recipe (one log line per
# step, as the quick run logs); then `swiftbench quick`: each quick estimate beside the full run's measured training
# time, and the schedule against the full run's tokens.jsonl.
#
#   bash experiments/cloud/quick_gpu.sh DEADLINE_S EXPERIMENTS [MODEL] [DATA]          (EXPERIMENTS: seed,bs16,best)
#   bash experiments/cloud/quick_gpu.sh wait DEADLINE_S [EXPERIMENTS [MODEL] [DATA]]
#       (a later call: wait for a detached full run; then the pairs of EXPERIMENTS, if given and time is left; pack)
#
# PRIME=EXPERIMENT (first form): before the pairs, a throwaway cut run of that experiment (12 steps, evaluating and
# saving at steps 5, 10 and 12) into a scratch results folder that is never packed: it pays a fresh machine's
# one-time costs (first runs of a recipe on a machine ran their steps and first save slower, docs/quick-runs.md)
# so that the timed pairs do not. Say so beside any result it precedes. Call 39 (PRIME=best, then two seed runs):
# the first best run after it had no slow steps 2 and 6, but still step 27, beyond the prime's 12 steps.
#
# The prime's own logging.jsonl (one line per step) is kept with the call's logs (prime-<run>-logging.jsonl), not among
# the results.
#
# ORDER="full quick" (either form): each pair's full run first, then its quick run (default "quick full"): a quick run
# made on a machine that has already run the recipe to the end (call 42: the best pair's one-time costs,
# results/findings/quick-runs_h200_2026-12-02.md).
#
# RESUME=EXPERIMENT (either form): before the runs (after the wait), issue 19's resume check on that experiment
# (experiments/run/resume_check.py: a 40-step cut run killed at step 25 and resumed from its step-20 checkpoint).
#
# The seed recipe's full epoch takes 6-10 minutes on an H200, longer than one device command with its quick run:
# DETACH=seed starts that experiment's full run in its own process session (setsid), which the device tool leaves
# running after the call returns, as long as the next call comes while the machine is warm. The call then waits for it
# until DEADLINE_S and packs what exists; `wait` in the next call waits for the rest and packs again. The runs write to
# RESULTS (default /tmp/swiftbench-results/results): the next call's copy of the working tree would not keep a folder
# it did not send.
# Needs: ./wheelhouse (make wheelhouse) and the data folder (default .data) carried to the GPU host.
set -u
OUT=${OUT:-/tmp/quick-out}
HW=${HW:-h200}
BUDGET=${BUDGET:-180}
LOG=/tmp/quick-logs
RESULTS=${RESULTS:-/tmp/swiftbench-results/results}
DETACH=${DETACH:-}
MODEL=dummy
# shellcheck source=experiments/cloud/gpu_common.sh
. "$(dirname "$0")/gpu_common.sh"

prime() {
  [ -n "${PRIME:-}" ] || return 0
  echo "== prime: a throwaway 12-step run of $PRIME at ${SECONDS} s =="
  CUDA_VISIBLE_DEVICES=${GPU:-0} timeout --signal=INT --kill-after=20 300 python3 -m experiments.run.runner run-all \
    --hw "$HW" --model "$MODEL" --data "$DATA" --experiments "$PRIME" --max-steps 12 --set eval_steps=5 \
    --set save_steps=5 --set logging_steps=1 --results /tmp/swiftbench-prime/results --no-progress \
    >"$LOG/prime.log" 2>&1
  echo "== prime exit $? at ${SECONDS} s =="
  local f
  for f in /tmp/swiftbench-prime/results/*/*/*/logging.jsonl; do  # one per prime run, named by its run folder
    [ -f "$f" ] && cp "$f" "$LOG/prime-$(basename "$(dirname "$f")")-logging.jsonl"
  done
}

resume_check() {
  [ -n "${RESUME:-}" ] || return 0
  echo "== resume check on $RESUME at ${SECONDS} s =="
  CUDA_VISIBLE_DEVICES=${GPU:-0} timeout --signal=INT --kill-after=20 400 python3 -m experiments.run.resume_check \
    --hw "$HW" --model "$MODEL" --data "${DATA:-$PWD/.data}" --experiment "$RESUME" --max-steps 40 --save-steps 10 \
    --kill-at 25 --set logging_steps=1 --results "$RESULTS" >"$LOG/resume.log" 2>&1
  echo "== resume check exit $? at ${SECONDS} s =="
  tail -n 30 "$LOG/resume.log"
}

summary() {
  python3 -m analysis.cli quick "$RESULTS" >"$LOG/quick.md" 2>&1
  python3 -m analysis.cli quick "$RESULTS" --json >"$LOG/quick.json" 2>&1
  cat "$LOG/quick.md"
}

run_pairs() {  # per experiment of $1: its quick run, then its full run (detached for $DETACH)
  local name mode left need full_need extra cmd
  for name in ${1//,/ }; do
    for mode in ${ORDER:-quick full}; do
      left=$((DEADLINE - SECONDS))
      if [ "$mode" = quick ]; then extra=(--budget "$BUDGET"); else extra=(--set logging_steps=1); fi
      cmd=(python3 -m experiments.run.runner run-all --hw "$HW" --model "$MODEL" --data "$DATA" --experiments "$name"
           --results "$RESULTS" "${extra[@]}" --no-progress)
      # a run the deadline would cut is no use, nor a quick run without its full run: a quick run needs its budget
      # and its full run's time, a full one (not detached) MIN_FULL_S, a detached one 90 s to start
      full_need=${MIN_FULL_S:-170}; [ "$name" = "$DETACH" ] && full_need=90
      need=$((BUDGET + 30 + full_need)); [ "$mode" = full ] && need=$full_need
      if [ "$left" -lt "$need" ]; then
        echo "deadline: not starting $name ($mode): ${left} s left, needs ${need}"
        [ "$mode" = quick ] && break  # no full run without its quick run
        continue
      fi
      if [ "$mode" = full ] && [ "$name" = "$DETACH" ]; then
        echo "== $name $mode detached (${left} s left in this call) =="
        rm -f "$LOG/detached.rc"
        CUDA_VISIBLE_DEVICES=${GPU:-0} setsid bash -c '"$@" >>'"$LOG/runs.log"' 2>&1; echo $? >'"$LOG/detached.rc" \
          _ timeout --signal=INT --kill-after=20 1500 "${cmd[@]}" </dev/null &
        echo $! >"$LOG/detached.pid"
        detached_wait "$DEADLINE" || echo "detached run still going at ${SECONDS} s: collect it with 'wait'"
        continue
      fi
      echo "== $name $mode (${left} s left) =="
      CUDA_VISIBLE_DEVICES=${GPU:-0} timeout --signal=INT --kill-after=20 "$left" "${cmd[@]}" >>"$LOG/runs.log" 2>&1
      echo "== $name $mode exit $? at ${SECONDS} s =="
    done
  done
}

if [ "${1:-}" = wait ]; then
  DEADLINE=${2:?usage: quick_gpu.sh wait DEADLINE_S [EXPERIMENTS [MODEL] [DATA]]}
  EXPERIMENTS=${3:-}
  MODEL=${4:-dummy}
  DATA=$(cd "${5:-.data}" && pwd)
  KEEP_START=1 gpu_setup
  if [ -f "$LOG/detached.pid" ] && ! detached_wait "$DEADLINE"; then
    echo "detached run still going at ${SECONDS} s"
  else
    resume_check
    [ -n "$EXPERIMENTS" ] && run_pairs "$EXPERIMENTS"
  fi
  summary
  gpu_pack
  tail -n 20 "$LOG/runs.log"
  exit 0
fi

DEADLINE=${1:?usage: quick_gpu.sh DEADLINE_S EXPERIMENTS [MODEL] [DATA]}
EXPERIMENTS=${2:?experiments}
MODEL=${3:-dummy}
DATA=${4:-.data}
mkdir -p "$RESULTS"
DATA=$(cd "$DATA" && pwd)
gpu_setup
prime
resume_check
run_pairs "$EXPERIMENTS"
summary
gpu_pack
tail -n 20 "$LOG/runs.log"
