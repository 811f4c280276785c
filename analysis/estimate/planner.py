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

Stays whole: the time chosen per class, its band, the fit, the cost and the suggestions are one PlanRow per class,
built from one _Job; the inputs are jobinputs.py's, the arithmetic workload.py's, the time models transfer.py's and
scaled.py's, the lengths lengths.py's, the prices prices.py's.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from analysis.estimate import epoch, scaled, transfer
from analysis.estimate import prices as price_tables
from analysis.estimate.constants import Constants
from analysis.estimate.jobinputs import METHODS as METHODS
from analysis.estimate.jobinputs import args_from_run as args_from_run
from analysis.estimate.jobinputs import hw_list, positive_int
from analysis.estimate.jobinputs import resolve_model as resolve_model
from analysis.estimate.lengths import Lengths, batch_stats, job_lengths
from analysis.estimate.prices import DEFAULT_PRICES
from analysis.estimate.transfer import ProfiledStep
from analysis.estimate.workload import GIB as GIB
from analysis.estimate.workload import PARALLEL_LAYOUTS as PARALLEL_LAYOUTS
from analysis.estimate.workload import Memory, MemoryBreakdown, PerGpuMemory, is_flash
from analysis.estimate.workload import activation_bytes_per_token as activation_bytes_per_token
from analysis.estimate.workload import cache_factors as cache_factors
from analysis.estimate.workload import capacity_gib as capacity_gib
from analysis.estimate.workload import constants as constants
from analysis.estimate.workload import fit_verdict as fit_verdict
from analysis.estimate.workload import flops_per_token as flops_per_token
from analysis.estimate.workload import largest_batch as largest_batch
from analysis.estimate.workload import memory as memory
from analysis.estimate.workload import param_counts as param_counts
from analysis.estimate.workload import per_gpu_memory as per_gpu_memory
from analysis.estimate.workload import run_flags as run_flags
from analysis.estimate.workload import run_method as run_method
from analysis.measure.steps import step_time
from analysis.parse.record import RunRecord
from analysis.parse.results import collect
from experiments.base import hardware, paths
from experiments.base.errors import InputError
from experiments.base.runfolder import Run

VALIDATED_METHODS = ("lora",)  # methods with committed measurements to check the memory model against


# --------------------------------------------------------------------------------------------- constants


# ------------------------------------------------------------------------------------------------ memory


# -------------------------------------------------------------------------------------------------- time


@dataclass(frozen=True)
class MicroStep:
    """The roofline's micro-step: compute and weight-read seconds, the host overhead, their sum (max(compute, reads) +
    host), which bound it, and the FLOPs per token it rests on."""

    compute_s: float
    weight_reads_s: float
    host_overhead_s: float
    micro_step_s: float
    bound: str
    flops_per_token: float


def roofline_micro_step(spec: hardware.GpuClass, shapes: hardware.ModelShapes, method: str, tokens: float,
                        gradient_checkpointing: bool, lora_rank: int, c: Constants | None = None,
                        weights_bytes: float | None = None) -> MicroStep:
    """Seconds of one micro-step: max(compute, weight reads) + host overhead."""
    c = c or constants()
    fpt = flops_per_token(shapes, method, gradient_checkpointing, lora_rank)
    if weights_bytes is None:
        weights_bytes = memory(shapes, method, 1, 1, gradient_checkpointing, lora_rank, c).weights_gib * GIB
    passes = c["time.weight_passes"]["gradient_checkpointing" if gradient_checkpointing else "no_checkpointing"]
    compute = fpt * tokens / (spec.peak_tflops * 1e12 * c["time.achievable_fraction"])
    reads = weights_bytes * passes / (spec.peak_gbs * 1e9)
    host = c["time.host_overhead_s"]
    return MicroStep(compute, reads, host, max(compute, reads) + host, "compute" if compute >= reads else "memory", fpt)


def optimizer_step_s(spec: hardware.GpuClass, method: str, trainable: int, c: Constants | None = None) -> float:
    c = c or constants()
    return trainable * c["time.optimizer_bytes_per_param"][method] / (spec.peak_gbs * 1e9)


# ---------------------------------------------------------------------------------------- measured runs


def _model_name(rec: RunRecord) -> str | None:
    return Path(str(rec.model).rstrip("/")).name.lower() if rec.model else None


def run_tokens_per_sample(rec: RunRecord, shapes: hardware.ModelShapes) -> float | None:
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
    padding-free, Liger; one GPU, eager SDPA attention, no length grouping) with a steady median step; never an
    imported log (`swiftbench import`: its GPU is the user's word, shown under "Your runs")."""
    out = []
    for r in records:
        if not r.ok or (hw is not None and r.hw != hw) or step_time(r).median is None:
            continue
        if r.run_status.get(Run.IMPORTED):  # an imported log's GPU is its owner's word: "Your runs", not a class's time
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
        if (flags.padding_free, flags.liger) != (padding_free, liger) or args.get("torch_compile") \
                or (flags.attn_impl or "sdpa") != (attn_impl or "sdpa") or args.get("group_by_length") \
                or args.get("packing"):
            continue
        out.append(r)
    # the least cut run first (most steps), newest among equals, as the tables pick it
    return sorted(out, key=lambda r: (r.global_steps or 0, r.run), reverse=True)


def _collect(results: str | Path | None) -> tuple[list[RunRecord], str | None]:
    if results is None:
        results = paths.default_results()  # ./results, else the committed runs packaged with swiftbench
        if not results.is_dir():
            return [], None
    return collect(results), paths.results_label(results)


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
        low, high = transfer.band_range(parts.total_s, key=key)
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


@dataclass(frozen=True)
class Roofline:
    """The roofline's own figures for a class, also where another time is used (the report's predicted rows): the
    optimizer step and its micro-step's parts, the GPU's busy share, and the rates and total time they give."""

    step_time_s: float
    micro_step_s: float
    compute_s: float
    weight_reads_s: float
    host_overhead_s: float
    optimizer_s: float
    bound: str
    flops_per_token: float
    gpu_busy_frac: float
    ms_per_sample: float
    tokens_per_s: float
    total_time_s: float


@dataclass(frozen=True)
class Suggestion:
    """A change of `swift sft` flags that makes the job fit a class (suggestions): what it needs, and the fit."""

    change: str
    needs_gib: float
    fit: str


@dataclass(frozen=True)
class PlanRow:
    """One GPU class's estimate (estimate): its memory and fit, the job, the time per step and in total with the
    model's band and where it comes from, the roofline's own figures, the cost, the changes that would make it fit,
    and the assumptions. `swiftbench plan --json` prints these fields; a field added is a key added."""

    hw: str
    name: str
    method: str
    model: str
    capacity_gib: float
    peak_mem_gib: float
    live_peak_gib: float
    needs_gib: float
    fits: bool
    fit: str
    headroom_gib: float
    logged_peak_gib: float | None  # what ms-swift would log there: the allocator cannot reserve more than the GPU has
    breakdown: MemoryBreakdown
    activations_detail_gib: dict[str, float]
    seq_len: int
    batch: int
    grad_accum: int
    max_length: int
    gradient_checkpointing: bool
    padding_free: bool
    liger: bool
    tokens_per_micro_batch: float
    lora_rank: int | None
    tokens_per_sample: float
    data: str
    steps: int
    samples: int
    epochs: int
    max_batch: int
    step_time_s: float | None
    total_time_s: float | None
    total_low_s: float | None
    total_high_s: float | None
    epoch_basis: str
    startup_s: float | None   # model load and data preparation before the epoch (analysis.estimate.epoch)
    job_s: float | None       # start-up + epoch: what a user waits for and pays
    startup_basis: str
    fit_basis: str
    total_hours: float | None  # the job's GPU-hours (start-up + epoch), per GPU
    ms_per_sample: float | None
    tokens_per_s: float | None
    time_source: str
    time_kind: str | None
    time_note: str | None
    time_parts: transfer.StepParts | None
    roofline: Roofline
    gpus: int
    parallel: str
    per_gpu: PerGpuMemory
    price_per_gpu_hour: float | None
    currency: str | None
    cost: float | None
    suggestions: list[Suggestion]
    estimate_only: bool
    assumptions: list[str]


@dataclass(frozen=True)
class _Job:
    """What estimate() knows of the job before it looks at a class: the recipe and data, its memory, the committed
    runs of it, the time model's sources for it, the price table and the assumptions."""

    shapes: hardware.ModelShapes
    method: str
    seq: int
    batch: int
    grad_accum: int
    max_length: int
    gradient_checkpointing: bool
    lora_rank: int
    padding_free: bool
    liger: bool
    samples: int
    epochs: int
    gpus: int
    parallel: str
    c: Constants
    data: Lengths
    mem: Memory
    sharded: PerGpuMemory
    packed_of: Callable[[int], int]
    mean: float
    steps: int
    same_data: list[RunRecord]
    recipe_runs: list[RunRecord]
    profiled: ProfiledStep | None
    synth: ProfiledStep | None
    synth_note: str | None
    factor: float
    epoch_basis: str
    price_table: dict
    currency: str | None
    priced: bool            # a price table was given (the built-in one's prices are in USD)
    assumptions: list[str]


def _check_job(method: str, max_length: int, seq_len: int | None, batch: int, grad_accum: int, samples: int,
               epochs: int, lora_rank: int, mean_len: int | None, gradient_checkpointing: bool, padding_free: bool,
               liger: bool) -> None:
    """The job's inputs, each within what a job can be: bad input, one line, otherwise."""
    if method not in METHODS:
        raise InputError(None, f"unknown method {method!r} (known: {', '.join(METHODS)})")
    for name, value in (("--max-length", max_length), ("--batch", batch), ("--grad-accum", grad_accum),
                        ("--samples", samples), ("--epochs", epochs), ("--lora-rank", lora_rank)):
        positive_int(name, value)
    if seq_len is not None and positive_int("--seq-len", seq_len) > max_length:
        raise InputError(None, f"--seq-len {seq_len} is longer than --max-length {max_length} "
                               "(ms-swift drops or truncates longer samples)")
    if mean_len is not None and positive_int("--mean-len", mean_len) > (seq_len or max_length):
        raise InputError(None, f"--mean-len {mean_len} is longer than --seq-len {seq_len or max_length}")
    for name, flag in (("--gradient-checkpointing", gradient_checkpointing), ("--padding-free", padding_free),
                       ("--liger", liger)):
        if not isinstance(flag, bool):
            raise InputError(None, f"{name} must be true or false, got {flag!r}")


def _epoch_factor(same_data: list[RunRecord], steps: int, profile_hw: str) -> tuple[float, str]:
    """What a full epoch of the recipe on the profiled class adds to its steady steps (warm-up, evals, saves), and the
    sentence that says where the epoch comes from."""
    full = next((r for r in same_data if r.hw == profile_hw and transfer.runtime_factor(r)), None)
    if full is not None and (measured_factor := transfer.runtime_factor(full)):
        return measured_factor, (f"steady step x {steps} steps x {measured_factor:.3f} (train_runtime / steady steps "
                                 f"of {_run_label(full)}: warm-up, evals and saves)")
    return 1.0, f"steady step x {steps} steps (no evals, saves or warm-up: no full epoch of the recipe is committed)"


def estimate(model: str, method: str = "lora", max_length: int = 2048, seq_len: int | None = None,
             batch: int = 1, grad_accum: int = 16, samples: int = 1500, epochs: int = 1,
             hw: str | list[str] | None = None, prices: str | Path | dict | None = None,
             gradient_checkpointing: bool = True, lora_rank: int = 8, results: str | Path | None = None,
             mean_len: int | None = None, gpus: int = 1, parallel: str = "ddp", padding_free: bool = False,
             liger: bool = False, packed_len: int | None = None,
             lengths: str | Path | Lengths | None = None, from_run: str | None = None,
             attn_impl: str | None = None) -> list[PlanRow]:
    """One estimate per GPU class: memory (breakdown, peak, fits), step and total time with the model's band, cost
    (the built-in price table, data/prices.yaml, unless PRICES names another). The data: LENGTHS (a file
    of sample lengths), or MEAN_LEN and SEQ_LEN (the longest sample), else the recipe's data. PADDING_FREE rows hold
    their batch's samples end to end (PACKED_LEN: the longest such row, where a run measured it), LIGER: Liger's
    kernels and fused cross-entropy. GPUS > 1 or a ZeRO PARALLEL: memory per GPU (per_gpu_memory), BATCH and
    GRAD_ACCUM per GPU, the time assuming perfect scaling. FROM_RUN (hw/experiment/run, set by args_from_run): that
    run first where it is one of the recipe's committed runs (its step, profile and train_runtime)."""
    _check_job(method, max_length, seq_len, batch, grad_accum, samples, epochs, lora_rank, mean_len,
               gradient_checkpointing, padding_free, liger)
    keys = hw_list(hw)
    price_table, currency = (prices, None) if isinstance(prices, dict) \
        else price_tables.price_table(prices or DEFAULT_PRICES)
    shapes = resolve_model(model)
    c = constants()
    positive_int("--gpus", gpus)
    data = job_lengths(max_length, seq_len, mean_len, lengths, c)
    seq = min(seq_len or data.longest, max_length)
    stats = batch_stats(data, batch, padding_free, samples)
    packed = (packed_len or stats.max_tokens) if padding_free else None
    mem = memory(shapes, method, seq, batch, gradient_checkpointing, lora_rank, c, padding_free=padding_free,
                 liger=liger, packed_tokens=packed, attn_impl=attn_impl)
    sharded = per_gpu_memory(mem, gpus, parallel, c)
    if gpus > 1 or parallel != "ddp":  # what one GPU holds decides the fit
        mem = replace(mem, peak_mem_gib=sharded.peak_mem_gib, needs_gib=sharded.needs_gib)
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
    steps = math.ceil(samples / (batch * grad_accum * gpus)) * epochs
    profile_hw = transfer.profiled_class()
    profiled = next((transfer.profile_step(r) for r in same_data if r.hw == profile_hw and transfer.transferable(r)),
                    None)
    # a full epoch of the recipe on the H200: what its warm-up, evals and saves add to the steady steps, on every class
    factor, epoch_basis = _epoch_factor(same_data, steps, profile_hw)
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
    job = _Job(shapes, method, seq, batch, grad_accum, max_length, gradient_checkpointing, lora_rank, padding_free,
               liger, samples, epochs, gpus, parallel, c, data, mem, sharded, packed_of, mean, steps, same_data,
               recipe_runs, profiled, synth, synth_note, factor, epoch_basis, price_table or {}, currency,
               prices is not None, assumptions)
    return [_class_row(job, key) for key in keys]


def _modelled_step(job: _Job, key: str, measured: RunRecord, step_s: float, note: str | None,
                   roof_step: float) -> tuple[ClassTime, float, str]:
    """A cut run on KEY measured a step, but the epoch is the profile's: the step the epoch rests on, the cut run's
    step named in the note (plan --checks (5) sets the two side by side)."""
    t = _class_time(key, None, job.profiled, job.synth, roof_step)
    return t, t.step_s, (f"{note}; a cut run on this class, {_run_label(measured)}, measured a {step_s:.3f} s steady "
                         f"step where the model gives {t.step_s:.3f} s (plan --checks (5))")


def _class_row(job: _Job, key: str) -> PlanRow:
    """The estimate of JOB on class KEY: its fit, then (where it fits) its time and cost."""
    spec = hardware.require(key)
    cap = capacity_gib(spec)
    mem, c = job.mem, job.c
    n = job.batch * job.grad_accum
    roof = roofline_micro_step(spec, job.shapes, job.method, job.batch * job.mean, job.gradient_checkpointing,
                               job.lora_rank, c, mem.weights_gib * GIB)
    assert mem.params.trainable is not None  # memory() counted them
    opt_s = optimizer_step_s(spec, job.method, mem.params.trainable, c)
    roof_step = job.grad_accum * roof.micro_step_s + opt_s
    gpu_s = job.grad_accum * max(roof.compute_s, roof.weight_reads_s) + opt_s  # the rest is host overhead
    measured = next((r for r in job.same_data if r.hw == key), None)
    other = next((r for r in job.recipe_runs if r.hw == key), None)
    t = _class_time(key, measured, job.profiled, job.synth, roof_step)
    time_note = t.note or job.synth_note
    if measured is None and other is not None:
        time_note = (f"measured run {_run_label(other)} trained other data (mean {other.train_tokens_mean or 0:.0f}"
                     f" tokens/sample, not {job.data.mean:.0f}): modelled instead")
    fit = fit_verdict(mem.needs_gib, mem.activations_gib, cap, c=c)
    fit_basis = f"memory model: needs {mem.needs_gib:.1f} GiB of {cap:.2f}"
    single = job.gpus == 1 and job.parallel == "ddp"
    shown = epoch.measured_fit(job.same_data, cap) if single else None
    if shown is not None and shown.fits:  # a committed full epoch trained within this capacity: measured, not modelled
        fit, fit_basis = "yes", f"measured: {shown.basis}"
    fits = fit != "no"
    step_s: float | None = t.step_s if fits else None
    if not fits:  # no time and no cost for a job that cannot run (the roofline below keeps its figures)
        time_note = None
    total_s = step_s * job.steps * job.factor if step_s is not None else None
    low_s = t.low_s * job.steps * job.factor if step_s is not None else None
    high_s = t.high_s * job.steps * job.factor if step_s is not None else None
    source, kind = t.source, t.kind
    # the recipe's committed full epochs (same data, one GPU): the one estimator's epoch, as the answer's
    est, _why = epoch.try_epoch_on(epoch.same_job(job.same_data, job.steps), key) if single and fits \
        else (None, None)
    startup_s = est.startup_s if est is not None else None
    if est is not None:
        total_s, low_s, high_s, kind, time_note = est.epoch_s, est.low_s, est.high_s, est.kind, est.basis
        if not est.measured and measured is not None and step_s is not None:
            t, step_s, time_note = _modelled_step(job, key, measured, step_s, time_note, roof_step)
        based = next((r for r in job.same_data if r.run == est.run), None)
        label = _run_label(based) if based is not None else str(est.run)
        source = f"measured: {est.rests_on}" if est.measured else f"profile of {transfer.without_host(label)}"
    job_s = total_s + (startup_s or 0.0) if total_s is not None else None
    price = job.price_table.get(key)
    rates = _rates(step_s, n, job.mean, job.steps) if step_s is not None else None
    roof_rates = _rates(roof_step, n, job.mean, job.steps)
    return PlanRow(
        hw=key, name=spec.name, method=job.method, model=job.shapes["name"], capacity_gib=cap,
        peak_mem_gib=mem.peak_mem_gib, live_peak_gib=mem.live_peak_gib, needs_gib=mem.needs_gib, fits=fits,
        fit=fit, headroom_gib=cap - mem.needs_gib,
        logged_peak_gib=min(mem.peak_mem_gib, cap) if fits else None,
        breakdown=mem.breakdown(),
        activations_detail_gib=mem.activations_detail_gib, seq_len=job.seq, batch=job.batch,
        grad_accum=job.grad_accum, max_length=job.max_length, gradient_checkpointing=job.gradient_checkpointing,
        padding_free=job.padding_free, liger=job.liger, tokens_per_micro_batch=mem.tokens_per_micro_batch,
        lora_rank=job.lora_rank if job.method != "full" else None, tokens_per_sample=job.mean,
        data=job.data.source, steps=job.steps, samples=job.samples, epochs=job.epochs,
        max_batch=largest_batch(job.shapes, job.method, job.seq, job.gradient_checkpointing, job.lora_rank, cap, c,
                                padding_free=job.padding_free, liger=job.liger, packed_tokens_of=job.packed_of),
        step_time_s=step_s, total_time_s=total_s, total_low_s=low_s, total_high_s=high_s,
        epoch_basis=est.basis if est is not None else job.epoch_basis, startup_s=startup_s, job_s=job_s,
        startup_basis=est.startup_basis if est is not None else "no committed run of the recipe says",
        fit_basis=fit_basis, total_hours=job_s / 3600 if job_s is not None else None,
        ms_per_sample=rates.ms_per_sample if rates else None, tokens_per_s=rates.tokens_per_s if rates else None,
        time_source=source if fits else "does not fit", time_kind=kind if fits else None, time_note=time_note,
        time_parts=t.parts if t.parts is not None and fits else None,
        roofline=Roofline(roof_step, roof.micro_step_s, roof.compute_s, roof.weight_reads_s, roof.host_overhead_s,
                          opt_s, roof.bound, roof.flops_per_token, gpu_s / roof_step, roof_rates.ms_per_sample,
                          roof_rates.tokens_per_s, roof_rates.total_time_s),
        gpus=job.gpus, parallel=job.parallel, per_gpu=job.sharded, price_per_gpu_hour=price,
        currency=(job.currency or "USD" if not job.priced else job.currency) if price is not None else None,
        cost=None if price is None or job_s is None else job_s / 3600 * price * job.gpus,
        suggestions=[] if fit == "yes" else suggestions(job.shapes, job.method, job.seq, job.batch, job.grad_accum,
                                                        job.gradient_checkpointing, job.lora_rank, job.padding_free,
                                                        job.liger, job.data, cap, c),
        estimate_only=job.method not in VALIDATED_METHODS, assumptions=job.assumptions)


def _same_data(rec: RunRecord, data: Lengths) -> bool:
    """Whether REC trained data like DATA: its log's mean sample length within 10 % of DATA's (a run without one
    counts as the recipe's)."""
    run_mean = rec.train_tokens_mean
    return run_mean is None or abs(data.mean - run_mean) <= 0.1 * run_mean


def suggestions(shapes: hardware.ModelShapes, method: str, seq: int, batch: int, grad_accum: int,
                gradient_checkpointing: bool, lora_rank: int, padding_free: bool, liger: bool, data: Lengths,
                capacity: float, c: Constants | None = None) -> list[Suggestion]:
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
        fit = fit_verdict(mem.needs_gib, mem.activations_gib, capacity, c=c)
        if fit == "yes":
            out.append(Suggestion(change, mem.needs_gib, fit))
    return out


@dataclass(frozen=True)
class _Rates:
    ms_per_sample: float
    tokens_per_s: float
    total_time_s: float


def _rates(step_s: float, samples_per_step: int, tokens_per_sample: float, steps: int) -> _Rates:
    """A step time in the units the measurements use: ms per sample, processed tokens/s (padding included: the
    tokens per sample the roofline assumed), and the time to run STEPS steps."""
    return _Rates(step_s / samples_per_step * 1000, samples_per_step * tokens_per_sample / step_s, step_s * steps)


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
        lines.append(f"{method}: LoRA r{rank} on all linears, {mem.params.lora:,} adapter parameters in fp32 "
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


