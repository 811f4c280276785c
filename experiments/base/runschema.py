"""The schema of every run-folder file's fields: type and plausible range, checked where a file is read.

A run folder's JSON files are written by the runner, the launcher and ms-swift, but trees are merged from other
machines and edited by hand: a field of the wrong type (a string `key`, a list `packages`) would stop `tables` with
a traceback, and one of the right type but an impossible value (a negative batch, 1e15 tokens in a step, `"no"` for
`dummy_weights`) would reach a table as a number. Each file's schema is a small declarative tree of the types below;
runfiles.check(path, data) raises InputError naming the file (and line) and the field, so the reader skips the folder
(exit 3) with one line. Absent fields and nulls pass (files of older runs lack many); unknown fields pass (newer
writers add them). The ranges are wide: they refuse what no run can be, not what is unusual.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


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

_PROBE = Obj({"value": Num(0, SECONDS * 1e9)})

RUN_JSON = Obj({
    "status": Str(), "hw": Str(), "experiment": Str(), "reason": Str(),
    "key": Obj({
        "experiment": Str(), "recipe": Str(), "model": Str(), "data": Str(), "parallel": Str(),
        "max_steps": Int(1, STEPS), "gpus": Int(1, GPUS), "overrides": Obj(), "env": Obj(values=Str()),
        "launcher": Obj({
            "mem_cap_gib": Num(0.01, GIB), "stop_after": Int(1, STEPS), "profile_steps": Int(0, STEPS),
            "profile_skip": Int(0, STEPS), "profile_warmup": Int(0, STEPS), "pad_to": Int(1, 10**8),
            "env": Obj(), "quick": Obj(), "liger_config": Obj(), "sdp_backends": Arr(Str()),
        }),
    }),
    "max_steps": Int(1, STEPS), "gpus": Int(1, GPUS), "parallel": Str(),
    "dummy_weights": Bool(), "offline_data": Bool(), "forced_hw": Bool(),
    # the importer records where the log came from ({"log_sha256": ..., ...}); older imports wrote true
    "imported": Either((Bool(), Obj({"log_sha256": Str()}))),
    "resumes": Arr(Obj({"log_lines_before": Int(0, 10**12, required=True), "from_step": Int(0, STEPS, required=True)})),
    "wall_s": Num(0, SECONDS), "command": Arr(), "notes": Arr(), "swift_version": Str(),
    # an interleaved set's run (experiments/run/rounds.py): its place, and the host probe right after it
    "round": Obj({"set": Str(required=True), "round": Int(1, 10**6, required=True), "of": Int(1, 10**6),
                  "slot": Int(1, 10**6), "item": Str()}),
    "probe_after": Obj({"python_loop": _PROBE, "dispatch": _PROBE, "lora_step": _PROBE}),
    "harness": Str(),
})

ENV_JSON = Obj({
    "hw": Str(), "gpu_name": Str(), "gpu_count": Int(0, GPUS), "gpu_memory_mib": Int(0, GIB * 1024),
    "gpus": Arr(Obj()), "driver": Str(), "cpu_model": Str(), "cpu_count": Int(1, 10**6), "ram_gib": Num(0, GIB * 1024),
    "packages": Obj(values=Str()), "dummy_weights": Bool(), "topology": Str(), "nvlinks": Arr(),
    "gpu_check": Obj({"gpu_name": Str(), "matched_hw": Str(), "forced": Bool()}),
    "host": Obj({"fingerprint": Obj({"host_id": Str(), "gpu_count_host": Int(0, GPUS)}),
                 "probe": Obj({"python_loop": _PROBE, "dispatch": _PROBE, "lora_step": _PROBE})}),
})

ARGS_JSON = Obj({
    "per_device_train_batch_size": Int(1, BATCH), "gradient_accumulation_steps": Int(1, BATCH),
    "world_size": Int(1, GPUS), "global_world_size": Int(1, GPUS),
    "max_steps": Int(-1, STEPS), "max_length": Int(1, 10**8), "num_train_epochs": Num(0, 10**6),
    "eval_steps": Num(1e-9, STEPS), "save_steps": Num(1e-9, STEPS), "logging_steps": Num(1e-9, STEPS),
    "gradient_checkpointing": Bool(), "resume_from_checkpoint": Str(),
    "deepspeed": Either((Str(), Obj({"zero_optimization": Obj({"stage": Int(0, 3)})}))),
})

PROFILE_JSON = Obj({
    "profile_steps": Int(0, STEPS), "profile_skip": Int(0, STEPS),
    "median_wall_s": Num(0, SECONDS), "median_gpu_busy_frac": Num(0, 1.5),
    "steps": Arr(Obj({"step": Int(0, STEPS, required=True), "wall_s": Num(0, SECONDS),
                      "gpu_busy_s": Num(0, SECONDS), "gpu_busy_frac": Num(0, 1.5)}, required=True)),
})

TOKENS_LINE = Obj({"step": Int(0, STEPS, required=True), "tokens": Int(0, STEP_TOKENS, required=True),
                   "padded_tokens": Int(0, STEP_TOKENS), "micro_batches": Int(0, 10**8),
                   "label_tokens": Int(0, STEP_TOKENS)})

# logging.jsonl: the fields of a line the suite turns into numbers (logs.py checks them line by line)
LOG_SPEED = Num(0, SECONDS)            # train_speed(s/it) or (iter/s): no step takes longer, none runs 1e8 per s
DATASET_STAT = Num(0, 10**12)          # the summary's train_dataset / val_dataset token statistics
