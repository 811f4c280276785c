"""The schema of every run-folder file's fields: type and plausible range, checked where a file is read.

A run folder's JSON files are written by the runner, the launcher and ms-swift, but trees are merged from other
machines and edited by hand: a field of the wrong type (a string `key`, a list `packages`) would stop `tables` with
a traceback, and one of the right type but an impossible value (a negative batch, 1e15 tokens in a step, `"no"` for
`dummy_weights`) would reach a table as a number. Each file's schema is a small declarative tree of the types below;
runfiles.check(path, data) raises InputError naming the file (and line) and the field, so the reader skips the folder
(exit 3) with one line. Absent fields and nulls pass (files of older runs lack many); unknown fields pass (newer
writers add them). The ranges are wide: they refuse what no run can be, not what is unusual. The field names are
experiments/base/runfolder.py's constants, the ones the writers and readers use.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from experiments.base.runfolder import (
    Args,
    Env,
    Fingerprint,
    GpuCheck,
    Host,
    Launcher,
    Probe,
    Profile,
    ProfileWindow,
    Resume,
    Round,
    Run,
    RunKey,
    Tokens,
)


class Invalid(Exception):
    """A field against its schema: the dotted field name and what is wrong with it."""

    def __init__(self, where: str, message: str):
        self.where, self.message = where, message
        super().__init__(f"{where}: {message}" if where else message)


def describe_value(value: Any) -> str:
    """A field's value in an error: its kind, and a number or a short string as it is."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, str):
        return f"a string ({value[:30]!r})"
    if isinstance(value, (int, float)):
        return f"{value:g}" if isinstance(value, float) or abs(value) < 10**16 \
            else f"a {len(str(abs(value)))}-digit number"
    if isinstance(value, dict):
        return "an object"
    return "a list" if isinstance(value, list) else type(value).__name__


@dataclass(frozen=True)
class Num:
    """A number in [lo, hi] (finite); INTEGER: a whole number (an int, or a float such as 16.0)."""

    lo: float = -math.inf
    hi: float = math.inf
    integer: bool = False
    required: bool = False

    def check(self, value: Any, where: str) -> None:
        kind = "a whole number" if self.integer else "a number"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Invalid(where, f"{describe_value(value)}, not {kind}")
        if isinstance(value, float) and not math.isfinite(value):
            raise Invalid(where, f"{value}, not a finite number")
        if self.integer and isinstance(value, float) and not value.is_integer():
            raise Invalid(where, f"{value:g}, not a whole number")
        if not self.lo <= value <= self.hi:
            raise Invalid(where, f"{describe_value(value)}, outside the plausible range {self.lo:g} to {self.hi:g}")


def Int(lo: float = -math.inf, hi: float = math.inf, required: bool = False) -> Num:
    return Num(lo, hi, True, required)


@dataclass(frozen=True)
class Str:
    required: bool = False

    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, str):
            raise Invalid(where, f"{describe_value(value)}, not a string")


@dataclass(frozen=True)
class Bool:
    required: bool = False

    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, bool):
            raise Invalid(where, f"{describe_value(value)}, not true/false")


@dataclass(frozen=True)
class Arr:
    item: Any = None
    required: bool = False

    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, list):
            raise Invalid(where, f"{describe_value(value)}, not a list")
        if self.item is not None:
            for i, v in enumerate(value):
                if v is not None or self.item.required:
                    self.item.check(v, f"{where}[{i}]")


@dataclass(frozen=True)
class Obj:
    """An object whose named FIELDS follow their schemas (others pass); VALUES: the schema of every value (a map)."""

    fields: dict = field(default_factory=dict)
    values: Any = None
    required: bool = False

    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise Invalid(where, f"{describe_value(value)}, not an object")
        for name, schema in self.fields.items():
            sub = f"{where}.{name}" if where else name
            if name not in value or value[name] is None:
                if schema.required:
                    raise Invalid(sub, "missing" if name not in value else "null")
                continue
            schema.check(value[name], sub)
        if self.values is not None:
            for k, v in value.items():
                if v is not None:
                    self.values.check(v, f"{where}.{k}" if where else str(k))


@dataclass(frozen=True)
class Either:
    """One of several schemas (args.json's `deepspeed`: a config object or a preset's name)."""

    options: tuple
    required: bool = False

    def check(self, value: Any, where: str) -> None:
        errors = []
        for option in self.options:
            try:
                option.check(value, where)
                return
            except Invalid as exc:
                errors.append(exc)
        deeper = [e for e in errors if e.where != where]  # the option of the value's type failed inside it
        if deeper:
            raise deeper[0]
        raise Invalid(where, f"{describe_value(value)}, not "
                      + " or ".join(e.message.split(", not ")[-1] for e in errors))


# --- plausible ranges: wide, so that only what no run can be is refused
STEPS = 10**9                # optimizer steps of one run
GPUS = 100_000               # GPUs of one job
BATCH = 1_000_000            # per-device batch, accumulation steps
STEP_TOKENS = 10**9          # tokens of one optimizer step (a 1M-token batch is large today)
SECONDS = 10**8              # seconds of anything one run measures (three years)
GIB = 10**6                  # memory of one GPU or host

_PROBE = Obj({Probe.VALUE: Num(0, SECONDS * 1e9)})
_PROBES = Obj({part: _PROBE for part in Probe.PARTS})

RUN_JSON = Obj({
    Run.STATUS: Str(), Run.HW: Str(), Run.EXPERIMENT: Str(), Run.REASON: Str(),
    Run.KEY: Obj({
        RunKey.EXPERIMENT: Str(), RunKey.RECIPE: Str(), RunKey.MODEL: Str(), RunKey.DATA: Str(),
        RunKey.PARALLEL: Str(), RunKey.MAX_STEPS: Int(1, STEPS), RunKey.GPUS: Int(1, GPUS), RunKey.OVERRIDES: Obj(),
        RunKey.ENV: Obj(values=Str()),
        RunKey.LAUNCHER: Obj({
            Launcher.MEM_CAP_GIB: Num(0.01, GIB), Launcher.STOP_AFTER: Int(1, STEPS),
            Launcher.PROFILE_STEPS: Int(0, STEPS), Launcher.PROFILE_SKIP: Int(0, STEPS),
            Launcher.PROFILE_WARMUP: Int(0, STEPS), Launcher.PAD_TO: Int(1, 10**8), Launcher.ENV: Obj(),
            Launcher.QUICK: Obj(), Launcher.LIGER_CONFIG: Obj(), Launcher.SDP_BACKENDS: Arr(Str()),
        }),
    }),
    Run.MAX_STEPS: Int(1, STEPS), Run.GPUS: Int(1, GPUS), Run.PARALLEL: Str(),
    Run.DUMMY_WEIGHTS: Bool(), Run.OFFLINE_DATA: Bool(), Run.FORCED_HW: Bool(),
    # the importer records where the log came from ({"log_sha256": ..., ...}); older imports wrote true
    Run.IMPORTED: Either((Bool(), Obj({"log_sha256": Str()}))),
    Run.RESUMES: Arr(Obj({Resume.LOG_LINES_BEFORE: Int(0, 10**12, required=True),
                          Resume.FROM_STEP: Int(0, STEPS, required=True)})),
    Run.WALL_S: Num(0, SECONDS), Run.COMMAND: Arr(), Run.NOTES: Arr(), Run.SWIFT_VERSION: Str(),
    # an interleaved set's run (experiments/run/rounds.py): its place, and the host probe right after it
    Run.ROUND: Obj({Round.SET: Str(required=True), Round.ROUND: Int(1, 10**6, required=True),
                    Round.OF: Int(1, 10**6), Round.SLOT: Int(1, 10**6), Round.ITEM: Str()}),
    Run.PROBE_AFTER: _PROBES,
    Run.HARNESS: Str(),
})

ENV_JSON = Obj({
    Env.HW: Str(), Env.GPU_NAME: Str(), Env.GPU_COUNT: Int(0, GPUS), Env.GPU_MEMORY_MIB: Int(0, GIB * 1024),
    Env.GPUS: Arr(Obj()), Env.DRIVER: Str(), Env.CPU_MODEL: Str(), Env.CPU_COUNT: Int(1, 10**6),
    Env.RAM_GIB: Num(0, GIB * 1024), Env.PACKAGES: Obj(values=Str()), Env.DUMMY_WEIGHTS: Bool(),
    Env.TOPOLOGY: Str(), Env.NVLINKS: Arr(),
    Env.GPU_CHECK: Obj({GpuCheck.GPU_NAME: Str(), GpuCheck.MATCHED_HW: Str(), GpuCheck.FORCED: Bool()}),
    Env.HOST: Obj({Host.FINGERPRINT: Obj({Fingerprint.HOST_ID: Str(), Fingerprint.GPU_COUNT_HOST: Int(0, GPUS)}),
                   Host.PROBE: _PROBES}),
})

ARGS_JSON = Obj({
    Args.PER_DEVICE_TRAIN_BATCH_SIZE: Int(1, BATCH), Args.GRADIENT_ACCUMULATION_STEPS: Int(1, BATCH),
    Args.WORLD_SIZE: Int(1, GPUS), Args.GLOBAL_WORLD_SIZE: Int(1, GPUS),
    Args.MAX_STEPS: Int(-1, STEPS), Args.MAX_LENGTH: Int(1, 10**8), Args.NUM_TRAIN_EPOCHS: Num(0, 10**6),
    Args.EVAL_STEPS: Num(1e-9, STEPS), Args.SAVE_STEPS: Num(1e-9, STEPS), Args.LOGGING_STEPS: Num(1e-9, STEPS),
    Args.GRADIENT_CHECKPOINTING: Bool(), Args.RESUME_FROM_CHECKPOINT: Str(),
    Args.DEEPSPEED: Either((Str(), Obj({"zero_optimization": Obj({"stage": Int(0, 3)})}))),
})

PROFILE_JSON = Obj({
    Profile.PROFILE_STEPS: Int(0, STEPS), Profile.PROFILE_SKIP: Int(0, STEPS),
    Profile.MEDIAN_WALL_S: Num(0, SECONDS), Profile.MEDIAN_GPU_BUSY_FRAC: Num(0, 1.5),
    Profile.STEPS: Arr(Obj({ProfileWindow.STEP: Int(0, STEPS, required=True), ProfileWindow.WALL_S: Num(0, SECONDS),
                            ProfileWindow.GPU_BUSY_S: Num(0, SECONDS), ProfileWindow.GPU_BUSY_FRAC: Num(0, 1.5)},
                           required=True)),
})

TOKENS_LINE = Obj({Tokens.STEP: Int(0, STEPS, required=True), Tokens.TOKENS: Int(0, STEP_TOKENS, required=True),
                   Tokens.PADDED_TOKENS: Int(0, STEP_TOKENS), Tokens.MICRO_BATCHES: Int(0, 10**8),
                   Tokens.LABEL_TOKENS: Int(0, STEP_TOKENS)})

# logging.jsonl: the fields of a line the suite turns into numbers (logs.py checks them line by line)
LOG_SPEED = Num(0, SECONDS)            # train_speed(s/it) or (iter/s): no step takes longer, none runs 1e8 per s
DATASET_STAT = Num(0, 10**12)          # the summary's train_dataset / val_dataset token statistics
