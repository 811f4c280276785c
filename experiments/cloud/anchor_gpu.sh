#!/usr/bin/env bash
# Issue 44: one anchor workload (experiments/anchors/workloads.yaml) on one GPU, torchtune 0.6.1's own recipe, cut to
# its warm-up + steady optimizer steps; the run folder lands in $OUT/anchors/<hw>/<workload>/<run-id>/ (commit it as
# results/anchors/<hw>/<workload>/<run-id>/).
#
#   bash experiments/cloud/anchor_gpu.sh [WORKLOADS] [DEADLINE_S]
#       WORKLOADS  comma-separated, run one after the other, each in its own run folder; default
#                  milabench-llm-lora-single (the other: torchtune-readme-8b-lora-packed)
#       DEADLINE_S default 440: seconds from the script's start after which the running training process is stopped
#                  (SIGINT); what it wrote stays, and the workloads not started are skipped
#   DEVICE (default cuda) and TT_ARGS (more tt_run.py arguments, e.g. "--tiny --steps 2") serve CPU dry runs.
#   PROFILE_STEPS (default 3; 0: none): after the run's reported steps, 1 more under torch.profiler unmeasured and
#   this many profiled (tt_run.py --profile-steps): profile.json, the kernels the time model carries to other GPUs
#   (`plan --checks` (6)); those steps count in no tokens/s figure (run.json profile.excluded_steps).
#
# `make anchor-cache` builds $ANCHOR_DIR on a machine with the package index (wheels for the device's Python 3.12).
#
# Needs, carried to the GPU host: $ANCHOR_DIR (default .cache/anchor44) with whl/ (torchtune 0.6.1, torchao 0.13.0,
# torchdata 0.11.0, omegaconf 2.4.0, datasets 4.8.4, dill 0.4.1, multiprocess 0.70.19) and data/ (alpaca-gpt4-en.json
# and the stand-in tokenizer.model, experiments/anchors/standin.py). The wheels go to ANCHOR_SITE (default
# /tmp/anchor-site), never into the image's Python nor into /tmp/site, where gpu_common.sh installs ms-swift's wheels
# on the same machine (torchao 0.13.0 there broke the next swift run of the call: "only versions above 0.16.0").
# Run folder: run.json, config.yaml, steps.jsonl, profile.json, nvml.csv (tt_run.py), env.json, nvidia-smi.txt,
# console.log (here).
set -u
OUT=${OUT:-/tmp/anchor-out}
WORKLOADS=${1:-milabench-llm-lora-single}
DEADLINE_S=${2:-440}
ANCHOR_DIR=${ANCHOR_DIR:-.cache/anchor44}
PY=${PY:-python3}
ANCHOR_SITE=${ANCHOR_SITE:-/tmp/anchor-site}
DEVICE=${DEVICE:-cuda}
TT_ARGS=${TT_ARGS:-}
PROFILE_STEPS=${PROFILE_STEPS:-3}
T0=$SECONDS

"$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$ANCHOR_SITE" \
  "$ANCHOR_DIR"/whl/*.whl || { echo "anchor_gpu: wheel install failed"; exit 1; }
export PYTHONPATH="$ANCHOR_SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"
SHIM=no
if ! "$PY" -c "import datasets" >/tmp/anchor-datasets.log 2>&1; then
  SHIM=yes  # torchtune imports datasets at module level; the anchor data path never calls it
  export PYTHONPATH="$PWD/experiments/anchors/shim:$PYTHONPATH"
fi
HW=${HW:-$("$PY" -c "from experiments.record.gpu import detect_hw; print(detect_hw())" 2>/dev/null || echo gpu)}
Q_BEFORE=name,pci.bus_id,driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.draw,power.limit
Q_BEFORE=$Q_BEFORE,clocks.applications.graphics,temperature.gpu,persistence_mode
Q_AFTER=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_event_reasons.active
ENV_PY='import json, sys
from experiments.record.gpu import environment
json.dump(environment(sys.argv[1]), open(sys.argv[2], "w"), indent=2, default=str)'
RC=0
for W in ${WORKLOADS//,/ }; do
  if [ $((DEADLINE_S - SECONDS + T0)) -lt 60 ]; then
    echo "anchor_gpu: skip $W: under 60 s left"; RC=3; continue
  fi
  RUN_ID=$(date -u +%Y%m%dT%H%M%SZ)-$(hostname | cksum | cut -c1-6)
  RUN="$OUT/anchors/$HW/$W/$RUN_ID"
  mkdir -p "$RUN"
  LOG="$RUN/console.log"
  {
    echo "anchor_gpu: workload $W hw $HW run $RUN_ID; datasets stand-in (shim): $SHIM; set-up ${SECONDS}s"
    cat /tmp/anchor-datasets.log
  } >"$LOG"
  {
    echo "== before"; nvidia-smi --query-gpu="$Q_BEFORE" --format=csv
    nvidia-smi -q -d CLOCK,PERFORMANCE,POWER
  } >"$RUN/nvidia-smi.txt" 2>&1
  SWIFTBENCH_HOST_PROBE=0 "$PY" -c "$ENV_PY" "$HW" "$RUN/env.json" >>"$LOG" 2>&1
  echo "anchor_gpu: env.json at ${SECONDS}s" >>"$LOG"
  LEFT=$((DEADLINE_S - SECONDS + T0))
  timeout --signal=INT --kill-after=20 "$LEFT" "$PY" -m experiments.anchors.tt_run --workload "$W" \
    --out "$RUN" --data "$ANCHOR_DIR/data" --device "$DEVICE" --hw "$HW" \
    --profile-steps "$PROFILE_STEPS" $TT_ARGS >>"$LOG" 2>&1
  R=$?; [ "$R" -eq 0 ] || RC=$R
  echo "anchor_gpu: tt_run exit $R at ${SECONDS}s (script start $T0)" >>"$LOG"
  {
    echo "== after"; nvidia-smi --query-gpu="$Q_AFTER" --format=csv
  } >>"$RUN/nvidia-smi.txt" 2>&1
  # console.log keeps the recipe's progress bar as one long line; keep its tail under the size limit
  if [ "$(stat -c %s "$LOG")" -gt 8000000 ]; then tail -c 8000000 "$LOG" >"$LOG.tail" && mv "$LOG.tail" "$LOG"; fi
  grep -v "it/s\]" "$LOG" | tail -n 25
  "$PY" -m analysis.parse.anchor_run "$RUN" || true
  echo "anchor_gpu: done at ${SECONDS}s; run folder $RUN"
done
exit $RC
