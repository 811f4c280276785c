"""What one micro-batch of a model costs on a GPU: its parameters, the bytes it holds (static and activations, as
ms-swift logs the peak), whether that fits a card, and its FLOPs per token; with planner.yaml's constants.

The planner (planner.py), the time models (scaled.py) and the validation (validate.py) all read these; none of them
is imported here, so the arithmetic has one home below them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from analysis.estimate.constants import Constants, read_constants
from analysis.measure import flops as measure_flops
from analysis.parse.record import RunRecord
from experiments.base import hardware
from experiments.base.errors import InputError
from experiments.base.runfolder import Tokens

CONSTANTS_FILE = hardware.DATA / "planner.yaml"
GIB = 2 ** 30
PARALLEL_LAYOUTS = ("ddp", "zero2", "zero3")


def _problem(name: str, entry: dict) -> str | None:
    for field in ("kind", "why"):
        if field not in entry:
            return f"constant {name!r} lacks {field!r}"
    if entry["kind"] not in ("physical", "calibrated", "measured", "assumption"):
        return f"constant {name!r} has unknown kind {entry['kind']!r}"
    return None


def constants(path: str | Path = CONSTANTS_FILE) -> Constants:
    """planner.yaml's constants (each with its value and kind); every entry must say its value, kind and why."""
    return read_constants(path, _problem)


def _coef(coefs: dict[str, float], dims: dict[str, float]) -> float:
    """Bytes per token of a {h: 24, i: 8, ...} coefficient table for these shapes."""
    return sum(float(c) * dims[k] for k, c in coefs.items())


def _dims(shapes: hardware.ModelShapes) -> dict[str, float]:
    return {"h": shapes["hidden_size"], "i": shapes["intermediate_size"],
            "kv": shapes["num_key_value_heads"] * shapes["head_dim"], "V": shapes["vocab_size"]}


@dataclass(frozen=True)
class ParamCounts:
    """A model's parameters: all of them, those in matrix multiplies (decoder linears and lm_head), the decoder linears
    alone, LoRA's adapters (all-linear at the rank; None where hardware.lora_params cannot say), the trainable ones
    (all for full fine-tuning, else the adapters) and the decoder layers."""

    total: int
    matmul: int
    decoder_linears: int
    lora: int | None
    trainable: int | None
    layers: int


def param_counts(shapes: hardware.ModelShapes, method: str, lora_rank: int) -> ParamCounts:
    total = hardware.total_params(shapes)
    matmul = hardware.matmul_params(shapes)
    decoder_linears = matmul - shapes["hidden_size"] * shapes["vocab_size"]
    lora = hardware.lora_params(shapes, {"lora_rank": lora_rank, "target_modules": "all-linear"})
    return ParamCounts(total=total, matmul=matmul, decoder_linears=decoder_linears, lora=lora,
                       trainable=total if method == "full" else lora, layers=int(shapes["num_hidden_layers"]))


@dataclass(frozen=True)
class ActivationBytes:
    """Live activation bytes per token of a micro-batch at its peak (activation_bytes_per_token): stored (what stays
    alive across the step), the final norm's (and Liger's input gradient), the loss's logits (or Liger's chunk), one
    layer's saved tensors, the working set on top at the peak, and their total (stored + final norm + working)."""

    stored_per_token: float
    final_norm_per_token: float
    logits_per_token: float
    layer_per_token: float
    working_per_token: float
    total_per_token: float


def activation_bytes_per_token(shapes: hardware.ModelShapes, method: str, gradient_checkpointing: bool, batch: int,
                               seq_len: int, c: Constants | None = None, padding_free: bool = False,
                               liger: bool = False, tokens: float | None = None,
                               attn_impl: str | None = None) -> ActivationBytes:
    """Live activation bytes per token of a micro-batch at its peak, and the pieces it is made of. TOKENS is the
    micro-batch's length in tokens (padded: batch x seq_len; padding-free: the packed row), which sizes Liger's
    cross-entropy chunk. stored: what stays alive across the step (checkpointed inputs, or every layer's saved
    tensors without checkpointing; Liger's input gradient); working: the transient on top at the peak (the loss's
    logits, the recomputed layer's backward, or Liger's chunk)."""
    c = c or constants()
    d = _dims(shapes)
    n_layers = shapes["num_hidden_layers"]
    a = "memory.activations."
    layer = _coef(c[a + "layer_full"] if method == "full" else c[a + "layer_lora"], d)
    if method != "full":
        layer += _coef(c[a + "layer_lora_dropout"], d)
    if method == "qlora":
        layer += _coef(c[a + "layer_qlora_extra"], d)
    if liger:  # Liger's RMSNorm saves its bf16 input, its SwiGLU the two bf16 projections
        layer += _coef(c[a + "liger_layer"], d)
    if is_flash(attn_impl):  # FlashAttention takes packed rows and padding without a mask: no repeated k/v
        pass
    elif padding_free:  # the packed row's block-diagonal mask: SDPA gets a mask, so k and v are repeated to all heads
        layer += _coef(c[a + "padded_batch_kv_repeat"], d)
    elif batch > 1:  # padded batch: attention mask -> k, v repeated to all heads, bf16 bias B x 1 x T x T
        layer += _coef(c[a + "padded_batch_kv_repeat"], d) + c[a + "padded_batch_mask_bytes_per_seq_token"] * seq_len
    n_tokens = float(tokens) if tokens else float(batch * seq_len)
    if liger:  # fused linear cross-entropy: no logits tensor; its input gradient is kept from forward to backward
        stored_loss = _coef(c[a + "liger_flce_per_token"], d)
        inc = math.ceil(d["V"] / d["h"])
        chunk = 2 ** math.ceil(math.log2(max(math.ceil(n_tokens / inc), 1)))
        logits = _coef(c[a + "liger_flce_chunk"], d) * min(chunk, n_tokens) / n_tokens
    else:
        stored_loss = 0.0
        logits = _coef(c[a + "logits"], d) * c[a + "logits_token_fraction"]
    final = _coef(c[a + "final_norm"], d) + stored_loss
    if gradient_checkpointing:
        stored = n_layers * _coef(c[a + "checkpoint_per_layer"], d)
        working = max(logits, layer + _coef(c[a + "backward_transient_layer"], d))
    else:
        stored = n_layers * layer
        working = logits
    return ActivationBytes(stored_per_token=stored, final_norm_per_token=final, logits_per_token=logits,
                           layer_per_token=layer, working_per_token=working, total_per_token=stored + final + working)


FLASH_IMPLS = ("flash_attn", "flash_attention_2", "flash_attention_3", "fa2", "fa3")


def is_flash(attn_impl: str | None) -> bool:
    """ms-swift's --attn_impl names of FlashAttention (its own, and transformers')."""
    return str(attn_impl or "").lower() in FLASH_IMPLS


def cache_factors(gradient_checkpointing: bool, liger: bool, c: Constants | None = None,
                  longest_first: bool = False) -> tuple[float, float]:
    """(stored, working) allocator factors: what ms-swift logs (max_memory_reserved) over the live bytes. The loss's
    logits alone at the peak (checkpointing on, no Liger) leave the most cached blocks of earlier batches' sizes;
    LONGEST_FIRST (no micro-batch larger than the first) leaves none of other sizes."""
    c = c or constants()
    m = "memory."
    if longest_first:
        working = c[m + "allocator_cache_factor_longest_first"]
    elif gradient_checkpointing and not liger:
        working = c[m + "allocator_cache_factor"]
    else:
        working = c[m + "allocator_cache_factor_other"]
    return c[m + "allocator_cache_factor_stored"], working


@dataclass(frozen=True)
class Memory:
    """The memory estimate of one GPU's micro-batch, in GiB (memory()): the static parts (weights, adapters, gradients,
    optimizer states), the activations (their pieces by name, which depend on the recipe, the stored and the working
    ones, the loss's logits), the allocator's cache and the CUDA context; the live peak, the peak ms-swift would log
    (max_memory_reserved) and what must fit (needs); the micro-batch's tokens, its flags and the parameters."""

    weights_gib: float
    adapters_gib: float
    gradients_gib: float
    optimizer_gib: float
    activations_gib: float
    activations_detail_gib: dict[str, float]  # piece -> GiB; the pieces' names depend on checkpointing and Liger
    stored_activations_gib: float
    working_activations_gib: float
    logits_loss_gib: float
    allocator_cache_gib: float
    cuda_context_gib: float
    live_peak_gib: float
    peak_mem_gib: float
    needs_gib: float
    tokens_per_micro_batch: float
    padding_free: bool
    liger: bool
    params: ParamCounts

    def breakdown(self) -> MemoryBreakdown:
        """The parts the peak is made of (the planner's `breakdown`)."""
        return MemoryBreakdown(self.weights_gib, self.adapters_gib, self.gradients_gib, self.optimizer_gib,
                               self.activations_gib, self.allocator_cache_gib, self.cuda_context_gib)


@dataclass(frozen=True)
class MemoryBreakdown:
    """The parts of a class's peak in GiB, as `swiftbench plan --json` gives them (PlanRow.breakdown)."""

    weights_gib: float
    adapters_gib: float
    gradients_gib: float
    optimizer_gib: float
    activations_gib: float
    allocator_cache_gib: float
    cuda_context_gib: float


def memory(shapes: hardware.ModelShapes, method: str = "lora", seq_len: int = 2048, batch: int = 1,
           gradient_checkpointing: bool = True, lora_rank: int = 8, c: Constants | None = None,
           padding_free: bool = False, liger: bool = False, packed_tokens: int | None = None,
           attn_impl: str | None = None, longest_first: bool = False) -> Memory:
    """Memory estimate in GiB: the breakdown, the live peak, the peak ms-swift would log, what must fit. A padded
    micro-batch holds batch x seq_len tokens; a padding-free one PACKED_TOKENS (its longest packed row; without it,
    batch x seq_len, every sample as long as the longest). LONGEST_FIRST: no micro-batch is larger than the first
    (cache_factors)."""
    c = c or constants()
    m = "memory."
    p = param_counts(shapes, method, lora_rank)
    bf16 = c[m + "weight_bytes.bf16"]
    if method == "qlora":
        weights = p.decoder_linears * c[m + "weight_bytes.nf4"] + (p.total - p.decoder_linears) * bf16
    else:
        weights = p.total * bf16
    if method == "full":
        adapters = 0.0
        assert p.trainable is not None  # full: every parameter
        grads = p.trainable * c[m + "full.grad_bytes"]
        optim = p.trainable * c[m + "full.adam_state_bytes"]
    else:
        assert p.lora is not None  # an int rank on all linears
        adapters = p.lora * c[m + "lora.param_bytes"]
        grads = p.lora * c[m + "lora.grad_bytes"]
        optim = p.lora * c[m + "lora.adam_state_bytes"]
    tokens = float(packed_tokens) if padding_free and packed_tokens else float(batch * seq_len)
    per_token = activation_bytes_per_token(shapes, method, gradient_checkpointing, batch, seq_len, c,
                                           padding_free=padding_free, liger=liger, tokens=tokens,
                                           attn_impl=attn_impl)
    stored = (per_token.stored_per_token + per_token.final_norm_per_token) * tokens
    working = per_token.working_per_token * tokens
    act = stored + working
    static = weights + adapters + grads + optim
    k_stored, k_working = cache_factors(gradient_checkpointing, liger, c, longest_first)
    reserved = k_stored * stored + k_working * working
    context = c[m + "cuda_context_gib"] * GIB
    working_name = ("logits_loss" if not liger else "fused_cross_entropy_chunk") \
        if per_token.working_per_token == per_token.logits_per_token else "recomputed_layer"
    return Memory(
        weights_gib=weights / GIB, adapters_gib=adapters / GIB, gradients_gib=grads / GIB,
        optimizer_gib=optim / GIB, activations_gib=act / GIB,
        activations_detail_gib={
            "checkpointed_layer_inputs" if gradient_checkpointing else "saved_layer_tensors":
                per_token.stored_per_token * tokens / GIB,
            "final_norm" + ("_and_liger_input_grad" if liger else ""): per_token.final_norm_per_token * tokens / GIB,
            working_name: working / GIB,
        },
        stored_activations_gib=stored / GIB, working_activations_gib=working / GIB,
        logits_loss_gib=per_token.logits_per_token * tokens / GIB,
        allocator_cache_gib=(reserved - act) / GIB,
        cuda_context_gib=context / GIB,
        live_peak_gib=(static + act) / GIB,
        peak_mem_gib=(static + reserved) / GIB,
        needs_gib=(static + (1 + c[m + "tight_fragmentation"]) * act + context) / GIB,
        tokens_per_micro_batch=tokens,
        padding_free=padding_free, liger=liger,
        params=p,
    )


def largest_batch(shapes: hardware.ModelShapes, method: str, seq_len: int, gradient_checkpointing: bool, lora_rank: int,
                  capacity: float, c: Constants | None = None, limit: int = 4096, padding_free: bool = False,
                  liger: bool = False, packed_tokens_of: Callable[[int], int] | None = None) -> int:
    """The largest per-device batch whose `needs` fits CAPACITY GiB (0: not even batch 1; at most LIMIT): padded
    rows with every sample SEQ_LEN long, or padding-free rows of PACKED_TOKENS_OF(batch) tokens (the longest packed
    row of that batch; without it batch x SEQ_LEN). The memory model grows with the batch, so a doubling then
    bisection finds it."""
    c = c or constants()

    def fits(b: int) -> bool:
        packed = packed_tokens_of(b) if padding_free and packed_tokens_of else None
        return memory(shapes, method, seq_len, b, gradient_checkpointing, lora_rank, c, padding_free=padding_free,
                      liger=liger, packed_tokens=packed).needs_gib <= capacity

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


def capacity_gib(spec: hardware.GpuClass) -> float:
    if spec.memory_gib:
        return float(spec.memory_gib)
    return float(spec.capacity_gb) * 1e9 / GIB


def fit_verdict(needs_gib: float, activations_gib: float, capacity: float, capped: bool = False,
                c: Constants | None = None) -> str:
    """yes, tight or no: NEEDS_GIB (static + (1 + tight_fragmentation) x activations + CUDA context) within CAPACITY
    GiB is yes; the live peak alone (the same without the fragmentation margin) above it is no; in between, tight:
    runs under an allocator cap there both trained (cap24-bs8, qcap24-bs4) and ran out of memory (lcap24-len2048-bs2),
    so the model cannot call it. CAPPED: CAPACITY is an allocator cap (experiments/launch.py --mem-cap-gib), which
    the CUDA context sits outside of."""
    c = c or constants()
    context = c["memory.cuda_context_gib"] if capped else 0.0
    sure, live = needs_gib - context, needs_gib - context - c["memory.tight_fragmentation"] * activations_gib
    return "yes" if sure <= capacity else "no" if live > capacity else "tight"


def flops_per_token(shapes: hardware.ModelShapes, method: str, gradient_checkpointing: bool, lora_rank: int) -> float:
    """Hardware FLOPs per trained token (recompute included): analysis.measure.flops's formula, the one MFU uses."""
    p = param_counts(shapes, method, lora_rank)
    return measure_flops.flops_per_token(p.matmul, p.lora or 0, method, gradient_checkpointing).hardware


def run_method(args: dict) -> str | None:
    tuner = args.get("tuner_type") or args.get("train_type") or args.get("sft_type")
    if tuner == "lora" and (args.get("quant_bits") == 4 or args.get("quantization_bit") == 4):
        return "qlora"
    return tuner


@dataclass(frozen=True)
class RunFlags:
    """The memory-relevant flags of a run's args.json: padding_free, liger (use_liger_kernel), attn_impl."""

    padding_free: bool
    liger: bool
    attn_impl: str | None


def run_flags(args: dict) -> RunFlags:
    """The memory-relevant flags of a run's args.json (RunFlags)."""
    return RunFlags(bool(args.get("padding_free")), bool(args.get("use_liger_kernel")), args.get("attn_impl"))


def longest_micro_batch(rec: RunRecord, whole_epoch: bool = False) -> int | None:
    """Tokens of the run's largest micro-batch on one GPU: a padding-free run's longest packed row, a padded run's
    largest padded micro-batch; from schedule.jsonl (every step of the epoch, WHOLE_EPOCH) or tokens.jsonl (the steps
    the run trained). Exact where a step is one micro-batch on one GPU; with several micro-batches or GPUs per step,
    each step's mean micro-batch (a lower bound). None where neither file has counts, or a padded run accumulates
    (its largest micro-batch is batch x its longest sample: the caller's)."""
    padded = not bool((rec.args or {}).get("padding_free"))
    ws = rec.world_size or 1
    rows: list[tuple[int, int]] = []  # (tokens of the step, micro-batches x GPUs)
    if whole_epoch and rec.schedule:
        rows = [(s[Tokens.PADDED_TOKENS] if padded else s[Tokens.TOKENS], s[Tokens.MICRO_BATCHES] * ws)
                for s in rec.schedule]
    else:
        by_step = (rec.padded_by_step if padded else rec.tokens_by_step) or {}
        ga = rec.grad_accum or 1
        rows = [(t, ga * ws) for t in by_step.values()]
    if not rows or (padded and any(n > 1 for _, n in rows)):
        return None
    return max(math.ceil(t / n) for t, n in rows)


@dataclass(frozen=True)
class PerGpuMemory:
    """One GPU's memory in GiB when GPUS share the job the way PARALLEL does (per_gpu_memory)."""

    gpus: int
    parallel: str
    weights_gib: float
    adapters_gib: float
    gradients_gib: float
    optimizer_gib: float
    sharding_extra_gib: float
    activations_gib: float
    peak_mem_gib: float
    needs_gib: float


def per_gpu_memory(mem: Memory, gpus: int = 1, parallel: str = "ddp", c: Constants | None = None) -> PerGpuMemory:
    """MEM (memory(), one GPU's work at its per-device batch) spread over GPUS the way PARALLEL shares it, in GiB:
    DDP keeps everything on every GPU plus its gradient buckets; ZeRO-2 partitions gradients, optimizer states and an
    fp32 master copy of the trainables, plus its two buckets; ZeRO-3 also partitions the weights and adapters and
    gathers one layer at a time. Activations are per GPU at the per-device batch in every layout; under ZeRO their
    stored part is cached by zero_stored_cache_factor."""
    c = c or constants()
    if parallel not in PARALLEL_LAYOUTS:
        raise InputError(None, f"parallel layout {parallel!r}: use one of {', '.join(PARALLEL_LAYOUTS)}")
    d = "memory.data_parallel."
    n = max(int(gpus), 1)
    trainable = mem.params.lora if mem.adapters_gib else mem.params.trainable
    assert trainable is not None  # memory() of this job counted them
    weights, adapters, grads, optim = mem.weights_gib, mem.adapters_gib, mem.gradients_gib, mem.optimizer_gib
    extra = 0.0
    if parallel == "ddp":
        if n > 1:
            extra = c[d + "ddp_grad_buckets"] * grads
    else:
        grads, optim = grads / n, optim / n
        extra = (trainable * c[d + "zero_master_bytes"] / n + 2 * c[d + "zero_bucket_elements"] * 2) / GIB
        if parallel == "zero3":
            per_layer = weights / mem.params.layers
            live = min(c[d + "zero3_live_params"] * 2 / GIB, 2 * per_layer)
            weights, adapters = weights / n + live, adapters / n
    static = weights + adapters + grads + optim + extra
    act = mem.activations_gib
    reserved_act = mem.peak_mem_gib - sum((mem.weights_gib, mem.adapters_gib, mem.gradients_gib, mem.optimizer_gib))
    if parallel != "ddp":  # ZeRO's buckets in the backward: the stored activations' blocks are reused less
        reserved_act += (c[d + "zero_stored_cache_factor"] - c["memory.allocator_cache_factor_stored"]) \
            * mem.stored_activations_gib
    return PerGpuMemory(gpus=n, parallel=parallel, weights_gib=weights, adapters_gib=adapters, gradients_gib=grads,
                        optimizer_gib=optim, sharding_extra_gib=extra, activations_gib=act,
                        peak_mem_gib=static + reserved_act,
                        needs_gib=static + (1 + c["memory.tight_fragmentation"]) * act + mem.cuda_context_gib)
