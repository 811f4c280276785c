"""The run-folder contract, typed: the key names of every JSON object (and JSON line) a run folder holds, once.

Each class below is one file's (or one nested object's) keys as `Final` constants. The writers (experiments/record,
experiments/run) build their dicts with them (`{Env.GPU_NAME: name}`), the schema that checks a file where it is
read (experiments/base/runschema.py) names its fields with them, and the readers (analysis/parse) index with them
(`env.get(Env.GPU_NAME)`); mypy treats a Final string as its literal, so a reader's TypedDict
(analysis/parse/runfile_rows.py) still checks every key it reads. No key name is spelled as a string literal on
both sides: tests/test_runfolder_contract.py scans the writers and readers for one, and checks that each reader's
TypedDict names only keys of its file's class. The file names themselves are experiments/base/runfiles.py's.
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


class Profile:
    """profile.json (experiments/launch/profiler.py) and one of its `steps`."""

    PROFILE_STEPS: Final = "profile_steps"
    PROFILE_SKIP: Final = "profile_skip"
    MEDIAN_WALL_S: Final = "median_wall_s"
    MEDIAN_GPU_BUSY_FRAC: Final = "median_gpu_busy_frac"
    STEPS: Final = "steps"
    STEP: Final = "step"
    WALL_S: Final = "wall_s"
    GPU_BUSY_S: Final = "gpu_busy_s"
    GPU_BUSY_FRAC: Final = "gpu_busy_frac"


class Tokens:
    """A tokens.jsonl line (the launcher's) or a schedule.jsonl line: one optimizer step's token counts."""

    STEP: Final = "step"
    TOKENS: Final = "tokens"
    PADDED_TOKENS: Final = "padded_tokens"
    MICRO_BATCHES: Final = "micro_batches"
    LABEL_TOKENS: Final = "label_tokens"
    SAMPLES: Final = "samples"


class AnchorStep:
    """A steps.jsonl line of a published-workload run (experiments/anchors/tt_run.py, read by
    analysis/parse/anchor_run.py): one optimizer step's wall seconds and tokens."""

    STEP: Final = "step"
    WALL_S: Final = "wall_s"
    TOKENS_PADDED: Final = "tokens_padded"
    TOKENS_REAL: Final = "tokens_real"


class Gpm:
    """A gpm.jsonl line (experiments/record/gpm.py): one optimizer step's wall seconds and GPU busy shares (%)."""

    STEP: Final = "step"
    WALL_S: Final = "wall_s"
    GRAPHICS_UTIL: Final = "graphics_util"
    SM_UTIL: Final = "sm_util"
    TENSOR_UTIL: Final = "tensor_util"
    DRAM_BW_UTIL: Final = "dram_bw_util"


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


FILES: tuple[type, ...] = (Run, RunKey, Launcher, Resume, Round, Env, GpuCheck, Host, Fingerprint, Probe, Args,
                           Profile, Tokens, Gpm, ResumeCheck)


def all_keys() -> set[str]:
    """Every key name of the contract (tests/test_runfolder_contract.py looks for these as literals)."""
    return {v for cls in FILES for v in keys(cls).values()}
