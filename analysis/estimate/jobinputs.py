"""The planner's inputs: a model by name or config.json (its shapes), a committed run's recipe (its args.json and
log), a GPU class list, and the checks that keep each within what a job can be (bad input, one line, otherwise)."""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, TypedDict, cast

from analysis.estimate.workload import longest_micro_batch, run_flags, run_method
from analysis.parse import sidefiles
from analysis.parse.record import LOG_NAME, read_log_record
from experiments.base import hardware, runfiles, runschema, userfiles
from experiments.base.datafiles import read_json_object
from experiments.base.errors import InputError

METHODS = ("lora", "qlora", "full")


class JobArgs(TypedDict, total=False):
    """The job as estimate() takes it (its keyword arguments of those names): the recipe, its data, its GPUs."""

    model: str
    method: str
    max_length: int
    seq_len: int
    mean_len: int
    packed_len: int
    lengths: str
    batch: int
    grad_accum: int
    samples: int
    epochs: int
    gradient_checkpointing: bool
    lora_rank: int
    gpus: int
    parallel: str
    padding_free: bool
    liger: bool
    attn_impl: str
    from_run: str


def resolve_model(model: str) -> hardware.ModelShapes:
    """Shapes of a known model name (models.yaml) or of a local folder / config.json, with its name."""
    path = Path(model)
    config_path = path / "config.json" if path.is_dir() else path
    if config_path.is_file():
        config = userfiles.read_json(config_path)
        problem = hardware.config_problem(config) if isinstance(config, dict) else None
        if problem:
            raise InputError(config_path, problem)
        shapes = hardware.shapes_from_config(config) if isinstance(config, dict) else None
        if shapes is None:
            raise InputError(config_path, "config.json lacks hidden_size, intermediate_size, num_hidden_layers, "
                                          "num_attention_heads or vocab_size")
        named = str(config.get("_name_or_path") or "").rstrip("/")
        folder = (path if path.is_dir() else path.parent).resolve().name
        shapes["name"] = folder if config_path.name == "config.json" or not named else Path(named).name
        return shapes
    shapes = hardware.lookup_model(model)
    if shapes is None:
        raise InputError(None, f"unknown model {model!r}: not in data/models.yaml "
                               f"(known: {', '.join(hardware.known_models())}) and no config.json at that path")
    return shapes


MODEL_CONFIG_NAME = runfiles.MODEL_CONFIG  # the runner's copy of the model's config.json in a run folder


# ms-swift's args.json names of the recipe's fields, newest first (1.x wrote batch_size and model_type)
ARGS_NAMES = {"max_length": ("max_length",), "batch": ("per_device_train_batch_size", "batch_size"),
              "grad_accum": ("gradient_accumulation_steps",), "epochs": ("num_train_epochs",),
              "lora_rank": ("lora_rank",)}
MODEL_NAMES = ("model", "model_id_or_path", "model_type")


def args_from_run(path: str | Path, need_model: bool = True) -> JobArgs:
    """estimate() keyword arguments from a run's args.json (ms-swift's, as `swift sft` wrote it, 1.x to 4.x): model,
    method, max_length, batch, grad_accum, epochs, gradient_checkpointing, lora_rank, padding_free, liger
    (use_liger_kernel); and, from the log beside it where there is one, the epoch's training samples, the longest
    sample (seq_len), the mean (mean_len) and, padding-free, the longest packed row (packed_len: schedule.jsonl or
    tokens.jsonl). The model is the config.json the
    runner copied into the folder when the args' model path is not on this machine. Without NEED_MODEL (--model is
    given) a model the planner does not know is no error. What it cannot use is bad input naming the file and why."""
    path = Path(path)
    args = read_json_object(path)
    if args is None:
        raise InputError(path, "no such args.json")
    if not isinstance(args, dict):
        raise InputError(path, "args.json is not a JSON object")
    out = JobArgs()
    field = next((n for n in MODEL_NAMES if args.get(n)), None)
    model = args.get(field) if field else None
    folder = path.parent
    if need_model and model is None:
        raise InputError(path, f"names no model ({' / '.join(MODEL_NAMES)}): pass --model")
    if model is not None:
        try:
            resolve_model(str(model))
            out["model"] = str(model)
        except InputError:
            if (folder / MODEL_CONFIG_NAME).is_file():
                out["model"] = str(folder / MODEL_CONFIG_NAME)
            elif need_model:
                old = " (ms-swift 1.x names a model type, not a path)" if field == "model_type" else ""
                raise InputError(path, f"model {model!r} ({field}{old}) is not in data/models.yaml and no "
                                       f"{MODEL_CONFIG_NAME} or config.json is at hand: pass --model with its "
                                       "config.json (or a models.yaml name of the same shapes)") from None
    method = run_method(args)
    if method is not None and method not in METHODS:
        raise InputError(path, f"tuner {method!r}: the planner models {', '.join(METHODS)} only")
    if method is not None:
        out["method"] = method
    counts: dict[str, int] = {}  # the recipe's whole numbers, by JobArgs name
    for key, names in ARGS_NAMES.items():
        name = next((n for n in names if args.get(n) is not None), None)
        value = args.get(name) if name else None
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            raise InputError(path, f"{name} {value!r}: the planner takes a positive whole number")
        if value is not None:
            counts[key] = value
    out.update(cast(JobArgs, counts))  # ARGS_NAMES' keys are JobArgs' int fields
    if isinstance(args.get("gradient_checkpointing"), bool):
        out["gradient_checkpointing"] = args["gradient_checkpointing"]
    flags = run_flags(args)
    if isinstance(args.get("attn_impl"), str) and args["attn_impl"]:
        out["attn_impl"] = args["attn_impl"]
    if args.get("padding_free") is not None:
        out["padding_free"] = flags.padding_free
    if args.get("use_liger_kernel") is not None:
        out["liger"] = flags.liger
    if len(folder.parts) >= 3 and (folder / LOG_NAME).is_file():  # results/<hw>/<experiment>/<run>/args.json
        out["from_run"] = "/".join(folder.parts[-3:])
    if (folder / LOG_NAME).is_file():
        rec = read_log_record(folder)
        if rec.train_samples:
            out["samples"] = int(rec.train_samples)
        if rec.train_tokens_max and out.get("max_length"):
            out["seq_len"] = min(int(rec.train_tokens_max), int(out["max_length"]))
        if rec.train_tokens_mean and out.get("seq_len"):
            out["mean_len"] = min(max(int(round(rec.train_tokens_mean)), 1), out["seq_len"])
        if flags.padding_free:  # the longest packed row the epoch holds (schedule.jsonl, else tokens.jsonl)
            side = sidefiles.read(folder)
            rec = dataclasses.replace(rec, args=args, schedule=side.schedule,
                                      tokens_by_step=side.tokens_by_step, padded_by_step=side.padded_by_step)
            packed = longest_micro_batch(rec, whole_epoch=True)
            if packed:
                out["packed_len"] = packed
    return out


# the most each input can plausibly be (runschema's ranges of a run): more is a typo, and 10**400 GPUs made 0 steps
PLAUSIBLE = {"--max-length": 10**8, "--seq-len": 10**8, "--mean-len": 10**8, "--batch": runschema.BATCH,
             "--grad-accum": runschema.BATCH, "--samples": 10**12, "--epochs": 10**6, "--lora-rank": 10**6,
             "--gpus": runschema.GPUS}


def positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InputError(None, f"{name} must be a positive integer, got {runschema.describe_value(value)}")
    if value > PLAUSIBLE.get(name, math.inf):
        raise InputError(None, f"{name} {runschema.describe_value(value)} is beyond any plausible value (at most "
                               f"{PLAUSIBLE[name]:,})")
    return value


def hw_list(hw: str | list[str] | None) -> list[str]:
    if hw is None:
        keys = hardware.shown()
    elif isinstance(hw, str):
        keys = [k.strip() for k in hw.split(",") if k.strip()]
    else:
        keys = list(hw)
    if not keys:
        raise InputError(None, "--hw names no GPU class")
    names, keys = keys, []
    for name in names:  # "4090", "RTX 4090", "H100 SXM", A10: keys, names and aliases of hardware.yaml
        key = hardware.user_key(name)
        keys.append(key)
        spec = hardware.require(key)
        if not spec.memory_gb or not spec.bf16_dense_tflops or not spec.bandwidth_gbs:
            raise InputError(hardware.HARDWARE_FILE, f"{key!r} is not a GPU class with memory, bandwidth and "
                                                     "bf16 peak (nothing to plan on)")
    return list(dict.fromkeys(keys))
