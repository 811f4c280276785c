#!/usr/bin/env bash
# One device call of the claims plan (experiments/recipes/claims/plan.yaml): install the carried wheels once, build the
# dummy model once, resolve the combinations whose members have run (`swiftbench claims resolve --all`: the runner
# only reads results/resolved/), then run the call's chains side by side, one chain per GPU (CUDA_VISIBLE_DEVICES),
# each chain's commands one after another. Every chain stops starting runs past the deadline; results (and the
# claims verdicts) are tarred into $OUT.
#
#   [SDPA_SHAPES=1] bash experiments/cloud/claims_gpu.sh CALL [DEADLINE_S] [MODEL] [DATA]
#
# SDPA_SHAPES=1: first time one attention call's host cost at new and repeated packed-row lengths, with and without
# cuDNN (python -m experiments.probes.sdpa_shapes, about 30 s; its lines are in $OUT/sdpa_shapes.txt, the JSON in the logs).
#
# Needs: ./wheelhouse (make wheelhouse) and the data folder (default .data) carried to the GPU host.
set -u
CALL=${1:?usage: claims_gpu.sh CALL [DEADLINE_S] [MODEL] [DATA]}
DEADLINE=${2:-570}
MODEL=${3:-dummy}
DATA=${4:-.data}
OUT=${OUT:-/tmp/claims-out}
HW=${HW:-h200}
LOG=/tmp/claims-logs   # logs travel inside the archive: $OUT returns at most 8 files
# shellcheck source=experiments/cloud/gpu_common.sh
. "$(dirname "$0")/gpu_common.sh"
gpu_setup

chain() {  # GPU NAME... : one chain on one GPU
  local gpu=$1; shift
  for name in "$@"; do
    local left=$((DEADLINE - SECONDS))
    if [ "$left" -le 90 ]; then echo "deadline: not starting plan:$name"; continue; fi
    echo "== plan:$name on GPU $gpu (${left} s left) =="
    CUDA_VISIBLE_DEVICES=$gpu timeout --signal=INT --kill-after=20 "$left" \
      python3 -m experiments.run.runner run-all --hw "$HW" --model "$MODEL" --data "$DATA" --claims \
      --experiments "plan:$name" --no-progress
    echo "== plan:$name exit $? at ${SECONDS} s =="
  done
}

if [ -n "${SDPA_SHAPES:-}" ]; then
  timeout 150 python3 -m experiments.probes.sdpa_shapes --out "$LOG/sdpa_shapes.json" >"$LOG/sdpa_shapes.txt" 2>&1
  echo "sdpa_shapes exit $? at ${SECONDS} s" >>"$LOG/sdpa_shapes.txt"
  cp "$LOG/sdpa_shapes.txt" "$OUT/"
fi
python3 -m experiments.recipes.plan --chains "$CALL" >"$LOG/chains.txt" || { echo "no plan"; cat "$LOG/chains.txt"; exit 5; }
# A combination runs the recipe resolved from its members' runs so far; without one it is reported blocked.
python3 -m analysis.cli claims resolve --all --hw "$HW" results >"$LOG/resolve.log" 2>&1 || true
for lane in $(awk '{print $1 ":" $2}' "$LOG/chains.txt" | sort -u); do
  g=${lane%%:*}; l=${lane##*:}
  names=$(awk -v g="$g" -v l="$l" '$1 == g && $2 == l {print $3}' "$LOG/chains.txt")
  # shellcheck disable=SC2086
  chain "$g" $names >"$LOG/gpu$g$l.log" 2>&1 &
done
wait
echo "all chains done after ${SECONDS} s"
python3 -m analysis.cli claims results >"$OUT/claims.txt" 2>&1
cp "$OUT/claims.txt" "$LOG/"
gpu_pack
tail -n 3 "$LOG"/gpu*.log
