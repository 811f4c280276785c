"""The planner checked against the runs: estimates beside measurements, and the calibration of its two constants.

`estimates_vs_measurements` is the validation table the report shows; `calibrate` re-derives planner.yaml's
calibrated constants from the committed H200 seed and bs16 runs.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import cast

from analysis.estimate.planner import (
    GIB,
    METHODS,
    _run_method,
    constants,
    fit_verdict,
    flops_per_token,
    memory,
    optimizer_step_s,
    per_gpu_memory,
    roofline_micro_step,
    run_tokens_per_sample,
)
from analysis.measure.steps import step_time
from analysis.parse.record import RunRecord
from analysis.parse.results import collect
from experiments.base import hardware
from experiments.base.errors import InputError

MIN_STEADY_INTERVALS = 3  # a step time checked against the estimate rests on at least this many steady intervals


def estimates_vs_measurements(results_dir: str | Path = "results"):
    """A pandas DataFrame, one row per run under RESULTS_DIR: measured peak vs the estimate at that run's own longest
    sequence (train_tokens_max capped at max_length) and batch, and measured step time vs the roofline at the
    tokens that run really processed (the roofline's two constants are fitted on these runs: a consistency check).
    Stays whole: one row per run, each column computed from the same run's shapes and method in one loop."""
    import pandas as pd

    c = constants()
    rows = []
    for r in collect(results_dir):
        args = (r.args or {})
        shapes = hardware.model_shapes(args, Path(r.path) if r.path else None)
        method = _run_method(args)
        rank = lr if isinstance(lr := args.get("lora_rank"), int) else 8
        base = {"hw": r.hw, "experiment": r.experiment, "run": r.run, "status": r.status,
                "method": method, "gpus": r.gpus, "parallel": r.parallel, "per_device_batch": r.per_device_batch,
                "grad_accum": r.grad_accum,
                "steps": r.global_steps, "measured_peak_gib": r.peak_mem_gib}
        if shapes is None or method not in METHODS or not r.per_device_batch or not r.max_length:
            rows.append({**base, "note": "cannot estimate: model shapes, method, batch or max_length unknown"})
            continue
        launcher = r.launcher
        # the launcher's --pad-to pads every row to that length: the run's sequence, whatever the data's lengths
        seq = min(int(launcher.get("pad_to") or r.train_tokens_max or r.max_length), int(r.max_length))
        gc = r.gradient_checkpointing is not False
        mem = memory(shapes, method, seq, r.per_device_batch, gc, rank, c)
        if r.gpus > 1 or r.parallel != "ddp":  # what one GPU held: the planner's per-GPU share of the layout
            shard = per_gpu_memory(mem, r.gpus, r.parallel, c)
            mem = {**mem, "peak_mem_gib": shard["peak_mem_gib"], "needs_gib": shard["needs_gib"],
                   "live_peak_gib": shard["peak_mem_gib"] - (c["memory.allocator_cache_factor"] - 1)
                   * shard["activations_gib"]}
        note = []
        seen = (r.global_steps or 0) * (r.samples_per_step or 0)
        cut = bool(r.train_samples and seen < r.train_samples)
        if cut:
            note.append(f"cut run: saw {seen} of {r.train_samples} samples, so maybe not the {seq}-token one")
        spec = hardware.get(r.hw) if r.hw else None
        est_step = tps = None
        if spec and spec.get("bf16_dense_tflops") and r.grad_accum:
            tps = run_tokens_per_sample(r, shapes) or r.train_tokens_mean
            if tps:
                roof = roofline_micro_step(spec, shapes, method, r.per_device_batch * tps, gc, rank, c,
                                           mem["weights_gib"] * GIB)
                est_step = r.grad_accum * roof["micro_step_s"] + optimizer_step_s(
                    spec, method, mem["params"]["trainable"], c)
        measured_step = step_time(r)["median"]
        measured = r.peak_mem_gib
        cap = launcher.get("mem_cap_gib")
        unmodelled = [f for f in ("padding_free", "packing", "use_liger_kernel", "group_by_length") if args.get(f)]
        if args.get("attn_impl") == "eager":
            unmodelled.append("attn_impl eager (the activations and FLOPs are SDPA's)")
        if not gc:
            unmodelled.append("gradient_checkpointing false (the cache factor is fitted on GC-on runs)")
        oom = r.status == "failed" and str(r.failure or "").startswith("OOM")
        # What is validated where: uncapped runs of a modelled configuration -> the reserved peak (within 10 %);
        # runs under an allocator cap -> whether it fits (live peak <= cap), as trained vs OOM says.
        if unmodelled:
            check = "not modelled: " + ", ".join(unmodelled)
        elif cap is not None:
            check = "fits under the cap" if (r.status == "ok" or oom) else "not checked (run did not finish)"
        elif r.status != "ok":
            check = "not checked (run did not finish)"
        else:
            check = "reserved peak" if measured else "not checked (no peak)"
        ratio = mem["peak_mem_gib"] / measured if measured else None
        # A full run's peak is the estimate's target (within 10 %). A cut run (a prefix of the schedule) met only part
        # of the batches, and the reserved peak grows in steps as larger ones arrive, so its peak is a lower bound of
        # the full run's: the estimate must not be below it by more than 10 %.
        peak_ok = (bool(ratio >= 0.90 if cut else abs(ratio - 1) <= 0.10)
                   if ratio and check == "reserved peak" else None)
        predicted_fits = bool(mem["live_peak_gib"] <= cap) if cap is not None else None
        # the planner's own verdict (yes / tight / no: planner.fit_verdict); the CUDA context sits outside a cap
        planner_fit = fit_verdict(mem["needs_gib"], mem["activations_gib"], cap, capped=True, c=c) \
            if cap is not None else None
        planner_fits = planner_fit == "yes" if cap is not None else None
        rows.append({
            **base, "seq_len": seq, "estimated_peak_gib": mem["peak_mem_gib"], "live_peak_gib": mem["live_peak_gib"],
            "needs_gib": mem["needs_gib"], "cap_gib": cap, "check": check,
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
            # host-bound step runs 20 % faster or slower (issue 12): its ratio is reported, not held to 15 %. A median
            # of fewer than MIN_STEADY_INTERVALS steady intervals is no measurement to hold an estimate to.
            "steady_intervals": step_time(r)["n_intervals"],
            "host": r.host_id,
            "step_checked": bool(check == "reserved peak" and est_step and measured_step
                                 and math.isfinite(measured_step)
                                 and step_time(r)["n_intervals"] >= MIN_STEADY_INTERVALS
                                 and int(args.get("dataloader_num_workers") or 0) == 4 and r.host_id is None),
            "note": "; ".join(note) or None,
        })
    return pd.DataFrame(rows)


def planner_error(df) -> dict:
    """How far the planner was off on the runs we made, from estimates_vs_measurements' table: so a reader of a
    predicted figure knows how far to trust it.

    step: estimate / measured - 1 of the step time over the finished, uncapped runs of a modelled configuration
    (check "reserved peak"): n, low, high, median of |error|. peak_full: the same for the peak memory of full runs;
    peak_cut: of the cut runs (whose peak is a lower bound), how many the estimate is not below by more than 10 %.
    fits: of the runs under an allocator cap, how many the live-peak rule called right (trained or OOM)."""
    import statistics

    def spread(errors: list[float]) -> dict:
        errors = [e for e in errors if e is not None and math.isfinite(e)]
        if not errors:
            return {"n": 0, "low": None, "high": None, "median_abs": None}
        return {"n": len(errors), "low": min(errors), "high": max(errors),
                "median_abs": statistics.median(abs(e) for e in errors)}

    modelled = df[df["check"] == "reserved peak"] if "check" in df else df.iloc[0:0]
    full = modelled[modelled["peak_rule"] == "within 10 %"]
    cut = modelled[modelled["peak_rule"] != "within 10 %"]
    capped = df[df["check"] == "fits under the cap"] if "check" in df else df.iloc[0:0]
    return {
        "step": spread([r - 1 for r in modelled["step_ratio"].dropna()]),
        "peak_full": spread([r - 1 for r in full["ratio"].dropna()]),
        "peak_cut": {"n": int(cut["within_10pct"].notna().sum()),
                     "ok": int((cut["within_10pct"] == True).sum())},  # noqa: E712
        "fits": {"n": int(capped["fits_correct"].notna().sum()),
                 "right": int((capped["fits_correct"] == True).sum())},  # noqa: E712
    }


def calibrate(results_dir: str | Path = "results") -> dict[str, float]:
    """Re-derive the calibrated constants of planner.yaml from the committed H200 runs.

    allocator_cache_factor k: the minimax fit of peak = static + k x live activations over the seed recipe's most
    complete run and the bs16 runs; achievable_fraction f and host_overhead_s o: the two equations
    step/grad_accum = o + max(FLOPs/token x tokens / (peak x f), weight reads) of the two experiments.
    """
    c = constants()
    named = c["calibration.runs"]  # planner.yaml: the runs the constants were fitted on
    groups: dict[str, list[RunRecord]] = {}
    for r in collect(results_dir):
        # the recipes as published, on one GPU: a run with its own flags (--set logging_steps=1 of a quick run's
        # full partner) or several GPUs measures something else
        if r.status == "ok" and r.hw == "h200" and r.experiment in ("seed", "bs16") and not r.overrides \
                and r.gpus == 1 and r.run in named.get(r.experiment, ()):
            groups.setdefault(r.experiment, []).append(r)
    if set(groups) != {"seed", "bs16"}:
        raise InputError(results_dir, "calibration needs the h200 seed and bs16 runs")
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
        static = (mem["live_peak_gib"] - mem["activations_gib"])
        micro = sum(step_time(r)["median"] for r in runs) / len(runs) / r0.grad_accum
        per_sample = [run_tokens_per_sample(r, shapes) for r in runs]
        peaks = [r.peak_mem_gib for r in runs]
        if any(x is None for x in per_sample + peaks):
            raise InputError(r0.path, "calibration: a run's tokens per sample or peak memory is unknown")
        tokens = sum(cast(list[float], per_sample)) / len(runs) * r0.per_device_batch  # no None: checked above
        spec = hardware.require("h200")
        fpt = flops_per_token(shapes, "lora", True, rank)
        passes = c["time.weight_passes"]["gradient_checkpointing"]
        reads = mem["weights_gib"] * GIB * passes / (spec["bandwidth_gbs"] * 1e9)
        points[exp] = {"static": static, "act": mem["activations_gib"],
                       "peak": sum(cast(list[float], peaks)) / len(runs),
                       "micro": micro, "a": fpt * tokens / (spec["bf16_dense_tflops"] * 1e12), "reads": reads}
    s, b = points["seed"], points["bs16"]
    # minimax relative error: static_s + k act_s = P_s (1 + e), static_b + k act_b = P_b (1 - e)
    e = ((b["peak"] - b["static"]) / b["act"] - (s["peak"] - s["static"]) / s["act"]) / (
        s["peak"] / s["act"] + b["peak"] / b["act"])
    k = (s["peak"] * (1 + e) - s["static"]) / s["act"]
    # both compute-bound: o + a/f = micro
    inv_f = (b["micro"] - s["micro"]) / (b["a"] - s["a"])
    f = 1 / inv_f
    o = s["micro"] - max(s["a"] / f, s["reads"])
    return {"allocator_cache_factor": k, "achievable_fraction": f, "host_overhead_s": o,
            "seed_micro_step_s": s["micro"], "bs16_micro_step_s": b["micro"],
            "seed_tokens_per_micro_step": s["a"] * spec["bf16_dense_tflops"] * 1e12 / fpt,
            "bs16_tokens_per_micro_step": b["a"] * spec["bf16_dense_tflops"] * 1e12 / fpt}


