#!/usr/bin/env bash
# Shared by the device-call scripts (claims_gpu.sh, matrix_gpu.sh): the set-up of a bare GPU host and the packing of
# what a call made. Source it; it defines gpu_setup and gpu_pack and expects MODEL, OUT, HW, LOG to be set.
#
# gpu_setup: install the carried wheels once into /tmp/site (a warm machine keeps them), build the dummy model once.
# detached_wait S: wait for a run a call started detached (it writes $LOG/detached.rc when it ends) until second S
#            of this call; 0 when it has ended.
# gpu_pack:  tar the files made since gpu_setup (no weights) with the call's logs into $OUT, in parts under the
#            device tool's 16 MiB per file. RESULTS (default results): the results folder the runs wrote; one outside
#            the working tree (/tmp/...) survives the next call's copy of the tree on a warm machine, for runs left
#            going (detached) across calls. Its files are packed as results/... either way.

# The inductor cache compile_layers / compile_dynamic keep (swift_plugin.py default_cache_dir): the compiled code a run
# saves is in its artifacts/ folder.
COMPILE_CACHE=${SWIFTBENCH_COMPILE_CACHE:-$HOME/.cache/swiftbench/inductor}

gpu_setup() {
  mkdir -p "$OUT" "$LOG"
  export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
  if [ -d wheelhouse ]; then
    if [ ! -f /tmp/site/.swiftbench-installed ]; then
      python3 -m experiments.setup.wheelhouse install --from wheelhouse --target /tmp/site >"$LOG/install.log" 2>&1 \
        || { echo "wheel install failed"; tail -20 "$LOG/install.log"; exit 3; }
      touch /tmp/site/.swiftbench-installed
    fi
    export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH
  else
    export PYTHONPATH=$PWD
  fi
  nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,memory.total,memory.used --format=csv >"$LOG/gpus.csv" 2>&1
  # MODEL reaches Python as an argument, never as code
  python3 -c "import sys; from experiments.run.prepare import resolve_model; print(resolve_model(sys.argv[1], 'cuda'))" \
    "$MODEL" \
    >"$LOG/model.log" 2>&1 || { echo "model build failed"; tail -20 "$LOG/model.log"; exit 4; }
  # Building the model leaves ~15 GB of dirty pages; their write-back ran under the first timed run of calls 16-17,
  # whose steady steps were 5-10 % slower than the next run's same steps. Flush them before anything is timed.
  local t0=$SECONDS
  sync
  echo "sync after the model build: $((SECONDS - t0)) s" >>"$LOG/model.log"
  echo "set-up done after ${SECONDS} s"
  [ -n "${KEEP_START:-}" ] && [ -f "$LOG/.start" ] || touch "$LOG/.start"
}

gpu_pack() {
  # The resolved recipes of combinations (results/resolved/$HW) travel with the runs they made.
  local results=${RESULTS:-results}
  local base
  base=$(cd "$(dirname "$results")" && pwd)
  (cd "$base" && find "$(basename "$results")/$HW" "$(basename "$results")/resolved/$HW" -newer "$LOG/.start" -type f \
    ! -name '*.safetensors' ! -name '*.bin' ! -name '*.pt' ! -name '*.pth') >"$LOG/new-files.txt" 2>/dev/null
  tar czf /tmp/call.tgz -C "$base" -T "$LOG/new-files.txt" 2>/dev/null
  tar czf /tmp/call-logs.tgz "$LOG" 2>/dev/null
  rm -f "$OUT"/call.tgz.part-* "$OUT"/call-logs.tgz
  cp /tmp/call-logs.tgz "$OUT/"
  split -b 15M /tmp/call.tgz "$OUT/call.tgz.part-"
  # The compiled code a run saved (torch.compiler cache artifacts, swift_plugin.py), for shipping beside the plugin:
  # its file name holds '+', which the device tool does not bring back, so it travels inside a tar.
  local arts=$COMPILE_CACHE/artifacts
  rm -f "$OUT"/artifacts.tgz.part-*
  if compgen -G "$arts/*.bin" >/dev/null; then
    tar czf /tmp/artifacts.tgz -C "$arts" . && split -b 15M /tmp/artifacts.tgz "$OUT/artifacts.tgz.part-"
  fi
  ls -la "$OUT"
  du -sh /tmp/call.tgz
}

detached_wait() {  # wait for a detached run until second $1 of this call; 0 when it ended
  while [ ! -f "$LOG/detached.rc" ]; do
    [ "$SECONDS" -ge "$1" ] && return 1
    sleep 5
  done
  echo "== detached run exit $(cat "$LOG/detached.rc") at ${SECONDS} s =="
}
