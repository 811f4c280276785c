#!/usr/bin/env bash
# One device call of multi-GPU runs on one host: the all-reduce sweep (optional) and matrix experiments at several GPU
# counts, one right after the other (a scaling ratio wants runs made close together on one host).
#
#   bash experiments/cloud/scaling_gpu.sh DEADLINE_S MAX_STEPS EXPERIMENTS GPUS [PARALLEL] [ALLREDUCE] [MODEL] [DATA]
#   EXTRA="best:2:zero2" bash experiments/cloud/scaling_gpu.sh ...   (then single runs, experiment:gpus:parallel)
#     EXPERIMENTS: seed,best   GPUS: 1,2   PARALLEL: ddp | zero2 | zero3 | ddp,zero2   ALLREDUCE: 1 to sweep first
#
# Needs: ./wheelhouse (make wheelhouse; it carries deepspeed for zero*) and the data folder (default .data).
set -u
DEADLINE=${1:?usage: scaling_gpu.sh DEADLINE_S MAX_STEPS EXPERIMENTS GPUS [PARALLEL] [ALLREDUCE] [MODEL] [DATA]}
MAX_STEPS=${2:?max steps}
EXPERIMENTS=${3:?experiments}
GPUS=${4:?gpu counts}
PARALLEL=${5:-ddp}
ALLREDUCE=${6:-0}
MODEL=${7:-dummy}
DATA=${8:-.data}
OUT=${OUT:-/tmp/scaling-out}
HW=${HW:-h200}
LOG=/tmp/scaling-logs
# shellcheck source=experiments/cloud/gpu_common.sh
. "$(dirname "$0")/gpu_common.sh"
gpu_setup
nvidia-smi topo -m >"$LOG/topo.txt" 2>&1
NGPU=$(nvidia-smi -L | wc -l)
if [ "$ALLREDUCE" = 1 ] && [ "$NGPU" -ge 2 ]; then
  stamp=$(date +%Y%m%d-%H%M%S)
  for variant in plain seed000-env; do
    dir="results/$HW/allreduce/${stamp}-${NGPU}gpu-${variant}"
    mkdir -p "$dir"
    envs=(NCCL_DEBUG=INFO)
    if [ "$variant" = seed000-env ]; then
      envs+=(NCCL_NVSWITCH_USE=1 NCCL_IB_DISABLE=0 NCCL_P2P_LEVEL=5 NCCL_FASTRAK_ENABLE=1)
    fi
    echo "== all-reduce $variant =="
    env "${envs[@]}" HW="$HW" timeout 180 python3 -m torch.distributed.run --standalone --nproc_per_node "$NGPU" \
      -m experiments.record.allreduce --out "$dir" --label "$variant" >"$dir/nccl.log" 2>&1
    echo "exit $? at ${SECONDS} s"; grep -E "MiB|set by environment" "$dir/nccl.log" | sort -u | tail -14
  done
fi
for name in ${EXPERIMENTS//,/ }; do
  for n in ${GPUS//,/ }; do
    for par in ${PARALLEL//,/ }; do
      left=$((DEADLINE - SECONDS))
      if [ "$left" -le 100 ]; then echo "deadline: not starting $name at $n GPUs ($par)"; continue; fi
      echo "== $name gpus=$n $par (${left} s left) =="
      timeout --signal=INT --kill-after=20 "$left" \
        python3 -m experiments.run.runner run-all --hw "$HW" --model "$MODEL" --data "$DATA" --experiments "$name" \
        --gpus "$n" --parallel "$par" --max-steps "$MAX_STEPS" --no-progress >>"$LOG/runs.log" 2>&1
      echo "== $name gpus=$n $par exit $? at ${SECONDS} s =="
    done
  done
done
# EXTRA="best:2:zero2 platform:2:zero3": single runs after the sweep (experiment:gpus:parallel)
for item in ${EXTRA:-}; do
  IFS=: read -r name n par <<<"$item"
  left=$((DEADLINE - SECONDS))
  if [ "$left" -le 100 ]; then echo "deadline: not starting $item"; continue; fi
  echo "== $item (${left} s left) =="
  timeout --signal=INT --kill-after=20 "$left" \
    python3 -m experiments.run.runner run-all --hw "$HW" --model "$MODEL" --data "$DATA" --experiments "$name" \
    --gpus "$n" --parallel "$par" --max-steps "$MAX_STEPS" --no-progress >>"$LOG/runs.log" 2>&1
  echo "== $item exit $? at ${SECONDS} s =="
done
python3 -m analysis.cli tables results --compact >"$LOG/tables.md" 2>&1
gpu_pack
tail -n 25 "$LOG/runs.log"
tail -n 12 "$LOG/tables.md"
