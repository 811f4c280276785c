"""The planner checked against the runs: estimates beside measurements, and the calibration of its two constants.

`estimates_vs_measurements` is the validation table the report shows; `calibrate` re-derives planner.yaml's
calibrated constants from the committed H200 seed and bs16 runs.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from pathlib import Path
from typing import cast

from analysis.estimate.constants import Constants
from analysis.estimate.planner import (
    GIB,
    METHODS,
    constants,
    fit_verdict,
    flops_per_token,
    memory,
    optimizer_step_s,
    per_gpu_memory,
    roofline_micro_step,
    run_flags,
    run_method,
    run_tokens_per_sample,
)
from analysis.estimate.validation_row import ValidationRow
from analysis.estimate.workload import Memory, longest_micro_batch
from analysis.measure.steps import step_time
from analysis.parse.record import RunRecord
from analysis.parse.results import collect
from experiments.base import hardware
from experiments.base.errors import InputError
from experiments.base.runfolder import Args, Launcher

MIN_STEADY_INTERVALS = 3  # a step time checked against the estimate rests on at least this many steady intervals


@dataclass(frozen=True)
class _RunMemory:
    """The memory model at one run's recipe: the sequence it met, its flags, the estimate for the micro-batch the
    whole epoch holds (mem) and for the one the run met (seen_mem, its tokens seen_tokens)."""

    seq: int
    gradient_checkpointing: bool
    padding_free: bool
    liger: bool
    mem: Memory
    seen_tokens: int
    seen_mem: Memory


def _run_memory(r: RunRecord, args: dict, shapes: hardware.ModelShapes, method: str, rank: int,
                longest: dict[tuple, float], c: Constants) -> _RunMemory:
    """The planner's memory model at R's recipe and data."""
    launcher = r.launcher
    # the launcher's --pad-to pads every row to that length: the run's sequence, whatever the data's lengths
    # a run killed before ms-swift's summary line: the longest sample of a finished run of the same data
    data_max = r.train_tokens_max or longest.get(_data_key(args))
    assert r.per_device_batch and r.max_length  # the caller checked both
    seq = min(int(launcher.get("pad_to") or data_max or r.max_length), int(r.max_length))
    gc = r.gradient_checkpointing is not False
    flags = run_flags(args)
    pf, liger = flags.padding_free, flags.liger
    # no micro-batch larger than the first: rows of one length, the longest first, or group_by_length's sampler
    first = bool(launcher.get("pad_to") or launcher.get("longest_first") or args.get("group_by_length"))
    # the micro-batch the whole epoch holds (padding-free: its longest packed row) and the one this run met
    seen_tokens = longest_micro_batch(r)
    packed = (longest_micro_batch(r, whole_epoch=True) or seen_tokens) if pf else None
    mem = _per_gpu(r, memory(shapes, method, seq, r.per_device_batch, gc, rank, c, padding_free=pf,
                             liger=liger, packed_tokens=packed, attn_impl=flags.attn_impl, longest_first=first), c)
    if seen_tokens and not launcher.get("pad_to"):
        seen_seq = seq if pf else max(math.ceil(seen_tokens / r.per_device_batch), 1)
        seen_mem = _per_gpu(r, memory(shapes, method, seen_seq, r.per_device_batch, gc, rank, c, padding_free=pf,
                                      liger=liger, packed_tokens=seen_tokens if pf else None,
                                      attn_impl=flags.attn_impl, longest_first=first), c)
        return _RunMemory(seq, gc, pf, liger, mem, seen_tokens, seen_mem)
    return _RunMemory(seq, gc, pf, liger, mem, int(mem.tokens_per_micro_batch), mem)


def _roofline_step(r: RunRecord, shapes: hardware.ModelShapes, method: str, gc: bool, rank: int, mem: Memory,
                   c: Constants) -> tuple[float | None, float | None]:
    """(tokens per sample the run processed, the roofline's optimizer step at them); None where unknown."""
    spec = hardware.get(r.hw) if r.hw else None
    if not (spec and spec.bf16_dense_tflops and r.grad_accum and r.per_device_batch):
        return None, None
    tps = run_tokens_per_sample(r, shapes) or r.train_tokens_mean
    if not tps:
        return tps, None
    roof = roofline_micro_step(spec, shapes, method, r.per_device_batch * tps, gc, rank, c, mem.weights_gib * GIB)
    assert mem.params.trainable is not None  # memory() counted them
    return tps, r.grad_accum * roof.micro_step_s + optimizer_step_s(spec, method, mem.params.trainable, c)


def _check_of(r: RunRecord, args: dict, cap: float | None) -> str:
    """What the run validates: uncapped runs of a modelled configuration the reserved peak (within 10 %), runs under
    an allocator cap whether it fits (live peak <= cap) as trained vs OOM says; else why nothing."""
    unmodelled = [f for f in ("packing", "group_by_length") if args.get(f)]
    if args.get("attn_impl") == "eager":
        unmodelled.append("attn_impl eager (the activations and FLOPs are SDPA's)")
    if args.get("torch_compile"):
        unmodelled.append("torch_compile (inductor's fused kernels save other tensors)")
    if r.parallel not in ("ddp", "single"):
        unmodelled.append(f"{r.parallel} (DeepSpeed's own buffers: the per-GPU model is checked on DDP only)")
    oom = r.status == "failed" and str(r.failure or "").startswith("OOM")
    if unmodelled:
        return "not modelled: " + ", ".join(unmodelled)
    if cap is not None:
        return "fits under the cap" if (r.status == "ok" or oom) else "not checked (run did not finish)"
    if r.status != "ok":
        return "not checked (run did not finish)"
    return "reserved peak" if r.peak_mem_gib else "not checked (no peak)"


def estimates_vs_measurements(results_dir: str | Path = "results"):
    """A pandas DataFrame, one row per run under RESULTS_DIR: measured peak vs the estimate at that run's own longest
    sequence (train_tokens_max capped at max_length) and batch, and measured step time vs the roofline at the
    tokens that run really processed (the roofline's two constants are fitted on these runs: a consistency check)."""
    import pandas as pd

    c = constants()
    records = collect(results_dir)
    longest = _longest_by_data(records)
    return pd.DataFrame([_validation_row(r, longest, c) for r in records])


def _validation_row(r: RunRecord, longest: dict[tuple, float], c: Constants) -> ValidationRow:
    """One run's row of estimates_vs_measurements."""
    args = (r.args or {})
    shapes = hardware.model_shapes(args, Path(r.path) if r.path else None)
    method = run_method(args)
    lr = args.get("lora_rank")
    rank = lr if isinstance(lr, int) else 8
    base: ValidationRow = {"hw": r.hw, "experiment": r.experiment, "run": r.run, "status": r.status,
            "method": method, "gpus": r.gpus, "parallel": r.parallel, "per_device_batch": r.per_device_batch,
            "grad_accum": r.grad_accum,
            "steps": r.global_steps, "measured_peak_gib": r.peak_mem_gib}
    if shapes is None or method not in METHODS or not r.per_device_batch or not r.max_length:
        return {**base, "note": "cannot estimate: model shapes, method, batch or max_length unknown"}
    assert method is not None  # one of METHODS
    m = _run_memory(r, args, shapes, method, rank, longest, c)
    mem, seen_mem, seq, gc, pf, liger = m.mem, m.seen_mem, m.seq, m.gradient_checkpointing, m.padding_free, m.liger
    note = []
    seen = (r.global_steps or 0) * (r.samples_per_step or 0)
    cut = bool(r.train_samples and seen < r.train_samples)
    if cut:
        note.append(f"cut run: saw {seen} of {r.train_samples} samples, so maybe not the {seq}-token one")
    tps, est_step = _roofline_step(r, shapes, method, gc, rank, mem, c)
    measured_step = step_time(r).median
    measured = r.peak_mem_gib
    cap = r.launcher.get(Launcher.MEM_CAP_GIB)
    check = _check_of(r, args, cap)
    if pf and longest_micro_batch(r) is None and not check.startswith("not modelled"):
        # a padding-free run without the launcher's token counts (a plain twin: no tokens.jsonl, no schedule.jsonl):
        # its packed micro-batch is unknown here, and max_length x batch is not what it held
        check = "not modelled: padding-free rows without counted tokens (a plain run)"
    ratio = mem.peak_mem_gib / measured if measured else None
    # A full run's peak is the estimate's target (within 10 %). A cut run (a prefix of the schedule) met only part
    # of the batches, and the reserved peak grows in steps as larger ones arrive, so its peak is a lower bound of
    # the full run's: the estimate must not be below it by more than 10 %.
    peak_ok = (bool(ratio >= 0.90 if cut else abs(ratio - 1) <= 0.10)
               if ratio and check == "reserved peak" else None)
    predicted_fits = bool(mem.live_peak_gib <= cap) if cap is not None else None
    # the planner's own verdict (yes / tight / no: planner.fit_verdict); the CUDA context sits outside a cap
    planner_fit = fit_verdict(mem.needs_gib, mem.activations_gib, cap, capped=True, c=c) \
        if cap is not None else None
    planner_fits = planner_fit == "yes" if cap is not None else None
    # every run with a logged peak: the estimate at the micro-batch it met, as ms-swift would log it (under an
    # allocator cap the allocator frees its cache before it exceeds the cap)
    seen_est = min(seen_mem.peak_mem_gib, cap) if cap is not None else seen_mem.peak_mem_gib
    seen_ratio = seen_est / measured if measured and not check.startswith("not modelled: padding-free rows without") \
        else None
    return {
        **base, "padding_free": pf, "liger": liger, "gradient_checkpointing": gc,
        "tokens_per_micro_batch": mem.tokens_per_micro_batch, "seen_tokens": m.seen_tokens,
        "seen_estimate_gib": seen_est, "seen_ratio": seen_ratio,
        "within_20pct": bool(abs(seen_ratio - 1) <= 0.20) if seen_ratio else None,
        "seq_len": seq, "estimated_peak_gib": mem.peak_mem_gib, "live_peak_gib": mem.live_peak_gib,
        "needs_gib": mem.needs_gib, "cap_gib": cap, "check": check,
        "predicted_fits": predicted_fits, "planner_fits": planner_fits, "planner_fit": planner_fit,
        # the verdict is wrong when a run trained under a `no` or ran out of memory under a `yes`
        "verdict_correct": (planner_fit != ("no" if r.status == "ok" else "yes"))
                           if check == "fits under the cap" else None,
        "fits_correct": (predicted_fits == (r.status == "ok")) if check == "fits under the cap" else None,
        "ratio": ratio,
        "peak_rule": ("not below by more than 10 % (cut run)" if cut else "within 10 %")
                     if check == "reserved peak" else None,
        "within_10pct": peak_ok,
        "tokens_per_sample": tps, "measured_step_s": measured_step, "estimated_step_s": est_step,
        "step_ratio": est_step / measured_step if est_step and measured_step else None,
        # the host overhead constant was fitted on runs with the recipes' 4 dataloader workers, made before host
        # fingerprints on the hosts of 2026-11-30; a run with a host id is from another session and host, where a
        # host-bound step runs 20 % faster or slower: its ratio is reported, not held to 15 %. A median
        # of fewer than MIN_STEADY_INTERVALS steady intervals is no measurement to hold an estimate to.
        "steady_intervals": step_time(r).n_intervals,
        "host": r.host_id,
        "step_checked": bool(check == "reserved peak" and est_step and measured_step
                             and gc and not pf and not liger  # the roofline's configuration
                             and math.isfinite(measured_step)
                             and step_time(r).n_intervals >= MIN_STEADY_INTERVALS
                             and int(args.get("dataloader_num_workers") or 0) == 4 and r.host_id is None),
        "note": "; ".join(note) or None,
    }


def _data_key(args: dict) -> tuple:
    """What makes two runs' training data the same: the model (its tokenizer), the dataset files' names with their
    sample counts (the runner copies them into a folder per run) and max_length."""
    data = args.get("dataset")
    names = tuple(sorted(Path(str(d)).name for d in data)) if isinstance(data, list) else (str(data),)
    return (Path(str(args.get(Args.MODEL) or "")).name, names, args.get(Args.MAX_LENGTH))


def _longest_by_data(records: list[RunRecord]) -> dict[tuple, float]:
    """{data key: the longest training sample} over the runs whose log has ms-swift's dataset summary."""
    out: dict[tuple, float] = {}
    for r in records:
        if r.train_tokens_max and r.args:
            key = _data_key(r.args)
            out[key] = max(out.get(key, 0.0), float(r.train_tokens_max))
    return out


def _per_gpu(r: RunRecord, mem: Memory, c: Constants) -> Memory:
    """MEM as one GPU of R's layout held it (per_gpu_memory); one GPU alone: MEM."""
    if r.gpus == 1 and r.parallel in ("ddp", "single"):
        return mem
    shard = per_gpu_memory(mem, r.gpus, r.parallel, c)
    return replace(mem, peak_mem_gib=shard.peak_mem_gib, needs_gib=shard.needs_gib,
                   live_peak_gib=shard.peak_mem_gib - (mem.peak_mem_gib - mem.live_peak_gib))


@dataclass(frozen=True)
class Spread:
    """Errors (estimate / measured - 1) over N runs: the lowest, the highest and the median of |error| (None without
    a run)."""

    n: int
    low: float | None
    high: float | None
    median_abs: float | None


@dataclass(frozen=True)
class Tally:
    """Of N runs, how many the planner called right (ok)."""

    n: int
    ok: int


@dataclass(frozen=True)
class PlannerError:
    """How far the planner was off on the runs we made (planner_error): the step time's and the full runs' peak's
    spread, and of the cut runs and the capped runs how many it called right."""

    step: Spread
    peak_full: Spread
    peak_cut: Tally
    fits: Tally


def _spread(errors: list[float]) -> Spread:
    errors = [e for e in errors if e is not None and math.isfinite(e)]
    if not errors:
        return Spread(0, None, None, None)
    return Spread(len(errors), min(errors), max(errors), statistics.median(abs(e) for e in errors))


def planner_error(df) -> PlannerError:
    """How far the planner was off on the runs we made, from estimates_vs_measurements' table: so a reader of a
    predicted figure knows how far to trust it.

    step: estimate / measured - 1 of the step time over the finished, uncapped runs of a modelled configuration
    (check "reserved peak"): n, low, high, median of |error|. peak_full: the same for the peak memory of full runs;
    peak_cut: of the cut runs (whose peak is a lower bound), how many the estimate is not below by more than 10 %.
    fits: of the runs under an allocator cap, how many the live-peak rule called right (trained or OOM)."""
    modelled = df[df["check"] == "reserved peak"] if "check" in df else df.iloc[0:0]
    full = modelled[modelled["peak_rule"] == "within 10 %"]
    cut = modelled[modelled["peak_rule"] != "within 10 %"]
    capped = df[df["check"] == "fits under the cap"] if "check" in df else df.iloc[0:0]
    return PlannerError(
        step=_spread([r - 1 for r in modelled["step_ratio"].dropna()]),
        peak_full=_spread([r - 1 for r in full["ratio"].dropna()]),
        peak_cut=Tally(int(cut["within_10pct"].notna().sum()), int((cut["within_10pct"] == True).sum())),  # noqa: E712
        fits=Tally(int(capped["fits_correct"].notna().sum()), int((capped["fits_correct"] == True).sum())),  # noqa: E712
    )


@dataclass(frozen=True)
class PairPoint:
    """One experiment of the calibration pair: its mean micro-step seconds and the tokens a micro-step processed."""

    experiment: str
    micro_step_s: float
    tokens_per_micro_step: float


@dataclass(frozen=True)
class Calibration:
    """planner.yaml's calibrated constants as the committed runs give them (calibrate), and the pair's two points."""

    allocator_cache_factor: float
    allocator_cache_factor_stored: float
    allocator_cache_factor_other: float
    zero_stored_cache_factor: float
    achievable_fraction: float
    host_overhead_s: float
    small: PairPoint
    large: PairPoint


def calibrate(results_dir: str | Path = "results") -> Calibration:
    """Re-derive the calibrated constants of planner.yaml from the committed H200 runs.

    allocator_cache_factor k: the minimax fit of peak = static + k x live activations over the seed recipe's most
    complete run and the bs16 runs; achievable_fraction f and host_overhead_s o: the two equations
    step/grad_accum = o + max(FLOPs/token x tokens / (peak x f), weight reads) of the two experiments.
    """
    c = constants()
    named = c["calibration.runs"]  # planner.yaml: the runs the constants were fitted on
    hw, small, large = c["calibration.hw"], c["calibration.pair"]["small"], c["calibration.pair"]["large"]
    groups: dict[str, list[RunRecord]] = {}
    for r in collect(results_dir):
        # the recipes as published, on one GPU: a run with its own flags (--set logging_steps=1 of a quick run's
        # full partner) or several GPUs measures something else
        if r.status == "ok" and r.hw == hw and r.experiment in (small, large) and not r.overrides \
                and r.gpus == 1 and r.run in named.get(r.experiment, ()):
            groups.setdefault(str(r.experiment), []).append(r)
    if set(groups) != {small, large}:
        raise InputError(results_dir, f"calibration needs the {hw} {small} and {large} runs")
    points = {}
    for exp, runs in groups.items():
        top = max(r.global_steps or 0 for r in runs)
        runs = [r for r in runs if (r.global_steps or 0) == top]
        r0 = runs[0]
        args = (r0.args or {})
        shapes = hardware.model_shapes(args, Path(r0.path))
        rank = args.get("lora_rank")
        if (shapes is None or not isinstance(rank, int) or r0.train_tokens_max is None or r0.max_length is None
                or not r0.per_device_batch or not r0.grad_accum):
            raise InputError(r0.path, "calibration: the run's model shapes, LoRA rank, lengths or batch are unknown")
        seq = min(int(r0.train_tokens_max), int(r0.max_length))
        mem = memory(shapes, "lora", seq, r0.per_device_batch, True, rank, c)
        # what does not scale with k: the static part and the stored activations at their own factor
        static = mem.live_peak_gib - mem.activations_gib \
            + c["memory.allocator_cache_factor_stored"] * mem.stored_activations_gib
        medians = [m for r in runs if (m := step_time(r).median) is not None]
        if len(medians) < len(runs):
            raise InputError(r0.path, "calibration: a run has no steady step time")
        micro = sum(medians) / len(runs) / r0.grad_accum
        per_sample = [run_tokens_per_sample(r, shapes) for r in runs]
        peaks = [r.peak_mem_gib for r in runs]
        if any(x is None for x in per_sample + peaks):
            raise InputError(r0.path, "calibration: a run's tokens per sample or peak memory is unknown")
        tokens = sum(cast(list[float], per_sample)) / len(runs) * r0.per_device_batch  # no None: checked above
        spec = hardware.require(hw)
        fpt = flops_per_token(shapes, "lora", True, rank)
        passes = c["time.weight_passes"]["gradient_checkpointing"]
        reads = mem.weights_gib * GIB * passes / (spec.peak_gbs * 1e9)
        points[exp] = {"static": static, "act": mem.working_activations_gib,
                       "peak": sum(cast(list[float], peaks)) / len(runs),
                       "micro": micro, "a": fpt * tokens / (spec.peak_tflops * 1e12), "reads": reads}
    s, b = points[small], points[large]
    # minimax relative error: static_s + k act_s = P_s (1 + e), static_b + k act_b = P_b (1 - e)
    e = ((b["peak"] - b["static"]) / b["act"] - (s["peak"] - s["static"]) / s["act"]) / (
        s["peak"] / s["act"] + b["peak"] / b["act"])
    k = (s["peak"] * (1 + e) - s["static"]) / s["act"]
    # both compute-bound: o + a/f = micro
    inv_f = (b["micro"] - s["micro"]) / (b["a"] - s["a"])
    f = 1 / inv_f
    o = s["micro"] - max(s["a"] / f, s["reads"])
    records = collect(results_dir)
    k_stored, k_other = _cache_factors_beside(records, named, c)
    return Calibration(k, k_stored, k_other, _zero_stored_factor(records, named, c), f, o,
                       PairPoint(small, s["micro"], s["a"] * spec.peak_tflops * 1e12 / fpt),
                       PairPoint(large, b["micro"], b["a"] * spec.peak_tflops * 1e12 / fpt))


def _named_run_memory(records: list[RunRecord], name: str, group: str,
                      c: Constants) -> tuple[RunRecord, Memory, float]:
    """A calibration run (experiment/run, named under GROUP in planner.yaml), the memory model at the micro-batch it
    met, and the peak it logged."""
    r = next((r for r in records if f"{r.experiment}/{r.run}" == name), None)
    if r is None or not r.peak_mem_gib or not r.per_device_batch:
        raise InputError(name, f"calibration: run {name} ({group}) is not in the results or has no peak")
    args = r.args or {}
    shapes = hardware.model_shapes(args, Path(r.path))
    flags = run_flags(args)
    tokens = longest_micro_batch(r)
    if shapes is None or not tokens:
        raise InputError(r.path, "calibration: the run's model shapes or micro-batch tokens are unknown")
    seq = tokens if flags.padding_free else math.ceil(tokens / r.per_device_batch)
    return r, memory(shapes, "lora", seq, r.per_device_batch, r.gradient_checkpointing is not False,
                     int(args.get("lora_rank") or 8), c, padding_free=flags.padding_free, liger=flags.liger,
                     packed_tokens=tokens if flags.padding_free else None), float(r.peak_mem_gib)


def _zero_stored_factor(records: list[RunRecord], named: dict, c: Constants) -> float:
    """data_parallel.zero_stored_cache_factor k_z: per GPU, peak = static (ZeRO's shards and buckets) + k_z x stored
    + the working set at its factor; the mean over the runs named `zero`, each at the micro-batch it met."""
    ks = []
    for name in named.get("zero", ()):
        r, mem, peak = _named_run_memory(records, name, "zero", c)
        shard = per_gpu_memory(mem, r.gpus, r.parallel, c)
        rest = shard.peak_mem_gib - c["memory.data_parallel.zero_stored_cache_factor"] * mem.stored_activations_gib
        ks.append((peak - rest) / mem.stored_activations_gib)
    if not ks:
        raise InputError(None, "calibration: no ZeRO run named (planner.yaml calibration.runs zero)")
    return statistics.mean(ks)


def _cache_factors_beside(records: list[RunRecord], named: dict, c: Constants) -> tuple[float, float]:
    """allocator_cache_factor_stored k_s and _other k_o: peak = static + k_s x stored + k_o x working, k_s from the
    run named `stored` (padding-free, Liger, checkpointing off: nearly all stored), k_o the minimax over the runs
    named `other` (their working set beside stored tensors or with Liger). Each run at the micro-batch it met."""
    points: dict[str, list[tuple[float, float, float, float]]] = {"stored": [], "other": []}
    for group in points:
        for name in named.get(group, ()):
            _, mem, peak = _named_run_memory(records, name, group, c)
            static = mem.live_peak_gib - mem.activations_gib
            points[group].append((static, mem.stored_activations_gib, mem.working_activations_gib, peak))
    k_o = c["memory.allocator_cache_factor_other"]
    k_s = c["memory.allocator_cache_factor_stored"]
    for _ in range(20):  # each factor's fit reads the other's; a few rounds settle both
        k_s = statistics.mean((p - st - k_o * w) / s for st, s, w, p in points["stored"])
        ks = [(p - st - k_s * s) / w for st, s, w, p in points["other"]]
        # minimax relative error over the `other` runs: k_o where the largest over- and under-estimate are equal
        lo, hi = min(ks), max(ks)
        best = min((abs(max((st + k_s * s + k * w) / p - 1 for st, s, w, p in points["other"])
                        + min((st + k_s * s + k * w) / p - 1 for st, s, w, p in points["other"])), k)
                   for k in (lo + (hi - lo) * i / 1000 for i in range(1001)))
        k_o = best[1]
    return k_s, k_o
