"""ms-swift's logging.jsonl keys, and what differs between its versions, in one place.

The log is ms-swift's (and Hugging Face's) file, not the suite's: its key names are spelled here once, and the
readers (analysis/parse/logs.py, logfacts.py, megatron.py) use the constants. Where versions differ (the step
speed's unit, the accuracy's name), VERSIONS is the one table, newest first; logs.py and logfacts.py ask
it (elapsed(), log_format(), ACC / EVAL_ACC) instead of branching on a version themselves.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

# --- the step counter: "a/b" (3.x, 4.x), a plain integer (1.x, 2.x; the summary), Megatron-SWIFT's "a/b"
STEP_OF_MAX: Final = "global_step/max_steps"
GLOBAL_STEP: Final = "global_step"
STEP: Final = "step"
STEP_KEYS: Final = (GLOBAL_STEP, STEP)            # where a line without STEP_OF_MAX has its step, in this order
ITERATION: Final = "iteration"                   # Megatron-SWIFT's name of STEP_OF_MAX

# --- a training line
LOSS: Final = "loss"
GRAD_NORM: Final = "grad_norm"
EPOCH: Final = "epoch"
MEMORY: Final = "memory(GiB)"

# --- an evaluation line: every key of it starts with EVAL_PREFIX
EVAL_PREFIX: Final = "eval_"
EVAL_LOSS: Final = "eval_loss"
EVAL_RUNTIME: Final = "eval_runtime"
EVAL_SAMPLES_PER_SECOND: Final = "eval_samples_per_second"
EVAL_STEPS_PER_SECOND: Final = "eval_steps_per_second"

# --- speeds and clocks (cumulative since the training started)
SPEED_S_PER_IT: Final = "train_speed(s/it)"      # 4.x: elapsed / steps
SPEED_IT_PER_S: Final = "train_speed(iter/s)"    # 2.x, 3.x: steps / elapsed
ELAPSED_TIME: Final = "elapsed_time"
REMAINING_TIME: Final = "remaining_time"
PERCENTAGE: Final = "percentage"

# --- the end of a finished run: Hugging Face's end-of-training line, then ms-swift's summary line
TRAIN_RUNTIME: Final = "train_runtime"
TOTAL_FLOS: Final = "total_flos"
LOG_HISTORY: Final = "log_history"
MODEL_PARAMETER_INFO: Final = "model_parameter_info"
MODEL_INFO: Final = "model_info"                 # an older name of MODEL_PARAMETER_INFO
LAST_MODEL_CHECKPOINT: Final = "last_model_checkpoint"
TRAIN_DATASET: Final = "train_dataset"
VAL_DATASET: Final = "val_dataset"
SUMMARY_MEMORY: Final = "memory"
SUMMARY_KEYS: Final = frozenset({LOG_HISTORY, MODEL_PARAMETER_INFO, LAST_MODEL_CHECKPOINT, TRAIN_DATASET,
                                 SUMMARY_MEMORY})

# ms-swift's clock strings on a training line: nothing reads them there (a line's time comes from its speed; an eval
# line's elapsed_time is kept), and they hold a fifth of a 200 MB log's memory: not kept in its row.
TRAIN_CLOCK_KEYS: Final = frozenset({ELAPSED_TIME, REMAINING_TIME})
# Keys that differ between the duplicated lines of multi-node runs (each node master writes its own speed and times
# its own evaluation).
VOLATILE_KEYS: Final = frozenset({SPEED_S_PER_IT, SPEED_IT_PER_S, ELAPSED_TIME, REMAINING_TIME, PERCENTAGE,
                                  EVAL_RUNTIME, EVAL_SAMPLES_PER_SECOND, EVAL_STEPS_PER_SECOND})


@dataclass(frozen=True)
class Version:
    """One shape of ms-swift's log line: its speed and accuracy keys (3.x and 4.x count the step in STEP_OF_MAX,
    1.x and 2.x in GLOBAL_STEP: the reader looks for both, STEP_OF_MAX first)."""

    format: str                  # RunLog.log_format's name of it
    swift: str                   # the ms-swift versions that write it
    speed_key: str | None        # its cumulative speed (None: 1.x logs none)
    seconds_per_step: bool       # the speed is elapsed / steps (else steps / elapsed)
    acc_key: str | None          # its token accuracy on a training line (None: not logged)


VERSIONS: Final = (
    Version("v4", "4.x", SPEED_S_PER_IT, True, "token_acc"),
    Version("v3", "3.x", SPEED_IT_PER_S, False, "token_acc"),
    Version("v3", "2.x", SPEED_IT_PER_S, False, "acc"),
    Version("v3", "1.x", None, False, "acc"),
)
_BY_SPEED: Final = {v.speed_key: v for v in reversed(VERSIONS) if v.speed_key}  # newest wins a shared key


def _unique(keys: Iterable[str | None]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(k for k in keys if k))


SPEED_KEYS: Final = _unique(v.speed_key for v in VERSIONS)           # the order a line's speed is looked for
ACC: Final = _unique(v.acc_key for v in VERSIONS)                    # token accuracy, newest name first
EVAL_ACC: Final = tuple(EVAL_PREFIX + k for k in ACC)


def elapsed(speed_key: str, speed: float, steps: int) -> float:
    """Seconds for STEPS steps at a cumulative SPEED given under SPEED_KEY, as that version counts it."""
    return speed * steps if _BY_SPEED[speed_key].seconds_per_step else steps / speed


def log_format(lines: Iterable[Mapping]) -> str:
    """The format of a log's LINES: the newest version whose speed key one of them has ('v3' when none has one)."""
    for v in VERSIONS:
        if v.speed_key is not None and v.seconds_per_step and any(v.speed_key in d for d in lines):
            return v.format
    return "v3"
