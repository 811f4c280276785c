"""The planner's model: will a fine-tune fit on a GPU class, how long will it take, what will it cost.

    swiftbench plan --model Qwen2.5-7B-Instruct --method lora --max-length 2048 --batch 1 --grad-accum 16
        --samples 1500 --epochs 1 [--seq-len 593] [--mean-len 128] [--hw a10,h200] [--prices prices.yaml] [--json]

Memory (bytes; T = seq-len, the longest sequence a batch holds, B = per-device batch, L layers):
    static  = weights + adapters + gradients + AdamW states          (bytes per parameter: planner.yaml)
    live    = B x T x [ L x per-layer + final norm + max(logits 12 V, one recomputed layer + its backward) ]
              per-layer = 2h (checkpointing keeps the layer input) or the layer's saved tensors (no checkpointing)
    peak    = static + allocator_cache_factor x live         (what ms-swift logs: max_memory_reserved; calibrated)
    needs   = static + (1 + tight_fragmentation) x live + CUDA context
    fit     = yes: needs <= memory_gb in GiB;  no: static + live + CUDA context does not;  tight: in between (capped
              runs in that band both trained and ran out of memory; fit_verdict). No time or cost where it is no.
Time per optimizer step: measured median where results/ has the same recipe on that GPU class, else
    grad_accum x [ max(FLOPs/token x tokens / (peak bf16 x achievable_fraction), weights x passes / bandwidth)
                   + host_overhead ] + optimizer bytes / bandwidth.
Every constant, with whether it is physical or calibrated, is in analysis/data/planner.yaml.

Stays whole: memory, time and cost are one model over the same resolved shapes and planner.yaml constants, each step
reading the one before; apart, the formulas above would be spread over files.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from analysis.measure import flops as measure_flops
from analysis.measure.steps import step_time
from analysis.parse.record import LOG_NAME, RunRecord, read_log_record
from analysis.parse.results import collect
from experiments.base import hardware, runfiles, runschema, userfiles
from experiments.base.datafiles import read_json_object, read_yaml
from experiments.base.errors import InputError

CONSTANTS_FILE = hardware.DATA / "planner.yaml"
DEFAULT_HW = ("a10", "rtx4090", "a100", "h100", "h200")
METHODS = ("lora", "qlora", "full")
GIB = 2 ** 30
VALIDATED_METHODS = ("lora",)  # methods with committed measurements to check the memory model against


# --------------------------------------------------------------------------------------------- constants


def constants(path: str | Path = CONSTANTS_FILE) -> dict[str, Any]:
    """planner.yaml as {dotted.name: value}; every entry must say its value, kind and why."""
    path = Path(path)
    data = read_yaml(path)
    out: dict[str, Any] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict) and "value" in node:
            for field in ("kind", "why"):
                if field not in node:
                    raise InputError(path, f"constant {prefix!r} lacks {field!r}")
            if node["kind"] not in ("physical", "calibrated", "measured", "assumption"):
                raise InputError(path, f"constant {prefix!r} has unknown kind {node['kind']!r}")
            out[prefix] = node["value"]
        elif isinstance(node, dict):
            for key, child in node.items():
                walk(child, f"{prefix}.{key}" if prefix else str(key))
        else:
            raise InputError(path, f"{prefix!r} is neither a section nor a constant")

    walk(data, "")
    return out


def constant_kinds(path: str | Path = CONSTANTS_FILE) -> dict[str, str]:
    """{dotted.name: kind} of planner.yaml (physical, calibrated, measured, assumption)."""
    data = read_yaml(path)
    out: dict[str, str] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict) and "value" in node:
            out[prefix] = node["kind"]
        elif isinstance(node, dict):
            for key, child in node.items():
                walk(child, f"{prefix}.{key}" if prefix else str(key))

    walk(data, "")
    return out


def _coef(coefs: dict[str, float], dims: dict[str, float]) -> float:
    """Bytes per token of a {h: 24, i: 8, ...} coefficient table for these shapes."""
    return sum(float(c) * dims[k] for k, c in coefs.items())


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
        raise InputError(None, f"unknown model {model!r}: not in analysis/data/models.yaml "
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
    method, max_length, batch, grad_accum, epochs, gradient_checkpointing, lora_rank; and, from the log beside it where
    there is one, the epoch's training samples and the longest sample (seq_len). The model is the config.json the
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
                raise InputError(path, f"model {model!r} ({field}{old}) is not in analysis/data/models.yaml and no "
                                       f"{MODEL_CONFIG_NAME} or config.json is at hand: pass --model with its "
                                       "config.json (or a models.yaml name of the same shapes)") from None
    method = _run_method(args)
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
    if (folder / LOG_NAME).is_file():
        rec = read_log_record(folder)
        if rec.train_samples:
            out["samples"] = int(rec.train_samples)
        if rec.train_tokens_max and out.get("max_length"):
            out["seq_len"] = min(int(rec.train_tokens_max), int(out["max_length"]))
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
        keys = list(DEFAULT_HW)
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


def _dims(shapes: dict) -> dict[str, float]:
    return {"h": shapes["hidden_size"], "i": shapes["intermediate_size"],
            "kv": shapes["num_key_value_heads"] * shapes["head_dim"], "V": shapes["vocab_size"]}


def param_counts(shapes: dict, method: str, lora_rank: int) -> dict[str, int]:
    total = hardware.total_params(shapes)
    matmul = hardware.matmul_params(shapes)
    decoder_linears = matmul - shapes["hidden_size"] * shapes["vocab_size"]
    lora = hardware.lora_params(shapes, {"lora_rank": lora_rank, "target_modules": "all-linear"})
    return {"total": total, "matmul": matmul, "decoder_linears": decoder_linears, "lora": lora,
            "trainable": total if method == "full" else lora, "layers": int(shapes["num_hidden_layers"])}


def activation_bytes_per_token(shapes: dict, method: str, gradient_checkpointing: bool, batch: int,
                               seq_len: int, c: dict | None = None) -> dict[str, float]:
    """Live activation bytes per token of a micro-batch at its peak, and the pieces it is made of."""
    c = c or constants()
    d = _dims(shapes)
    n_layers = shapes["num_hidden_layers"]
    a = "memory.activations."
    layer = _coef(c[a + "layer_full"] if method == "full" else c[a + "layer_lora"], d)
    if method != "full":
        layer += _coef(c[a + "layer_lora_dropout"], d)
    if method == "qlora":
        layer += _coef(c[a + "layer_qlora_extra"], d)
    if batch > 1:  # padded batch: attention mask -> k, v repeated to all heads, bf16 bias B x 1 x T x T
        layer += _coef(c[a + "padded_batch_kv_repeat"], d) + c[a + "padded_batch_mask_bytes_per_seq_token"] * seq_len
    logits = _coef(c[a + "logits"], d) * c[a + "logits_token_fraction"]
    final = _coef(c[a + "final_norm"], d)
    if gradient_checkpointing:
        stored = n_layers * _coef(c[a + "checkpoint_per_layer"], d)
        working = max(logits, layer + _coef(c[a + "backward_transient_layer"], d))
    else:
        stored = n_layers * layer
        working = logits
    return {"stored_per_token": stored, "final_norm_per_token": final, "logits_per_token": logits,
            "layer_per_token": layer, "working_per_token": working, "total_per_token": stored + final + working}


def memory(shapes: dict, method: str = "lora", seq_len: int = 2048, batch: int = 1,
           gradient_checkpointing: bool = True, lora_rank: int = 8, c: dict | None = None) -> dict[str, Any]:
    """Memory estimate in GiB: the breakdown, the live peak, the peak ms-swift would log, what must fit."""
    c = c or constants()
    m = "memory."
    p = param_counts(shapes, method, lora_rank)
    bf16 = c[m + "weight_bytes.bf16"]
    if method == "qlora":
        weights = p["decoder_linears"] * c[m + "weight_bytes.nf4"] + (p["total"] - p["decoder_linears"]) * bf16
    else:
        weights = p["total"] * bf16
    if method == "full":
        adapters = 0.0
        grads = p["trainable"] * c[m + "full.grad_bytes"]
        optim = p["trainable"] * c[m + "full.adam_state_bytes"]
    else:
        adapters = p["lora"] * c[m + "lora.param_bytes"]
        grads = p["lora"] * c[m + "lora.grad_bytes"]
        optim = p["lora"] * c[m + "lora.adam_state_bytes"]
    per_token = activation_bytes_per_token(shapes, method, gradient_checkpointing, batch, seq_len, c)
    tokens = batch * seq_len
    act = per_token["total_per_token"] * tokens
    static = weights + adapters + grads + optim
    k = c[m + "allocator_cache_factor"]
    context = c[m + "cuda_context_gib"] * GIB
    out = {
        "weights_gib": weights / GIB, "adapters_gib": adapters / GIB, "gradients_gib": grads / GIB,
        "optimizer_gib": optim / GIB, "activations_gib": act / GIB,
        "activations_detail_gib": {
            "checkpointed_layer_inputs" if gradient_checkpointing else "saved_layer_tensors":
                per_token["stored_per_token"] * tokens / GIB,
            "final_norm": per_token["final_norm_per_token"] * tokens / GIB,
            "logits_loss" if per_token["working_per_token"] == per_token["logits_per_token"] else "recomputed_layer":
                per_token["working_per_token"] * tokens / GIB,
        },
        "logits_loss_gib": per_token["logits_per_token"] * tokens / GIB,
        "allocator_cache_gib": (k - 1) * act / GIB,
        "cuda_context_gib": context / GIB,
        "live_peak_gib": (static + act) / GIB,
        "peak_mem_gib": (static + k * act) / GIB,
        "needs_gib": (static + (1 + c[m + "tight_fragmentation"]) * act + context) / GIB,
        "tokens_per_micro_batch": tokens,
        "params": p,
    }
    return out


def largest_batch(shapes: dict, method: str, seq_len: int, gradient_checkpointing: bool, lora_rank: int,
                  capacity: float, c: dict | None = None, limit: int = 4096) -> int:
    """The largest per-device batch whose `needs` fits CAPACITY GiB with every sample SEQ_LEN long (0: not even
    batch 1; at most LIMIT). The memory model grows with the batch, so a doubling then bisection finds it."""
    c = c or constants()

    def fits(b: int) -> bool:
        return memory(shapes, method, seq_len, b, gradient_checkpointing, lora_rank, c)["needs_gib"] <= capacity

    if not fits(1):
        return 0
    lo, hi = 1, 2
    while hi <= limit and fits(hi):
        lo, hi = hi, hi * 2
    hi = min(hi, limit + 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def capacity_gib(spec: dict) -> float:
    if spec.get("memory_gib"):
        return float(spec["memory_gib"])
    return float(spec["memory_gb"]) * 1e9 / GIB


FIT_VERDICTS = ("yes", "tight", "no")


def fit_verdict(needs_gib: float, activations_gib: float, capacity: float, capped: bool = False,
                c: dict | None = None) -> str:
    """yes, tight or no: NEEDS_GIB (static + (1 + tight_fragmentation) x activations + CUDA context) within CAPACITY
    GiB is yes; the live peak alone (the same without the fragmentation margin) above it is no; in between, tight:
    runs under an allocator cap there both trained (cap24-bs8, qcap24-bs4) and ran out of memory (lcap24-len2048-bs2),
    so the model cannot call it. CAPPED: CAPACITY is an allocator cap (experiments/launch.py --mem-cap-gib), which
    the CUDA context sits outside of."""
    c = c or constants()
    context = c["memory.cuda_context_gib"] if capped else 0.0
    sure, live = needs_gib - context, needs_gib - context - c["memory.tight_fragmentation"] * activations_gib
    return "yes" if sure <= capacity else "no" if live > capacity else "tight"


# -------------------------------------------------------------------------------------------------- time


def flops_per_token(shapes: dict, method: str, gradient_checkpointing: bool, lora_rank: int) -> float:
    """Hardware FLOPs per trained token (recompute included): analysis.measure.flops's formula, the one MFU uses."""
    p = param_counts(shapes, method, lora_rank)
    return measure_flops.flops_per_token(p["matmul"], p["lora"], method, gradient_checkpointing)["hardware"]


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


def _run_method(args: dict) -> str | None:
    tuner = args.get("tuner_type") or args.get("train_type") or args.get("sft_type")
    if tuner == "lora" and (args.get("quant_bits") == 4 or args.get("quantization_bit") == 4):
        return "qlora"
    return tuner


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
                   grad_accum: int, max_length: int, gradient_checkpointing: bool, lora_rank: int) -> list[RunRecord]:
    out = []
    for r in records:
        if not r.ok or (hw is not None and r.hw != hw) or step_time(r)["median"] is None:
            continue
        if (r.per_device_batch, r.grad_accum, r.max_length, r.gradient_checkpointing) \
                != (batch, grad_accum, max_length, gradient_checkpointing):
            continue
        if (r.world_size or 1) != 1 or _model_name(r) != model_name.lower():
            continue
        args = r.args or {}
        if _run_method(args) != method or (method != "full" and args.get("lora_rank") != lora_rank):
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


def estimate(model: str, method: str = "lora", max_length: int = 2048, seq_len: int | None = None,
             batch: int = 1, grad_accum: int = 16, samples: int = 1500, epochs: int = 1,
             hw: str | list[str] | None = None, prices: str | Path | dict | None = None,
             gradient_checkpointing: bool = True, lora_rank: int = 8, results: str | Path | None = None,
             mean_len: int | None = None, gpus: int = 1, parallel: str = "ddp") -> list[dict]:
    """One estimate per GPU class: memory (breakdown, peak, fits), step and total time, cost. GPUS > 1 or a ZeRO
    PARALLEL: memory per GPU (per_gpu_memory), BATCH and GRAD_ACCUM per GPU, the time assuming perfect scaling.
    Stays whole: the input checks and one row per GPU class, whose memory, fit, time and cost read each other's values
    in order."""
    if method not in METHODS:
        raise InputError(None, f"unknown method {method!r} (known: {', '.join(METHODS)})")
    for name, value in (("--max-length", max_length), ("--batch", batch), ("--grad-accum", grad_accum),
                        ("--samples", samples), ("--epochs", epochs), ("--lora-rank", lora_rank)):
        _positive_int(name, value)
    seq = max_length if seq_len is None else _positive_int("--seq-len", seq_len)
    if seq > max_length:
        raise InputError(None, f"--seq-len {seq} is longer than --max-length {max_length} "
                               "(ms-swift drops or truncates longer samples)")
    if mean_len is not None and _positive_int("--mean-len", mean_len) > seq:
        raise InputError(None, f"--mean-len {mean_len} is longer than --seq-len {seq}")
    if not isinstance(gradient_checkpointing, bool):
        raise InputError(None, f"--gradient-checkpointing must be true or false, got {gradient_checkpointing!r}")
    keys = _hw_list(hw)
    price_table, currency = (prices, None) if isinstance(prices, dict) or prices is None else _price_table(prices)
    shapes = resolve_model(model)
    c = constants()
    _positive_int("--gpus", gpus)
    mem = memory(shapes, method, seq, batch, gradient_checkpointing, lora_rank, c)
    sharded = per_gpu_memory(mem, gpus, parallel, c)
    if gpus > 1 or parallel != "ddp":  # what one GPU holds decides the fit
        mem = {**mem, "peak_mem_gib": sharded["peak_mem_gib"], "needs_gib": sharded["needs_gib"]}
    rows, results_dir = _collect(results)
    recipe_runs = _matching_runs(rows, None, shapes["name"], method, batch, grad_accum, max_length,
                                 gradient_checkpointing, lora_rank)
    if mean_len is not None:
        mean, mean_source = float(mean_len), "--mean-len"
    elif recipe_runs and (run_mean := run_tokens_per_sample(recipe_runs[0], shapes)):
        mean = min(float(seq), run_mean)
        mean_source = f"what {_run_label(recipe_runs[0])} processed (same recipe; pass --mean-len for other data)"
    else:
        mean, mean_source = float(seq), "= --seq-len, every sample as long as the longest; pass --mean-len " \
                                         "with your data's mean (padding included)"
    steps_per_epoch = math.ceil(samples / (batch * grad_accum * gpus))
    steps = steps_per_epoch * epochs
    assumptions = _assumptions(shapes, method, seq, mean, batch, gradient_checkpointing, lora_rank, mem, c,
                               mean_source, results_dir)
    asked = Path(str(model).rstrip("/")).name
    if not Path(model).exists() and asked.lower() != str(shapes["name"]).lower():
        assumptions.insert(0, f"model {asked}: the shapes of {shapes['name']} (analysis/data/models.yaml aliases; "
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
        matches = [r for r in recipe_runs if r.hw == key]
        time_note = None
        measured = matches[0] if matches else None
        if measured is not None and mean_len is not None:
            run_mean = run_tokens_per_sample(measured, shapes) or measured.train_tokens_mean
            if run_mean and abs(mean_len - run_mean) > 0.1 * run_mean:
                time_note = (f"measured run {_run_label(measured)} processed {run_mean:.0f} tokens/sample, "
                             f"not --mean-len {mean_len}: roofline used")
                measured = None
        step_s: float | None
        if measured is not None:
            step_s = float(step_time(measured)["median"])
            source = f"measured: {_run_label(measured)}"
            time_note = (f"median steady-state step of {_run_label(measured)} ({measured.global_steps} steps, "
                         f"data of {measured.train_tokens_mean or 0:.0f} tokens/sample; "
                         f"{'; '.join(measured.labels)})")
        else:
            step_s = roof_step
            source = "roofline"
        price = (price_table or {}).get(key)
        fit = fit_verdict(mem["needs_gib"], mem["activations_gib"], cap, c=c)
        fits = fit != "no"
        if not fits:  # no time and no cost for a job that cannot run (the roofline below keeps its figures)
            step_s, source, time_note = None, "does not fit", None
        total_s = step_s * steps if step_s is not None else None
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
            "gradient_checkpointing": gradient_checkpointing, "lora_rank": lora_rank if method != "full" else None,
            "tokens_per_sample": mean, "steps": steps, "samples": samples, "epochs": epochs,
            "max_batch": largest_batch(shapes, method, seq, gradient_checkpointing, lora_rank, cap, c),
            "step_time_s": step_s, "total_time_s": total_s,
            "total_hours": total_s / 3600 if total_s is not None else None,
            "ms_per_sample": rates["ms_per_sample"], "tokens_per_s": rates["tokens_per_s"],
            "time_source": source, "time_note": time_note,
            # the roofline's own figures, also where a measured time is used above (the report's predicted rows)
            "roofline": {"step_time_s": roof_step, "micro_step_s": roof["micro_step_s"], "compute_s": roof["compute_s"],
                         "weight_reads_s": roof["weight_reads_s"], "host_overhead_s": roof["host_overhead_s"],
                         "optimizer_s": opt_s, "bound": roof["bound"], "flops_per_token": roof["flops_per_token"],
                         "gpu_busy_frac": gpu_s / roof_step, **_rates(roof_step, batch * grad_accum, mean, steps)},
            "gpus": gpus, "parallel": parallel, "per_gpu": sharded,
            "price_per_gpu_hour": price, "currency": currency if price is not None else None,
            "cost": None if price is None or total_s is None else total_s / 3600 * price * gpus,
            "estimate_only": method not in VALIDATED_METHODS,
            "assumptions": assumptions,
        })
    return out


def _rates(step_s: float, samples_per_step: int, tokens_per_sample: float, steps: int) -> dict:
    """A step time in the units the measurements use: ms per sample, processed tokens/s (padding included: the
    tokens per sample the roofline assumed), and the time to run STEPS steps."""
    return {"ms_per_sample": step_s / samples_per_step * 1000,
            "tokens_per_s": samples_per_step * tokens_per_sample / step_s, "total_time_s": step_s * steps}


def _run_label(rec: RunRecord) -> str:
    return f"{rec.hw}/{rec.experiment}/{rec.run}"


def _assumptions(shapes, method, seq, mean, batch, gc, rank, mem, c, mean_source, results_dir) -> list[str]:
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
    lines.append(
        f"activations at seq-len {seq} x batch {batch}: "
        + ("checkpointed layer inputs 2h B/token/layer" if gc else "every layer's saved tensors (no checkpointing)")
        + f", logits/loss {c[m + 'activations.logits']['V']} B x vocab {shapes['vocab_size']:,} per token "
          "(bf16 logits -> fp32 -> log-softmax and its gradients); ms-swift's default lora_dropout 0.05")
    lines.append(
        f"peak = static + {c[m + 'allocator_cache_factor']} x activations: what ms-swift logs "
        "(max_memory_reserved) on a GPU with room to spare (calibrated on results/h200, order-dependent)")
    lines.append(
        f"fits: needs = static + {1 + c[m + 'tight_fragmentation']:.2f} x activations + "
        f"{c[m + 'cuda_context_gib']} GiB CUDA context <= memory_gb x 1e9 / 2^30 (the allocator frees its cache "
        "before it fails); tight: the live peak (static + activations + context) fits, needs does not: runs under a "
        "memory cap there both trained and ran out of memory; no: not even the live peak fits (no time, no cost)")
    lines.append(
        f"roofline step = grad-accum x [max(FLOPs/token x tokens / (peak bf16 x {c['time.achievable_fraction']}), "
        f"weights x passes / bandwidth) + {c['time.host_overhead_s']} s host overhead] + optimizer; "
        "constants fitted on the two H200 experiments, host overhead assumed equal on every GPU class")
    lines.append(f"tokens per sample for the roofline: {mean:.1f} ({mean_source})")
    lines.append("measured times come from " + (results_dir if results_dir else "no results folder")
                 + " (same model, method, rank, batch, grad-accum, max-length, checkpointing and GPU class)")
    return lines


# ---------------------------------------------------------------------------------- validation / calibration




PARALLEL_LAYOUTS = ("ddp", "zero2", "zero3")


def per_gpu_memory(mem: dict[str, Any], gpus: int = 1, parallel: str = "ddp", c: dict | None = None) -> dict[str, Any]:
    """MEM (memory(), one GPU's work at its per-device batch) spread over GPUS the way PARALLEL shares it, in GiB:
    DDP keeps everything on every GPU plus its gradient buckets; ZeRO-2 partitions gradients, optimizer states and an
    fp32 master copy of the trainables, plus its two buckets; ZeRO-3 also partitions the weights and adapters and
    gathers one layer at a time. Activations are per GPU at the per-device batch in every layout."""
    c = c or constants()
    if parallel not in PARALLEL_LAYOUTS:
        raise InputError(None, f"parallel layout {parallel!r}: use one of {', '.join(PARALLEL_LAYOUTS)}")
    d = "memory.data_parallel."
    n = max(int(gpus), 1)
    trainable = mem["params"]["lora"] if mem["adapters_gib"] else mem["params"]["trainable"]
    weights, adapters, grads, optim = (mem[k] for k in
                                       ("weights_gib", "adapters_gib", "gradients_gib", "optimizer_gib"))
    extra = 0.0
    if parallel == "ddp":
        if n > 1:
            extra = c[d + "ddp_grad_buckets"] * grads
    else:
        grads, optim = grads / n, optim / n
        extra = (trainable * c[d + "zero_master_bytes"] / n + 2 * c[d + "zero_bucket_elements"] * 2) / GIB
        if parallel == "zero3":
            per_layer = weights / mem["params"]["layers"]
            live = min(c[d + "zero3_live_params"] * 2 / GIB, 2 * per_layer)
            weights, adapters = weights / n + live, adapters / n
    static = weights + adapters + grads + optim + extra
    act = mem["activations_gib"]
    k = c["memory.allocator_cache_factor"]
    return {"gpus": n, "parallel": parallel, "weights_gib": weights, "adapters_gib": adapters, "gradients_gib": grads,
            "optimizer_gib": optim, "sharding_extra_gib": extra, "activations_gib": act,
            "peak_mem_gib": static + k * act,
            "needs_gib": static + (1 + c["memory.tight_fragmentation"]) * act + mem["cuda_context_gib"]}
