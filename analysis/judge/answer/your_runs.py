"""A user's own runs (imported or made under their own experiment names): which matrix recipe each is nearest to and
which of the recipe flags differ, so `swiftbench tables` and the report can show them beside the matrix instead of
passing over them.

Nearest: the matrix experiment whose flags (experiments/recipes/recipes.yaml, spelled for the run's ms-swift) differ
from the run's args.json in the fewest of COMPARED flags; a flag the recipe leaves unset is held against ms-swift's
default where the committed snapshot of ms-swift (data/swift_sft.json) or DEFAULTS knows it.
"""
from __future__ import annotations

from dataclasses import dataclass

from analysis.parse.record import RunRecord
from analysis.parse.results import known_experiments
from experiments.recipes import recipes

# the flags that make the matrix's recipes differ, and the model's identity
COMPARED = ("model", "tuner_type", "torch_dtype", "per_device_train_batch_size", "gradient_accumulation_steps",
            "max_length", "lora_rank", "lora_alpha", "learning_rate", "padding_free", "attn_impl",
            "gradient_checkpointing", "use_liger_kernel", "num_train_epochs")
# ms-swift 4.6.0's defaults for the compared flags a recipe may leave unset
DEFAULTS = {"padding_free": False, "attn_impl": None, "gradient_checkpointing": True, "use_liger_kernel": False}


@dataclass(frozen=True)
class YourRun:
    run: str
    hw: str | None
    experiment: str | None
    path: str
    nearest: str | None
    differs: tuple[str, ...]  # "flag: yours X, recipe Y"


def _norm(flag: str, value):
    if value is None:
        return None
    if flag == "model":
        return str(value).rstrip("/").rsplit("/", 1)[-1].lower()
    if isinstance(value, bool):
        return value
    text = str(value).strip()
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        number = float(text)
    except ValueError:
        return text
    return int(number) if number.is_integer() else number


def _differences(args: dict, flags: dict) -> list[str]:
    out = []
    for flag in COMPARED:
        mine = args.get(flag, args.get("train_type") if flag == "tuner_type" else None)
        want = flags.get(flag, DEFAULTS.get(flag))
        if mine is None and flag not in args:
            continue  # the run's args.json does not say
        if _norm(flag, mine) != _norm(flag, want):
            out.append(f"{flag}: yours {mine}, recipe {want}")
    return out


def nearest_recipe(rec: RunRecord) -> tuple[str | None, tuple[str, ...]]:
    """(the nearest matrix experiment, its differing flags) for REC's args.json; (None, ()) without one."""
    args = rec.args or {}
    if not args:
        return None, ()
    version = rec.swift_version or recipes.MEASURED_SWIFT
    best: tuple[str | None, list[str]] = (None, [])
    for name in recipes.experiments():
        flags, _ = recipes.command_flags(name, version)
        diff = _differences(args, flags)
        if best[0] is None or len(diff) < len(best[1]):
            best = (name, diff)
    return best[0], tuple(best[1])


def your_runs(records: list[RunRecord]) -> list[YourRun]:
    """Every run whose experiment is none of the matrix's or the claims audit's, with its nearest recipe."""
    known = known_experiments()
    out = []
    for rec in sorted(records, key=lambda r: (str(r.hw), str(r.experiment), r.run)):
        if rec.experiment in known:
            continue
        nearest, differs = nearest_recipe(rec)
        out.append(YourRun(rec.run, rec.hw, rec.experiment, str(rec.path), nearest, differs))
    return out
