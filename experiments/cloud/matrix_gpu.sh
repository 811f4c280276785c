#!/usr/bin/env bash
# One device call of matrix runs (experiments/recipes/recipes.yaml) on one GPU, one run after the other, through the runner
# (each through the launcher: token counts and two profiled steps), with the host fingerprint in each env.json.
#
#   [GPM_PROBE=1] bash experiments/cloud/matrix_gpu.sh DEADLINE_S MAX_STEPS EXPERIMENTS [MODEL] [DATA]   (EXPERIMENTS: seed,bs16)
#
# GPM_PROBE=1: first check NVML's GPM counters against known duty cycles and torch.profiler (python -m experiments.probes.gpm_probe,
# about 15 s; its lines in $OUT/gpm_probe.txt).
#
# Needs: ./wheelhouse (make wheelhouse) and the data folder (default .data) carried to the GPU host.
set -u
DEADLINE=${1:?usage: matrix_gpu.sh DEADLINE_S MAX_STEPS EXPERIMENTS [MODEL] [DATA]}
MAX_STEPS=${2:?max steps}
EXPERIMENTS=${3:?experiments}
MODEL=${4:-dummy}
DATA=${5:-.data}
OUT=${OUT:-/tmp/matrix-out}
HW=${HW:-h200}
LOG=/tmp/matrix-logs
# shellcheck source=experiments/cloud/gpu_common.sh
. "$(dirname "$0")/gpu_common.sh"
gpu_setup
if [ -n "${GPM_PROBE:-}" ]; then
  timeout 60 python3 -m experiments.probes.gpm_probe --out "$LOG/gpm_probe.json" >"$LOG/gpm_probe.txt" 2>&1
  echo "gpm probe exit $? at ${SECONDS} s" >>"$LOG/gpm_probe.txt"
  cp "$LOG/gpm_probe.txt" "$OUT/"
fi
for name in ${EXPERIMENTS//,/ }; do
  left=$((DEADLINE - SECONDS))
  if [ "$left" -le 90 ]; then echo "deadline: not starting $name"; continue; fi
  echo "== $name (${left} s left) =="
  CUDA_VISIBLE_DEVICES=${GPU:-0} timeout --signal=INT --kill-after=20 "$left" \
    python3 -m experiments.run.runner run-all --hw "$HW" --model "$MODEL" --data "$DATA" --experiments "$name" \
    --max-steps "$MAX_STEPS" --no-progress >>"$LOG/runs.log" 2>&1
  echo "== $name exit $? at ${SECONDS} s =="
done
python3 -m analysis.cli tables results --compact >"$LOG/tables.md" 2>&1
gpu_pack
tail -n 20 "$LOG/runs.log"
