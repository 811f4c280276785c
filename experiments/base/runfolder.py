"""The run-folder contract, typed: the key names of every JSON object (and JSON line) a run folder holds, once.

Each class below is one file's (or one nested object's) keys as `Final` constants (nvml.csv's: its columns). The
writers (experiments/record, experiments/run, the launcher experiments/launch, the anchor runner experiments/anchors)
build their dicts with them (`{Env.GPU_NAME: name}`), the schema that checks a file where it is read
(experiments/base/runschema.py) names its fields with them, and the readers (analysis/parse, and the analysis modules
that read a file's keys themselves: profile.json's windows, nvml.csv, launch.json's records) index with them
(`env.get(Env.GPU_NAME)`); mypy treats a Final string as its literal, so a reader's TypedDict
(analysis/parse/runfile_rows.py) still checks every key it reads. No key name is spelled as a string literal on
both sides: tests/test_runfolder_contract.py scans the writers and readers for one, and checks that each reader's
TypedDict names only keys of its file's class. Every class of this module is part of the contract (FILES,
all_keys()). The file names themselves are experiments/base/runfiles.py's.

Stays whole: the contract is one module by design (issue 46: "the run-folder contract once"): every writer and reader
imports its names from one place, and all_keys() reads them all here.
"""
from __future__ import annotations

from typing import Final


def keys(cls: type) -> dict[str, str]:
    """{constant name: key} of one of the classes below."""
    return {k: v for k, v in vars(cls).items() if k.isupper() and isinstance(v, str)}


class Run:
    """run.json: the runner's record of a run (experiments/run/prepare.py, folders.py, importer.py)."""

    STATUS: Final = "status"
    HW: Final = "hw"
    EXPERIMENT: Final = "experiment"
    REASON: Final = "reason"
    KEY: Final = "key"
    SPEC: Final = "spec"
    MAX_STEPS: Final = "max_steps"
    GPUS: Final = "gpus"
    PARALLEL: Final = "parallel"
    DUMMY_WEIGHTS: Final = "dummy_weights"
    OFFLINE_DATA: Final = "offline_data"
    FORCED_HW: Final = "forced_hw"
    IMPORTED: Final = "imported"
    UNKNOWN: Final = "unknown"
    RESUMES: Final = "resumes"
    RESUME_REQUEST: Final = "resume_request"
    WALL_S: Final = "wall_s"
    COMMAND: Final = "command"
    LAUNCH_COMMAND: Final = "launch_command"
    NOTES: Final = "notes"
    SWIFT_VERSION: Final = "swift_version"
    STARTED: Final = "started"
    FINISHED: Final = "finished"
    ROUND: Final = "round"
    PROBE_AFTER: Final = "probe_after"
    HARNESS: Final = "harness"
    PID: Final = "pid"
    HOST: Final = "host"


class RunKey:
    """run.json's `key`: what makes two runs the same job (experiments/run/spec.py's RunSpec.key())."""

    EXPERIMENT: Final = "experiment"
    RECIPE: Final = "recipe"
    RECIPE_NAME: Final = "recipe_name"
    MODEL: Final = "model"
    DATA: Final = "data"
    PARALLEL: Final = "parallel"
    MAX_STEPS: Final = "max_steps"
    GPUS: Final = "gpus"
    OVERRIDES: Final = "overrides"
    ENV: Final = "env"
    LAUNCHER: Final = "launcher"


class Launcher:
    """run.json key's `launcher` (else launch.json's `options`): experiments/launch/launcher.py's options."""

    MEM_CAP_GIB: Final = "mem_cap_gib"
    STOP_AFTER: Final = "stop_after"
    PROFILE_STEPS: Final = "profile_steps"
    PROFILE_SKIP: Final = "profile_skip"
    PROFILE_WARMUP: Final = "profile_warmup"
    PAD_TO: Final = "pad_to"
    ENV: Final = "env"
    QUICK: Final = "quick"
    LIGER_CONFIG: Final = "liger_config"
    SDP_BACKENDS: Final = "sdp_backends"
    PROFILE_ACTIVITIES: Final = "profile_activities"
    PROFILE_HOST_STACKS: Final = "profile_host_stacks"
    LONGEST_FIRST: Final = "longest_first"
    SDPA_PADDING_FREE: Final = "sdpa_padding_free"
    FAST_EXIT: Final = "fast_exit"
    SCHEDULE: Final = "schedule"


class Resume:
    """An entry of run.json's `resumes` (experiments/run/prepare.py): one restart from a checkpoint."""

    AT: Final = "at"
    FROM_STEP: Final = "from_step"
    CHECKPOINT: Final = "checkpoint"
    LOG_LINES_BEFORE: Final = "log_lines_before"
    AFTER: Final = "after"


class Round:
    """run.json's `round`: an interleaved set's run (experiments/run/rounds.py)."""

    SET: Final = "set"
    ROUND: Final = "round"
    OF: Final = "of"
    SLOT: Final = "slot"
    ITEM: Final = "item"


class Env:
    """env.json: what ran where (experiments/record/gpu.py's environment(), experiments/run/prepare.py)."""

    HW: Final = "hw"
    GPU_NAME: Final = "gpu_name"
    GPU_COUNT: Final = "gpu_count"
    GPU_MEMORY_MIB: Final = "gpu_memory_mib"
    GPUS: Final = "gpus"
    DRIVER: Final = "driver"
    CUDA_DRIVER: Final = "cuda_driver"
    CUDA_TORCH: Final = "cuda_torch"
    TOPOLOGY: Final = "topology"
    NVLINKS: Final = "nvlinks"
    CPU_MODEL: Final = "cpu_model"
    CPU_COUNT: Final = "cpu_count"
    RAM_GIB: Final = "ram_gib"
    PYTHON: Final = "python"
    PLATFORM: Final = "platform"
    PACKAGES: Final = "packages"
    SUITE_COMMIT: Final = "suite_commit"
    HOST: Final = "host"
    GPU_CHECK: Final = "gpu_check"
    DUMMY_WEIGHTS: Final = "dummy_weights"
    IMPORTED: Final = "imported"
    UNKNOWN: Final = "unknown"


class GpuCheck:
    """env.json's `gpu_check` (experiments/record/gpu.py's check()): the GPU against the hardware class asked for."""

    GPU_NAME: Final = "gpu_name"
    MATCHED_HW: Final = "matched_hw"
    FORCED: Final = "forced"


class Host:
    """env.json's `host` (experiments/record/host.py's record())."""

    FINGERPRINT: Final = "fingerprint"
    PROBE: Final = "probe"


class Fingerprint:
    """env.json's host `fingerprint` (experiments/record/host.py's fingerprint())."""

    HOST_ID: Final = "host_id"
    HOST_ID_FROM: Final = "host_id_from"
    CPU: Final = "cpu"
    GPUS: Final = "gpus"
    GPU_COUNT_HOST: Final = "gpu_count_host"


class Probe:
    """env.json's host `probe` and run.json's `probe_after`: three parts, each a figure with its unit."""

    PYTHON_LOOP: Final = "python_loop"
    DISPATCH: Final = "dispatch"
    LORA_STEP: Final = "lora_step"
    PARTS: Final = (PYTHON_LOOP, DISPATCH, LORA_STEP)
    VALUE: Final = "value"
    UNIT: Final = "unit"
    REASON: Final = "reason"


class Args:
    """args.json: ms-swift's parsed arguments (also the run's overrides the runner hands to ms-swift)."""

    PER_DEVICE_TRAIN_BATCH_SIZE: Final = "per_device_train_batch_size"
    GRADIENT_ACCUMULATION_STEPS: Final = "gradient_accumulation_steps"
    WORLD_SIZE: Final = "world_size"
    GLOBAL_WORLD_SIZE: Final = "global_world_size"
    MAX_STEPS: Final = "max_steps"
    MAX_LENGTH: Final = "max_length"
    NUM_TRAIN_EPOCHS: Final = "num_train_epochs"
    EVAL_STEPS: Final = "eval_steps"
    SAVE_STEPS: Final = "save_steps"
    LOGGING_STEPS: Final = "logging_steps"
    GRADIENT_CHECKPOINTING: Final = "gradient_checkpointing"
    RESUME_FROM_CHECKPOINT: Final = "resume_from_checkpoint"
    DEEPSPEED: Final = "deepspeed"
    SWIFT_VERSION: Final = "swift_version"
    MODEL: Final = "model"


class Profile:
    """profile.json (experiments/launch/profiler.py): the profiler's settings, its windows (`steps`, each a
    ProfileWindow) and their medians."""

    DEVICE: Final = "device"
    PROFILE_STEPS: Final = "profile_steps"
    PROFILE_SKIP: Final = "profile_skip"
    PROFILE_WARMUP: Final = "profile_warmup"
    HOST_STACKS: Final = "host_stacks"
    ACTIVITIES: Final = "activities"
    ACTIVITIES_NOTE: Final = "activities_note"
    WINDOW: Final = "window"
    STEPS: Final = "steps"
    MEDIAN_WALL_S: Final = "median_wall_s"
    MEDIAN_GPU_BUSY_FRAC: Final = "median_gpu_busy_frac"


class ProfileWindow:
    """One of profile.json's `steps` (experiments/launch/profiler.py): one profiled optimizer step. `gpm` is a Gpm
    line of the window (no `step`), `gc` a GcSummary, `host_stacks` a HostStacks, each of `top_gpu_ops` a GpuOp."""

    STEP: Final = "step"
    WALL_S: Final = "wall_s"
    GPU_BUSY_S: Final = "gpu_busy_s"
    GPU_BUSY_FRAC: Final = "gpu_busy_frac"
    GPU_COMM_S: Final = "gpu_comm_s"
    GPU_EVENTS: Final = "gpu_events"
    HOST_EVENTS: Final = "host_events"
    PROCESSING_S: Final = "processing_s"
    TOP_GPU_OPS: Final = "top_gpu_ops"
    WARMUP: Final = "warmup"
    GC: Final = "gc"
    GPM: Final = "gpm"
    HOST_STACKS: Final = "host_stacks"
    HOST_ERROR: Final = "host_error"
    ERROR: Final = "error"


class GpuOp:
    """One of a profile window's `top_gpu_ops` (experiments/launch/profiler.py top_gpu_ops()): a GPU kernel or copy."""

    OP: Final = "op"
    GPU_MS: Final = "gpu_ms"
    CALLS: Final = "calls"


class GcSummary:
    """A profile window's `gc` (experiments/launch/profiler.py GcTimer): Python's collections by generation."""

    COLLECTIONS: Final = "collections"
    SECONDS: Final = "seconds"


class HostStacks:
    """A profile window's `host_stacks` (experiments/launch/hoststacks.py StackSampler.stop())."""

    INTERVAL_S: Final = "interval_s"
    ROUNDS: Final = "rounds"
    WALL_S: Final = "wall_s"
    RATE_HZ: Final = "rate_hz"
    THREADS: Final = "threads"
    CPU: Final = "cpu"


class StackThread:
    """One of HostStacks' `threads`: a Python thread's shares of the window; `owner`, `package` and `leaf` are lists
    of StackShare."""

    THREAD: Final = "thread"
    BUSY_SHARE: Final = "busy_share"
    IDLE_SHARE: Final = "idle_share"
    CPU_SHARE: Final = "cpu_share"
    PACKAGE: Final = "package"
    LEAF: Final = "leaf"
    OWNER: Final = "owner"


class StackShare:
    """A frame (or package) of a StackThread's `owner`, `package` or `leaf` list and its share of the window."""

    FRAME: Final = "frame"
    SHARE: Final = "share"


class TaskCpu:
    """One of HostStacks' `cpu` (experiments/launch/hoststacks.py cpu_between()): an OS thread's CPU time."""

    TASK: Final = "task"
    PYTHON_THREAD: Final = "python_thread"
    CPU_S: Final = "cpu_s"
    CPU_SHARE: Final = "cpu_share"


class Launch:
    """launch.json: the launcher's record of a run (experiments/launch/launcher.py main()). `options` is the parsed
    command line (argparse's names, Launcher's where they agree), `mem_cap` a MemCap, `quick` a Quick, `stop_after` a
    StopAfter, `profile` a ProfileRecord, `gpm` a GpmRecord, `tokens` a TokensRecord, `longest_first` a LongestFirst,
    `compile_cache` a CompileCache, `earlier` the launch.json objects of the attempts before a resume."""

    ARGV: Final = "argv"
    SWIFT_ARGS: Final = "swift_args"
    PID: Final = "pid"
    STARTED: Final = "started"
    OPTIONS: Final = "options"
    HARNESS: Final = "harness"
    MEM_CAP: Final = "mem_cap"
    COMPILE_CACHE: Final = "compile_cache"
    RANK: Final = "rank"
    WORLD_SIZE: Final = "world_size"
    RESUME_FROM_STEP: Final = "resume_from_step"
    EARLIER: Final = "earlier"
    PROFILE: Final = "profile"
    GPM: Final = "gpm"
    STOP_AFTER: Final = "stop_after"
    QUICK: Final = "quick"
    TOKENS: Final = "tokens"
    SCHEDULE: Final = "schedule"
    LONGEST_FIRST: Final = "longest_first"
    PAD_TO: Final = "pad_to"
    ERROR: Final = "error"
    SFT_S: Final = "sft_s"
    RETURNCODE: Final = "returncode"
    FAST_EXIT: Final = "fast_exit"


class MemCap:
    """launch.json's `mem_cap` (experiments/launch/launcher.py apply_memory_cap()): the allocator cap asked for and
    what was applied."""

    REQUESTED_GIB: Final = "requested_gib"
    APPLIED: Final = "applied"
    REASON: Final = "reason"
    DEVICE: Final = "device"
    TOTAL_BYTES: Final = "total_bytes"
    TOTAL_GIB: Final = "total_gib"
    FRACTION: Final = "fraction"
    CAP_BYTES: Final = "cap_bytes"
    DEVICE_NAME: Final = "device_name"


class Quick:
    """A quick run (experiments/launch/quick_stop.py): the launcher option `quick` (budget_s, max_steps; run.json
    key's launcher) and launch.json's `quick`, the record of where and why the run stopped."""

    BUDGET_S: Final = "budget_s"
    MAX_STEPS: Final = "max_steps"
    RESERVE_S: Final = "reserve_s"
    STOPPED: Final = "stopped"
    DECIDED_AT: Final = "decided_at"
    EVENT_STEPS: Final = "event_steps"
    ELAPSED_AT_DECISION_S: Final = "elapsed_at_decision_s"
    WHY: Final = "why"
    AT_STEP: Final = "at_step"
    MAX_STEPS_OF_SCHEDULE: Final = "max_steps_of_schedule"
    ELAPSED_S: Final = "elapsed_s"


class StopAfter:
    """launch.json's `stop_after` (experiments/launch/launcher.py make_stop_callback())."""

    STEP: Final = "step"
    STOPPED: Final = "stopped"
    AT_STEP: Final = "at_step"
    MAX_STEPS: Final = "max_steps"


class ProfileRecord:
    """launch.json's `profile` (experiments/launch/profiler.py; `skipped` where a resumed run profiles nothing) and an
    anchor run's run.json `profile` (experiments/anchors/tt_run.py adds the rest)."""

    FILE: Final = "file"
    STEPS: Final = "steps"
    SKIP: Final = "skip"
    DEVICE: Final = "device"
    SKIPPED: Final = "skipped"
    WARMUP: Final = "warmup"
    ACTIVITIES: Final = "activities"
    EXCLUDED_STEPS: Final = "excluded_steps"
    NOTE: Final = "note"


class GpmRecord:
    """launch.json's `gpm` (experiments/record/gpm.py make_callback()): the gpm.jsonl file, why (not) and the GPU."""

    FILE: Final = "file"
    STATUS: Final = "status"
    INDEX: Final = "index"


class TokensRecord:
    """launch.json's `tokens` (experiments/launch/launcher.py install_token_counter())."""

    FILE: Final = "file"
    ERROR: Final = "error"


class LongestFirst:
    """launch.json's `longest_first` (experiments/launch/launcher.py install_patches())."""

    APPLIED: Final = "applied"
    REASON: Final = "reason"
    FIRST_BATCH: Final = "first_batch"
    FIRST_BATCH_LENGTHS: Final = "first_batch_lengths"
    LONGEST_IN_DATA: Final = "longest_in_data"
    BATCHES: Final = "batches"


class CompileCache:
    """launch.json's `compile_cache` (experiments/launch/launcher.py compile_cache_state())."""

    DIR: Final = "dir"
    FILES_BEFORE: Final = "files_before"
    WARM: Final = "warm"
    ARTIFACTS: Final = "artifacts"              # the compiled-code file the plugin loads before compiling, or None
    ARTIFACTS_BYTES: Final = "artifacts_bytes"


class Tokens:
    """A tokens.jsonl line (the launcher's) or a schedule.jsonl line: one optimizer step's token counts (`ranks`: the
    torchrun job's size, where it has several; the counts are summed over them)."""

    STEP: Final = "step"
    TOKENS: Final = "tokens"
    PADDED_TOKENS: Final = "padded_tokens"
    MICRO_BATCHES: Final = "micro_batches"
    LABEL_TOKENS: Final = "label_tokens"
    SAMPLES: Final = "samples"
    RANKS: Final = "ranks"


class AnchorStep:
    """A steps.jsonl line of a published-workload run (experiments/anchors/tt_run.py, read by
    analysis/parse/anchor_run.py): one optimizer step's wall seconds and tokens (the recipe's own metrics beside
    them, under torchtune's names)."""

    STEP: Final = "step"
    T: Final = "t"
    WALL_S: Final = "wall_s"
    MICRO_BATCHES: Final = "micro_batches"
    TOKENS_PADDED: Final = "tokens_padded"
    TOKENS_REAL: Final = "tokens_real"
    SHAPES: Final = "shapes"
    PEAK_MEMORY_ALLOC: Final = "peak_memory_alloc"  # torchtune's own, GiB since its last log (it resets the peak)


class Anchor:
    """run.json of a published-workload run (experiments/anchors/tt_run.py run(), read by analysis/parse/anchor_run.py):
    the workload and its published figures (workloads.yaml's, by GPU), the setup, times and peak memory. `data` is an
    AnchorData, `profile` a ProfileRecord."""

    WORKLOAD: Final = "workload"
    ANCHOR: Final = "anchor"
    SOURCE_CONFIG: Final = "source_config"
    PUBLISHED: Final = "published"
    PUBLISHED_NOTES: Final = "published_notes"
    LABEL: Final = "label"
    HARNESS: Final = "harness"
    HW: Final = "hw"
    DEVICE: Final = "device"
    STEPS_TOTAL: Final = "steps_total"
    WARMUP_STEPS: Final = "warmup_steps"
    DATA_REPEAT: Final = "data_repeat"
    SETS: Final = "sets"
    VERSIONS: Final = "versions"
    STATUS: Final = "status"
    DATA: Final = "data"
    GPU_NAME: Final = "gpu_name"
    SETUP_S: Final = "setup_s"
    MEMORY_AFTER_SETUP_GIB: Final = "memory_after_setup_gib"
    TRAIN_S: Final = "train_s"
    PEAK_ALLOCATED_GIB: Final = "peak_allocated_gib"
    PEAK_RESERVED_GIB: Final = "peak_reserved_gib"
    PROFILE: Final = "profile"


class AnchorData:
    """An anchor run's run.json `data` (experiments/anchors/tt_run.py data_stats()): the rows' token lengths."""

    ROWS: Final = "rows"
    TOKENS_MEAN: Final = "tokens_mean"
    TOKENS_SD: Final = "tokens_sd"
    TOKENS_MIN: Final = "tokens_min"
    TOKENS_P50: Final = "tokens_p50"
    TOKENS_P90: Final = "tokens_p90"
    TOKENS_MAX: Final = "tokens_max"
    PADDING_BATCH: Final = "padding_batch"
    PADDED_OVER_REAL_ONE_SHUFFLE: Final = "padded_over_real_one_shuffle"


class Gpm:
    """A gpm.jsonl line (experiments/record/gpm.py): one optimizer step's wall seconds and GPU busy shares (%)."""

    STEP: Final = "step"
    WALL_S: Final = "wall_s"
    GRAPHICS_UTIL: Final = "graphics_util"
    SM_UTIL: Final = "sm_util"
    TENSOR_UTIL: Final = "tensor_util"
    DRAM_BW_UTIL: Final = "dram_bw_util"


class Nvml:
    """nvml.csv's columns (experiments/record/gpu.py's Sampler): one row per GPU about once a second."""

    TIME_S: Final = "time_s"
    GPU: Final = "gpu"
    POWER_W: Final = "power_w"
    SM_CLOCK_MHZ: Final = "sm_clock_mhz"
    MEM_CLOCK_MHZ: Final = "mem_clock_mhz"
    TEMP_C: Final = "temp_c"
    UTIL_GPU_PCT: Final = "util_gpu_pct"
    UTIL_MEM_PCT: Final = "util_mem_pct"
    MEM_USED_MIB: Final = "mem_used_mib"
    THROTTLE_REASONS: Final = "throttle_reasons"
    THROTTLE: Final = "throttle"
    ENERGY_J: Final = "energy_j"
    COLUMNS: Final = (TIME_S, GPU, POWER_W, SM_CLOCK_MHZ, MEM_CLOCK_MHZ, TEMP_C, UTIL_GPU_PCT, UTIL_MEM_PCT,
                      MEM_USED_MIB, THROTTLE_REASONS, THROTTLE, ENERGY_J)


class Allreduce:
    """allreduce.json (experiments/record/allreduce.py, read by analysis/parse/bench.py): an all-reduce sweep of an
    interconnect benchmark folder; each of `sizes` is an AllreduceSize."""

    RANKS: Final = "ranks"
    DTYPE: Final = "dtype"
    ITERS: Final = "iters"
    WARMUP: Final = "warmup"
    LABEL: Final = "label"
    NCCL_VERSION: Final = "nccl_version"
    TORCH: Final = "torch"
    NCCL_ENV: Final = "nccl_env"
    FORMULA: Final = "formula"
    FINISHED: Final = "finished"
    SIZES: Final = "sizes"


class AllreduceSize:
    """One message size of allreduce.json's `sizes`."""

    BYTES: Final = "bytes"
    MIB: Final = "mib"
    TIME_US: Final = "time_us"
    ALGBW_GBS: Final = "algbw_gbs"
    BUSBW_GBS: Final = "busbw_gbs"
    FIELDS: Final = (BYTES, MIB, TIME_US, ALGBW_GBS, BUSBW_GBS)


class ResumeCheck:
    """resume_check.json (experiments/run/resume_check.py) and one of its `repeated_steps`."""

    COMMAND: Final = "command"
    RUN_DIR: Final = "run_dir"
    SIGNAL: Final = "signal"
    KILLED_AFTER_STEP: Final = "killed_after_step"
    LEFT_BEHIND: Final = "left_behind"
    LEFT_BEHIND_CHECKED_AFTER_S: Final = "left_behind_checked_after_s"
    WEIGHTS_IN_RESULTS: Final = "weights_in_results"
    SECOND_EXIT: Final = "second_exit"
    STATUS: Final = "status"
    RESUME: Final = "resume"
    REPEATED_STEPS: Final = "repeated_steps"
    FIRST_RESUMED_STEP: Final = "first_resumed_step"
    FIRST_STEP_SINCE_TRAIN_BEGIN_S: Final = "first_step_since_train_begin_s"
    STEP: Final = "step"
    LOSS_BEFORE_KILL: Final = "loss_before_kill"
    LOSS_AFTER_RESUME: Final = "loss_after_resume"


# every class above, in order: a class added to this module is part of the contract (all_keys) without a list to update
FILES: tuple[type, ...] = tuple(c for c in list(globals().values())
                                if isinstance(c, type) and c.__module__ == __name__)


def all_keys() -> set[str]:
    """Every key name of the contract (tests/test_runfolder_contract.py looks for these as literals)."""
    return {v for cls in FILES for v in keys(cls).values()}
