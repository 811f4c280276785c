"""The planner: will a fine-tune fit on a GPU class, how long will it take, what will it cost, and what to change.

    swiftbench plan --model Qwen2.5-7B-Instruct|config.json --method lora --max-length 2048 --batch 1
        --grad-accum 16 [--padding-free true] [--liger true] [--lengths FILE | --mean-len 128 --seq-len 593]
        --samples 1500 --epochs 1 [--hw a10,h200] [--prices prices.yaml] [--json]

Memory (workload.py; T = the micro-batch's tokens: padded, batch x the longest sample; padding-free, the longest
packed row):
    static  = weights + adapters + gradients + AdamW states          (bytes per parameter: planner.yaml)
    stored  = T x (layers x 2h with checkpointing, else every layer's saved tensors) + final norm (+ Liger's 2h)
    working = T x max(the loss's 12 V logits, or Liger's chunk; the recomputed layer with checkpointing)
    peak    = static + k_stored x stored + k_working x working       (what ms-swift logs: max_memory_reserved)
    needs   = static + (1 + tight_fragmentation) x (stored + working) + CUDA context
    fit     = yes: needs <= the card's GiB;  no: static + live + CUDA context does not;  tight: in between.
Time per optimizer step (docs/time-model.md): measured where results/ has the recipe with the same data on that
class; else the recipe's committed H200 profile carried over (transfer.py); else an H200 step scaled from the
reference profiles (scaled.py); qlora and full: the roofline. Each modelled time carries its band. A class the job
does not fit gets no time or cost but the changes that would make it fit (suggestions). Cost: the built-in price
table (data/prices.yaml) unless another is given. Every constant, with its kind, is in
data/planner.yaml and time_model.yaml.

Stays whole: the job's inputs (model, data, prices, classes), the time chosen per class, the cost and the suggestions
are one estimate() whose rows read each other's values; the arithmetic under them is in workload.py, the time models
in transfer.py and scaled.py, the lengths in lengths.py.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.estimate import scaled, transfer
from analysis.estimate.lengths import Lengths, batch_stats, job_lengths
from analysis.estimate.transfer import ProfiledStep
from analysis.estimate.workload import GIB as GIB
from analysis.estimate.workload import PARALLEL_LAYOUTS as PARALLEL_LAYOUTS
from analysis.estimate.workload import activation_bytes_per_token as activation_bytes_per_token
from analysis.estimate.workload import cache_factors as cache_factors
from analysis.estimate.workload import capacity_gib as capacity_gib
from analysis.estimate.workload import constant_kinds as constant_kinds
from analysis.estimate.workload import constants as constants
from analysis.estimate.workload import fit_verdict as fit_verdict
from analysis.estimate.workload import flops_per_token as flops_per_token
from analysis.estimate.workload import is_flash, longest_micro_batch
from analysis.estimate.workload import largest_batch as largest_batch
from analysis.estimate.workload import memory as memory
from analysis.estimate.workload import param_counts as param_counts
from analysis.estimate.workload import per_gpu_memory as per_gpu_memory
from analysis.estimate.workload import run_flags as run_flags
from analysis.estimate.workload import run_method as run_method
from analysis.measure.steps import step_time
from analysis.parse import sidefiles
from analysis.parse.record import LOG_NAME, RunRecord, read_log_record
from analysis.parse.results import collect
from experiments.base import hardware, runfiles, runschema, userfiles
from experiments.base.datafiles import read_json_object, read_yaml
from experiments.base.errors import InputError

METHODS = ("lora", "qlora", "full")
VALIDATED_METHODS = ("lora",)  # methods with committed measurements to check the memory model against


# --------------------------------------------------------------------------------------------- constants


# ------------------------------------------------------------------------------------------------ inputs


def resolve_model(model: str) -> dict:
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


def args_from_run(path: str | Path, need_model: bool = True) -> dict[str, Any]:
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
    out: dict[str, Any] = {}
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
    for key, names in ARGS_NAMES.items():
        name = next((n for n in names if args.get(n) is not None), None)
        value = args.get(name) if name else None
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            raise InputError(path, f"{name} {value!r}: the planner takes a positive whole number")
        if value is not None:
            out[key] = value
    if isinstance(args.get("gradient_checkpointing"), bool):
        out["gradient_checkpointing"] = args["gradient_checkpointing"]
    flags = run_flags(args)
    if isinstance(args.get("attn_impl"), str) and args["attn_impl"]:
        out["attn_impl"] = args["attn_impl"]
    if args.get("padding_free") is not None:
        out["padding_free"] = flags["padding_free"]
    if args.get("use_liger_kernel") is not None:
        out["liger"] = flags["liger"]
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
        if flags["padding_free"]:  # the longest packed row the epoch holds (schedule.jsonl, else tokens.jsonl)
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


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InputError(None, f"{name} must be a positive integer, got {runschema.describe_value(value)}")
    if value > PLAUSIBLE.get(name, math.inf):
        raise InputError(None, f"{name} {runschema.describe_value(value)} is beyond any plausible value (at most "
                               f"{PLAUSIBLE[name]:,})")
    return value


def _hw_list(hw: str | list[str] | None) -> list[str]:
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
        key = hardware.resolve(name)
        if key is None:
            raise InputError(hardware.HARDWARE_FILE, f"unknown hardware {name!r} (known: {', '.join(hardware.table())}"
                                                     "; or a name or alias of one)")
        keys.append(key)
        spec = hardware.require(key)
        if not spec.get("memory_gb") or not spec.get("bf16_dense_tflops") or not spec.get("bandwidth_gbs"):
            raise InputError(hardware.HARDWARE_FILE, f"{key!r} is not a GPU class with memory, bandwidth and "
                                                     "bf16 peak (nothing to plan on)")
    return list(dict.fromkeys(keys))


CURRENCY_KEY = "currency"
DEFAULT_PRICES = hardware.DATA / "prices.yaml"  # the one price table tables, report and plan use unless given another


def read_prices(path: str | Path) -> dict[str, float]:
    """A price table: YAML mapping of hardware key -> price per GPU-hour, and optionally `currency: EUR` (the unit the
    cost is printed in; without it the cost is in the file's own, unnamed currency). Keys are case-insensitive."""
    return _price_table(path)[0]


def price_currency(path: str | Path | None) -> str | None:
    """The `currency:` of a price table, None when it names none (or there is no table)."""
    return _price_table(path)[1] if path is not None else None


def _price_table(path: str | Path) -> tuple[dict[str, float], str | None]:
    path = Path(path)
    data = read_yaml(path, "price table")
    if not isinstance(data, dict) or not data:
        raise InputError(path, "a price table is a YAML mapping of hardware key to price per GPU-hour, "
                               "e.g. 'h100: 2.5' (and optionally 'currency: EUR')")
    currency = data.get(CURRENCY_KEY)
    if currency is not None and (not isinstance(currency, str) or not currency.strip()):
        raise InputError(path, f"currency must be a name such as EUR or USD, got {currency!r}")
    prices = {}
    for key, value in data.items():
        if key == CURRENCY_KEY:
            continue
        key = str(key).lower()
        if hardware.get(str(key)) is None:
            raise InputError(path, f"unknown hardware {key!r} (known: {', '.join(hardware.table())})")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise InputError(path, f"price of {key!r} must be a non-negative number per GPU-hour, got {value!r}")
        prices[str(key)] = float(value)
    if not prices:
        raise InputError(path, "the price table names no GPU class (e.g. 'h100: 2.5')")
    return prices, currency.strip() if currency else None


# ------------------------------------------------------------------------------------------------ memory


# -------------------------------------------------------------------------------------------------- time


def roofline_micro_step(spec: dict, shapes: dict, method: str, tokens: float, gradient_checkpointing: bool,
                        lora_rank: int, c: dict | None = None, weights_bytes: float | None = None) -> dict:
    """Seconds of one micro-step: max(compute, weight reads) + host overhead."""
    c = c or constants()
    fpt = flops_per_token(shapes, method, gradient_checkpointing, lora_rank)
    if weights_bytes is None:
        weights_bytes = memory(shapes, method, 1, 1, gradient_checkpointing, lora_rank, c)["weights_gib"] * GIB
    passes = c["time.weight_passes"]["gradient_checkpointing" if gradient_checkpointing else "no_checkpointing"]
    compute = fpt * tokens / (spec["bf16_dense_tflops"] * 1e12 * c["time.achievable_fraction"])
    reads = weights_bytes * passes / (spec["bandwidth_gbs"] * 1e9)
    host = c["time.host_overhead_s"]
    return {"compute_s": compute, "weight_reads_s": reads, "host_overhead_s": host,
            "micro_step_s": max(compute, reads) + host, "bound": "compute" if compute >= reads else "memory",
            "flops_per_token": fpt}


def optimizer_step_s(spec: dict, method: str, trainable: int, c: dict | None = None) -> float:
    c = c or constants()
    return trainable * c["time.optimizer_bytes_per_param"][method] / (spec["bandwidth_gbs"] * 1e9)


# ---------------------------------------------------------------------------------------- measured runs


def _model_name(rec: RunRecord) -> str | None:
    return Path(str(rec.model).rstrip("/")).name.lower() if rec.model else None


def run_tokens_per_sample(rec: RunRecord, shapes: dict) -> float | None:
    """Tokens the GPU processed per sample in a run, padding included, from Hugging Face's total_flos
    (= 6 x input_ids.numel() x parameters without embeddings, summed over the training steps)."""
    flos, steps, sps = rec.total_flos, rec.global_steps, rec.samples_per_step
    lora = hardware.lora_params(shapes, {"lora_rank": (rec.args or {}).get("lora_rank"),
                                         "target_modules": "all-linear"})
    if not flos or not steps or not sps:
        return None
    n_hf = hardware.total_params(shapes) + (lora or 0) - shapes["hidden_size"] * shapes["vocab_size"]
    samples = min(steps * sps, rec.train_samples or steps * sps)
    return flos / (6 * n_hf) / samples


def _matching_runs(records: list[RunRecord], hw: str | None, model_name: str, method: str, batch: int,
                   grad_accum: int, max_length: int, gradient_checkpointing: bool, lora_rank: int,
                   padding_free: bool = False, liger: bool = False, attn_impl: str | None = None) -> list[RunRecord]:
    """Committed runs of this recipe (model, method, rank, batch, grad-accum, max-length, checkpointing,
    padding-free, Liger; one GPU, eager SDPA attention, no length grouping) with a steady median step."""
    out = []
    for r in records:
        if not r.ok or (hw is not None and r.hw != hw) or step_time(r).median is None:
            continue
        if (r.per_device_batch, r.grad_accum, r.max_length, r.gradient_checkpointing) \
                != (batch, grad_accum, max_length, gradient_checkpointing):
            continue
        if (r.world_size or 1) != 1 or _model_name(r) != model_name.lower():
            continue
        args = r.args or {}
        if run_method(args) != method or (method != "full" and args.get("lora_rank") != lora_rank):
            continue
        flags = run_flags(args)
        if (flags["padding_free"], flags["liger"]) != (padding_free, liger) or args.get("torch_compile") \
                or (flags["attn_impl"] or "sdpa") != (attn_impl or "sdpa") or args.get("group_by_length") \
                or args.get("packing"):
            continue
        out.append(r)
    # the least cut run first (most steps), newest among equals, as the tables pick it
    return sorted(out, key=lambda r: (r.global_steps or 0, r.run), reverse=True)


def _collect(results: str | Path | None) -> tuple[list[RunRecord], str | None]:
    if results is None:
        results = Path("results")
        if not results.is_dir():
            return [], None
    return collect(results), str(results)


# ------------------------------------------------------------------------------------------------ plan


@dataclass(frozen=True)
class ClassTime:
    """One class's optimizer-step time and where it comes from: measured (a committed run of the recipe on it),
    profiled (a committed H200 profile of the recipe carried over: transfer.py), scaled (built from the reference
    profiles: scaled.py) or roofline (qlora and full: no profile of those). low_s .. high_s: the model's band."""

    step_s: float
    low_s: float
    high_s: float
    kind: str
    source: str
    note: str | None
    parts: transfer.StepParts | None


def _class_time(key: str, measured: RunRecord | None, profiled: ProfiledStep | None, synth: ProfiledStep | None,
                roof_step: float) -> ClassTime:
    if measured is not None:
        median = step_time(measured).median
        assert median is not None  # measured_step picks runs with a steady step
        step = float(median)
        return ClassTime(step, step, step, "measured", f"measured: {_run_label(measured)}",
                         f"median steady-state step of {_run_label(measured)} ({measured.global_steps} steps; "
                         f"{'; '.join(measured.labels)})", None)
    if profiled is not None:
        parts = transfer.step_on(profiled, key)
        low, high = transfer.band_range(parts.total_s)
        return ClassTime(parts.total_s, low, high, "profiled", f"profile of {transfer.without_host(profiled.run)}",
                         f"{profiled.run}'s profiled step carried to {key} kernel by kernel (docs/time-model.md); "
                         f"host {parts.host_s:.3f} s as measured on the {profiled.hw} (same host assumed)", parts)
    if synth is not None:
        parts = transfer.step_on(synth, key)
        low, high = transfer.band_range(parts.total_s, "scaled")
        return ClassTime(parts.total_s, low, high, "scaled", synth.run,
                         f"an H200 step built from the reference profiles for this recipe, model and data, carried to "
                         f"{key} (docs/time-model.md); host {parts.host_s:.3f} s (same host assumed)", parts)
    return ClassTime(roof_step, roof_step, roof_step, "roofline", "roofline", None, None)


def estimate(model: str, method: str = "lora", max_length: int = 2048, seq_len: int | None = None,
             batch: int = 1, grad_accum: int = 16, samples: int = 1500, epochs: int = 1,
             hw: str | list[str] | None = None, prices: str | Path | dict | None = None,
             gradient_checkpointing: bool = True, lora_rank: int = 8, results: str | Path | None = None,
             mean_len: int | None = None, gpus: int = 1, parallel: str = "ddp", padding_free: bool = False,
             liger: bool = False, packed_len: int | None = None,
             lengths: str | Path | Lengths | None = None, from_run: str | None = None,
             attn_impl: str | None = None) -> list[dict]:
    """One estimate per GPU class: memory (breakdown, peak, fits), step and total time with the model's band, cost
    (the built-in price table, data/prices.yaml, unless PRICES names another). The data: LENGTHS (a file
    of sample lengths), or MEAN_LEN and SEQ_LEN (the longest sample), else the recipe's data. PADDING_FREE rows hold
    their batch's samples end to end (PACKED_LEN: the longest such row, where a run measured it), LIGER: Liger's
    kernels and fused cross-entropy. GPUS > 1 or a ZeRO PARALLEL: memory per GPU (per_gpu_memory), BATCH and
    GRAD_ACCUM per GPU, the time assuming perfect scaling. FROM_RUN (hw/experiment/run, set by args_from_run): that
    run first where it is one of the recipe's committed runs (its step, profile and train_runtime).
    Stays whole: the input checks and one row per GPU class, whose memory, fit, time and cost read each other's values
    in order."""
    if method not in METHODS:
        raise InputError(None, f"unknown method {method!r} (known: {', '.join(METHODS)})")
    for name, value in (("--max-length", max_length), ("--batch", batch), ("--grad-accum", grad_accum),
                        ("--samples", samples), ("--epochs", epochs), ("--lora-rank", lora_rank)):
        _positive_int(name, value)
    if seq_len is not None and _positive_int("--seq-len", seq_len) > max_length:
        raise InputError(None, f"--seq-len {seq_len} is longer than --max-length {max_length} "
                               "(ms-swift drops or truncates longer samples)")
    if mean_len is not None and _positive_int("--mean-len", mean_len) > (seq_len or max_length):
        raise InputError(None, f"--mean-len {mean_len} is longer than --seq-len {seq_len or max_length}")
    for name, flag in (("--gradient-checkpointing", gradient_checkpointing), ("--padding-free", padding_free),
                       ("--liger", liger)):
        if not isinstance(flag, bool):
            raise InputError(None, f"{name} must be true or false, got {flag!r}")
    keys = _hw_list(hw)
    price_table, currency = (prices, None) if isinstance(prices, dict) else _price_table(prices or DEFAULT_PRICES)
    shapes = resolve_model(model)
    c = constants()
    _positive_int("--gpus", gpus)
    data = job_lengths(max_length, seq_len, mean_len, lengths, c)
    seq = min(seq_len or data.longest, max_length)
    stats = batch_stats(data, batch, padding_free, samples)
    packed = (packed_len or stats.max_tokens) if padding_free else None
    mem = memory(shapes, method, seq, batch, gradient_checkpointing, lora_rank, c, padding_free=padding_free,
                 liger=liger, packed_tokens=packed, attn_impl=attn_impl)
    sharded = per_gpu_memory(mem, gpus, parallel, c)
    if gpus > 1 or parallel != "ddp":  # what one GPU holds decides the fit
        mem = {**mem, "peak_mem_gib": sharded["peak_mem_gib"], "needs_gib": sharded["needs_gib"]}
    cached: dict[int, int] = {}

    def packed_of(b: int) -> int:  # the longest packed row of a batch of B (padding-free), drawn once per B
        if b not in cached:
            cached[b] = batch_stats(data, b, True, samples).max_tokens
        return cached[b]

    rows, results_dir = _collect(results)
    recipe_runs = _matching_runs(rows, None, shapes["name"], method, batch, grad_accum, max_length,
                                 gradient_checkpointing, lora_rank, padding_free, liger, attn_impl)
    same_data = sorted((r for r in recipe_runs if _same_data(r, data)), key=lambda r: _run_label(r) != from_run)
    mean = stats.mean_tokens / batch  # tokens the GPU processes per sample, padding included
    steps_per_epoch = math.ceil(samples / (batch * grad_accum * gpus))
    steps = steps_per_epoch * epochs
    profile_hw = transfer.profiled_class()
    profiled = next((transfer.profile_step(r) for r in same_data if r.hw == profile_hw and transfer.transferable(r)),
                    None)
    # a full epoch of the recipe on the H200: what its warm-up, evals and saves add to the steady steps, on every class
    full = next((r for r in same_data if r.hw == profile_hw and transfer.runtime_factor(r)), None)
    factor = 1.0
    epoch_basis = f"steady step x {steps} steps (no evals, saves or warm-up: no full epoch of the recipe is committed)"
    if full is not None and (measured_factor := transfer.runtime_factor(full)):
        factor = measured_factor
        epoch_basis = (f"steady step x {steps} steps x {factor:.3f} (train_runtime / steady steps of "
                       f"{_run_label(full)}: warm-up, evals and saves)")
    synth, synth_note = None, None
    if method == "lora" and profiled is None and rows:
        try:
            recipe = scaled.Recipe(batch, grad_accum, padding_free, liger, gradient_checkpointing, lora_rank)
            synth = scaled.scaled_step(shapes, recipe, stats, scaled.references(rows), label=shapes["name"])
        except InputError as exc:  # reference runs missing from this results tree
            synth_note = f"no scaled time: {exc}"
    assumptions = _assumptions(shapes, method, seq, mean, batch, gradient_checkpointing, lora_rank, mem, c,
                               data.source, results_dir, padding_free, liger, packed, attn_impl)
    asked = Path(str(model).rstrip("/")).name
    if not Path(model).exists() and asked.lower() != str(shapes["name"]).lower():
        assumptions.insert(0, f"model {asked}: the shapes of {shapes['name']} (data/models.yaml aliases; "
                              "measured runs of it count as this model's)")

    out = []
    for key in keys:
        spec = hardware.require(key)
        cap = capacity_gib(spec)
        roof = roofline_micro_step(spec, shapes, method, batch * mean, gradient_checkpointing, lora_rank, c,
                                   mem["weights_gib"] * GIB)
        opt_s = optimizer_step_s(spec, method, mem["params"]["trainable"], c)
        roof_step = grad_accum * roof["micro_step_s"] + opt_s
        gpu_s = grad_accum * max(roof["compute_s"], roof["weight_reads_s"]) + opt_s  # the rest is host overhead
        measured = next((r for r in same_data if r.hw == key), None)
        other = next((r for r in recipe_runs if r.hw == key), None)
        t = _class_time(key, measured, profiled, synth, roof_step)
        time_note = t.note or synth_note
        if measured is None and other is not None:
            time_note = (f"measured run {_run_label(other)} trained other data (mean {other.train_tokens_mean or 0:.0f}"
                         f" tokens/sample, not {data.mean:.0f}): modelled instead")
        fit = fit_verdict(mem["needs_gib"], mem["activations_gib"], cap, c=c)
        fits = fit != "no"
        step_s: float | None = t.step_s if fits else None
        source = t.source if fits else "does not fit"
        if not fits:  # no time and no cost for a job that cannot run (the roofline below keeps its figures)
            time_note = None
        total_s = step_s * steps * factor if step_s is not None else None
        price = (price_table or {}).get(key)
        rates = _rates(step_s, batch * grad_accum, mean, steps) if step_s is not None else \
            {"ms_per_sample": None, "tokens_per_s": None}
        out.append({
            "hw": key, "name": spec["name"], "method": method, "model": shapes["name"],
            "capacity_gib": cap, "peak_mem_gib": mem["peak_mem_gib"], "live_peak_gib": mem["live_peak_gib"],
            "needs_gib": mem["needs_gib"], "fits": fits, "fit": fit, "headroom_gib": cap - mem["needs_gib"],
            # what ms-swift would log on this class: the allocator cannot reserve more than the GPU has
            "logged_peak_gib": min(mem["peak_mem_gib"], cap) if fits else None,
            "breakdown": {k: mem[k] for k in ("weights_gib", "adapters_gib", "gradients_gib", "optimizer_gib",
                                              "activations_gib", "allocator_cache_gib", "cuda_context_gib")},
            "activations_detail_gib": mem["activations_detail_gib"],
            "seq_len": seq, "batch": batch, "grad_accum": grad_accum, "max_length": max_length,
            "gradient_checkpointing": gradient_checkpointing, "padding_free": padding_free, "liger": liger,
            "tokens_per_micro_batch": mem["tokens_per_micro_batch"],
            "lora_rank": lora_rank if method != "full" else None,
            "tokens_per_sample": mean, "data": data.source, "steps": steps, "samples": samples, "epochs": epochs,
            "max_batch": largest_batch(shapes, method, seq, gradient_checkpointing, lora_rank, cap, c,
                                       padding_free=padding_free, liger=liger, packed_tokens_of=packed_of),
            "step_time_s": step_s, "total_time_s": total_s,
            "total_low_s": t.low_s * steps * factor if step_s is not None else None,
            "total_high_s": t.high_s * steps * factor if step_s is not None else None, "epoch_basis": epoch_basis,
            "total_hours": total_s / 3600 if total_s is not None else None,
            "ms_per_sample": rates["ms_per_sample"], "tokens_per_s": rates["tokens_per_s"],
            "time_source": source, "time_kind": t.kind if fits else None, "time_note": time_note,
            "time_parts": dataclasses.asdict(t.parts) if t.parts is not None and fits else None,
            # the roofline's own figures, also where another time is used above (the report's predicted rows)
            "roofline": {"step_time_s": roof_step, "micro_step_s": roof["micro_step_s"], "compute_s": roof["compute_s"],
                         "weight_reads_s": roof["weight_reads_s"], "host_overhead_s": roof["host_overhead_s"],
                         "optimizer_s": opt_s, "bound": roof["bound"], "flops_per_token": roof["flops_per_token"],
                         "gpu_busy_frac": gpu_s / roof_step, **_rates(roof_step, batch * grad_accum, mean, steps)},
            "gpus": gpus, "parallel": parallel, "per_gpu": sharded,
            "price_per_gpu_hour": price, "currency": (currency or "USD" if prices is None else currency)
            if price is not None else None,
            "cost": None if price is None or total_s is None else total_s / 3600 * price * gpus,
            "suggestions": [] if fit == "yes" else suggestions(shapes, method, seq, batch, grad_accum,
                                                                 gradient_checkpointing, lora_rank, padding_free,
                                                                 liger, data, cap, c),
            "estimate_only": method not in VALIDATED_METHODS,
            "assumptions": assumptions,
        })
    return out


def _same_data(rec: RunRecord, data: Lengths) -> bool:
    """Whether REC trained data like DATA: its log's mean sample length within 10 % of DATA's (a run without one
    counts as the recipe's)."""
    run_mean = rec.train_tokens_mean
    return run_mean is None or abs(data.mean - run_mean) <= 0.1 * run_mean


def suggestions(shapes: dict, method: str, seq: int, batch: int, grad_accum: int, gradient_checkpointing: bool,
                lora_rank: int, padding_free: bool, liger: bool, data: Lengths, capacity: float,
                c: dict | None = None) -> list[dict]:
    """Settings that make the job fit CAPACITY GiB where it does not (or only tightly), one change at a time, then all
    memory savers together: checkpointing on, Liger, padding-free rows, a smaller per-device batch with a larger
    grad-accum (only where batch > 1; the global batch kept), QLoRA. Each: {change (the `swift sft` flags), needs_gib,
    fit}; only those whose fit is yes."""
    c = c or constants()
    options: list[tuple[str, dict]] = []
    if not gradient_checkpointing:
        options.append(("--gradient_checkpointing true", {"gradient_checkpointing": True}))
    if not liger:
        options.append(("--use_liger_kernel true", {"liger": True}))
    if not padding_free:
        options.append(("--padding_free true", {"padding_free": True}))
    base = {"batch": batch, "grad_accum": grad_accum, "gradient_checkpointing": gradient_checkpointing,
            "liger": liger, "padding_free": padding_free, "method": method}
    savers = {"gradient_checkpointing": True, "liger": True, "padding_free": True}
    if len(options) > 1:
        options.append((" ".join(o for o, _ in options), savers))
    b = batch // 2
    while b >= 1 and batch > 1:
        ga = grad_accum * batch // b if (grad_accum * batch) % b == 0 else None
        if ga:
            options.append((f"--per_device_train_batch_size {b} --gradient_accumulation_steps {ga}",
                            {"batch": b, "grad_accum": ga}))
        b //= 2
    if method == "lora":
        options.append(("--quant_bits 4 (QLoRA)", {"method": "qlora"}))
        options.append(("--quant_bits 4 (QLoRA) " + " ".join(o for o, _ in options[:3] if "batch" not in o),
                        {"method": "qlora", **savers}))
    out = []
    for change, kw in options:
        k = {**base, **kw}
        stats = batch_stats(data, k["batch"], k["padding_free"])
        mem = memory(shapes, k["method"], seq, k["batch"], k["gradient_checkpointing"], lora_rank, c,
                     padding_free=k["padding_free"], liger=k["liger"],
                     packed_tokens=stats.max_tokens if k["padding_free"] else None)
        fit = fit_verdict(mem["needs_gib"], mem["activations_gib"], capacity, c=c)
        if fit == "yes":
            out.append({"change": change, "needs_gib": mem["needs_gib"], "fit": fit})
    return out


def _rates(step_s: float, samples_per_step: int, tokens_per_sample: float, steps: int) -> dict:
    """A step time in the units the measurements use: ms per sample, processed tokens/s (padding included: the
    tokens per sample the roofline assumed), and the time to run STEPS steps."""
    return {"ms_per_sample": step_s / samples_per_step * 1000,
            "tokens_per_s": samples_per_step * tokens_per_sample / step_s, "total_time_s": step_s * steps}


def _run_label(rec: RunRecord) -> str:
    return f"{rec.hw}/{rec.experiment}/{rec.run}"


def _assumptions(shapes, method, seq, mean, batch, gc, rank, mem, c, data_source, results_dir, padding_free, liger,
                 packed, attn_impl=None) -> list[str]:
    m = "memory."
    lines = []
    if method not in VALIDATED_METHODS:
        lines.append(f"ESTIMATE ONLY: no {method} run is committed in results/, so this memory and time model has "
                     "not been checked against a measurement for this method")
    if method == "full":
        lines.append("full: bf16 weights, bf16 gradients, AdamW states in bf16 (the HF Trainer keeps no fp32 master "
                     "copy); DeepSpeed/FSDP mixed precision would need 16 B/param more")
    else:
        lines.append(f"{method}: LoRA r{rank} on all linears, {mem['params']['lora']:,} adapter parameters in fp32 "
                     "(PEFT upcasts adapters of a bf16 model), fp32 gradients, AdamW 2 fp32 states"
                     + ("; decoder linears in 4-bit NF4, embeddings and lm_head bf16" if method == "qlora" else ""))
    lines.append(f"data: {data_source}; longest sample {seq} tokens")
    rows = (f"padding-free: the batch's {batch} samples in one row, the longest packed row {packed:,} tokens"
            if padding_free else f"padded rows: {batch} x {seq} tokens in the micro-batch holding the longest sample")
    lines.append(
        f"activations of {rows}: "
        + ("checkpointed layer inputs 2h B/token/layer" if gc else "every layer's saved tensors (no checkpointing)")
        + (", Liger's RMSNorm/SwiGLU and fused linear cross-entropy (no logits tensor)" if liger else
           f", logits/loss {c[m + 'activations.logits']['V']} B x vocab {shapes['vocab_size']:,} per token "
           "(bf16 logits -> fp32 -> log-softmax and its gradients)") + "; ms-swift's default lora_dropout 0.05")
    k_stored, k_working = cache_factors(gc, liger, c)
    lines.append(
        f"peak = static + {k_stored} x stored activations + {k_working} x the working set: what ms-swift logs "
        "(max_memory_reserved) on a GPU with room to spare (calibrated on results/h200, order-dependent)")
    lines.append(
        f"fits: needs = static + {1 + c[m + 'tight_fragmentation']:.2f} x activations + "
        f"{c[m + 'cuda_context_gib']} GiB CUDA context <= memory_gb x 1e9 / 2^30 (the allocator frees its cache "
        "before it fails); tight: the live peak (static + activations + context) fits, needs does not: runs under a "
        "memory cap there both trained and ran out of memory; no: not even the live peak fits (no time, no cost)")
    lines.append(
        "time: measured where results/ has the recipe on that class (same data); else a committed H200 profile of the "
        "recipe carried to the class kernel by kernel (GEMMs and attention by effective FLOPs, memory-bound kernels "
        "by bandwidth, the H200 host's idle time kept: same host assumed); else an H200 step built from the reference "
        "profiles for this recipe, model and data, carried over the same way (docs/time-model.md); each modelled "
        "time with its band (total_low_s .. total_high_s); qlora and full: the roofline (no profile of them)")
    lines.append(f"tokens the GPU processes per sample (padding included): {mean:.1f}")
    if attn_impl and (attn_impl or "sdpa") != "sdpa":
        lines.append(f"attn_impl {attn_impl}: " + ("FlashAttention takes packed rows and padding without a mask (no "
                                                   "repeated k/v); its time is SDPA's (no FlashAttention profile)"
                                                   if is_flash(attn_impl) else
                                                   "not modelled: the activations and time are SDPA's (eager saves "
                                                   "the attention probabilities too)"))
    lines.append("measured times and profiles come from " + (results_dir if results_dir else "no results folder")
                 + " (same model, method, rank, batch, grad-accum, max-length, checkpointing, padding-free, Liger)")
    return lines


# ---------------------------------------------------------------------------------- validation / calibration


