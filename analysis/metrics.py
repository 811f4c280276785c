"""Turn one parsed run (`analysis.logs.RunLog`) into the suite's metrics: one flat JSON-able dict per run.

The formulas are in README.md ("Metrics"); the code follows them one to one. What the log cannot tell stays
None: a number that is not in the raw files is never made up here.
"""
from __future__ import annotations

import math
import re
import statistics
from pathlib import Path
from typing import Any

from analysis import hardware
from analysis.logs import (
    RunLog,
    find_runs,
    is_finite,
    parse_dataset_stats,
    parse_elapsed,
    parse_param_info,
    read_log,
    to_float,
)

WARMUP_FRACTION = 0.10  # intervals that start before this share of the steps are warm-up
CI_LEVEL = 0.95


# ----------------------------------------------------------------------------------------------- args


def _arg(args: dict | None, *names: str) -> Any:
    if not args:
        return None
    for name in names:
        if args.get(name) is not None:
            return args[name]
    return None


def _int_or_none(value: Any) -> int | None:
    v = to_float(value)
    return None if v is None or not math.isfinite(v) else int(v)


def _event_steps(args: dict | None, run: RunLog, last_step: int) -> set[int]:
    """Steps after whose training-log line an eval or a checkpoint save ran (they slow the next interval)."""
    events = {ln.step for ln in run.evals if ln.step is not None}
    if args:
        for every_key, strategy_keys in (("eval_steps", ("eval_strategy", "evaluation_strategy")),
                                         ("save_steps", ("save_strategy",))):
            every = to_float(args.get(every_key))
            strategy = _arg(args, *strategy_keys)
            if strategy in (None, "steps", "IntervalStrategy.STEPS") and every and every > 0:
                if every < 1:  # a ratio of the total steps, as Hugging Face allows
                    every = math.ceil(every * last_step)
                events.update(range(int(every), last_step + 1, int(every)))
    return events


def _start_step(args: dict | None) -> int:
    """ms-swift measures speed from the step training (re)started at: a resumed run starts at its checkpoint."""
    resume = _arg(args, "resume_from_checkpoint")
    if isinstance(resume, str):
        m = re.search(r"checkpoint-(\d+)", resume)
        if m:
            return int(m.group(1))
    return 0


# ----------------------------------------------------------------------------------------- step time


def cumulative_elapsed(run: RunLog) -> list[tuple[int, float]]:
    """(step, seconds since training began) for each training line, from its cumulative speed (Line.elapsed)."""
    start = _start_step(run.args)
    points = []
    for ln in run.train:
        elapsed = ln.elapsed(start)
        if elapsed is not None:
            points.append((ln.step, elapsed))
    return points


def step_intervals(run: RunLog, max_steps: int | None) -> list[dict]:
    """Every interval between successive training lines, with seconds per optimizer step and why it is
    kept out of the steady state (None when it is kept)."""
    points = cumulative_elapsed(run)
    if len(points) < 2:
        return []
    total = max_steps or points[-1][0]
    events = _event_steps(run.args, run, total)
    out = []
    for i, ((a, ta), (b, tb)) in enumerate(zip(points, points[1:])):
        if b <= a:
            continue
        reason = None
        if i == 0:
            reason = "first interval"
        elif a < WARMUP_FRACTION * total:
            reason = "warm-up"
        elif any(a <= e < b for e in events):
            reason = "eval/save"
        out.append({"from_step": a, "to_step": b, "seconds": tb - ta, "step_time_s": (tb - ta) / (b - a),
                    "excluded": reason})
    return out


def summarize(values: list[float]) -> dict:
    """Median, mean and a Student-t 95 % interval of the mean."""
    n = len(values)
    if n == 0:
        return {"median": None, "mean": None, "ci95_low": None, "ci95_high": None, "n_intervals": 0}
    mean = statistics.fmean(values)
    if n > 1:
        from scipy import stats

        half = stats.t.ppf(0.5 + CI_LEVEL / 2, n - 1) * statistics.stdev(values) / math.sqrt(n)
        low, high = mean - half, mean + half
    else:
        low = high = None
    return {"median": statistics.median(values), "mean": mean, "ci95_low": low, "ci95_high": high,
            "n_intervals": n}


# -------------------------------------------------------------------------------------------- curves


def _curve(lines, key_options: tuple[str, ...]) -> list[list[float]]:
    out = []
    for ln in lines:
        if ln.step is None:
            continue
        for key in key_options:
            v = ln.get(key)
            if v is not None:
                out.append([ln.step, v])
                break
    return out


def _first_bad_step(run: RunLog) -> int | None:
    for ln in run.train:
        for key in ("loss", "grad_norm"):
            v = ln.get(key)
            if v is not None and not math.isfinite(v):
                return ln.step
    return None


def _cut(curve: list[list[float]], bad_step: int | None) -> list[list[float]]:
    if bad_step is None:
        return curve
    return [p for p in curve if p[0] < bad_step and math.isfinite(p[1])]


# ------------------------------------------------------------------------------------------- metrics


def run_metrics(run: RunLog, env: dict | None = None) -> dict:
    """All metrics of one run. `env` is the runner's env.json (GPU name, ...) where it exists."""
    args = run.args or {}
    summary = run.summary.data if run.summary else {}
    last_step = max((ln.step for ln in run.lines if ln.step is not None), default=None)
    if _int_or_none(summary.get("global_step")) is not None:
        last_step = max(last_step or 0, int(summary["global_step"]))
    max_steps = next((ln.max_steps for ln in reversed(run.lines) if ln.max_steps), None)
    if max_steps is None:
        ms = _int_or_none(args.get("max_steps"))
        max_steps = ms if ms and ms > 0 else None

    per_device_batch = _int_or_none(args.get("per_device_train_batch_size"))
    grad_accum = _int_or_none(args.get("gradient_accumulation_steps"))
    world_size = _int_or_none(_arg(args, "global_world_size", "world_size"))
    if args and world_size is None:
        world_size = 1

    intervals = step_intervals(run, max_steps)
    kept = [iv["step_time_s"] for iv in intervals if iv["excluded"] is None]
    step_time = summarize(kept)

    train_stats = parse_dataset_stats(summary.get("train_dataset"))
    val_stats = parse_dataset_stats(summary.get("val_dataset"))
    params = parse_param_info(summary.get("model_parameter_info") or summary.get("model_info"))

    samples_per_step = None
    if per_device_batch and grad_accum and world_size:
        samples_per_step = per_device_batch * grad_accum * world_size
    elif train_stats and max_steps and run.summary:
        # A full run has max_steps = epochs x ceil(size / global batch), so the global batch is the
        # smallest integer >= size x epochs / max_steps (only a complete run has the right max_steps).
        epochs = to_float(args.get("num_train_epochs")) or 1.0
        samples_per_step = math.ceil(train_stats["size"] * epochs / max_steps)

    median = step_time["median"]
    samples_per_s = samples_per_step / median if samples_per_step and median else None
    tokens_per_s = samples_per_s * train_stats["mean"] if samples_per_s and train_stats else None

    mem_values = [ln.get("memory(GiB)") for ln in run.lines]
    mem_values = [v for v in mem_values if is_finite(v)]
    summary_mem = to_float(summary.get("memory"))
    if is_finite(summary_mem):
        mem_values.append(summary_mem)
    peak = round(max(mem_values), 2) if mem_values else None

    bad_step = _first_bad_step(run)
    train_loss = _cut(_curve(run.train, ("loss",)), bad_step)
    token_acc = _cut(_curve(run.train, ("token_acc", "acc")), bad_step)
    eval_loss = _curve(run.evals, ("eval_loss",))
    eval_acc = _curve(run.evals, ("eval_token_acc", "eval_acc"))
    if bad_step is not None:
        eval_loss, eval_acc = _cut(eval_loss, bad_step), _cut(eval_acc, bad_step)
    finite_losses = [v for _, v in train_loss if math.isfinite(v)]

    gc = args.get("gradient_checkpointing")
    env = env or {}
    flops = flops_per_token(run, env, params)
    mfu = _utilisation(tokens_per_s, flops, env)

    return {
        "path": str(run.run_dir),
        "log": str(run.path),
        "swift_version": args.get("swift_version"),
        "log_format": run.log_format,
        "complete": run.summary is not None,
        "torn_last_line": run.torn_last_line,
        "duplicate_lines_dropped": run.duplicates_dropped,
        "diverged": bad_step is not None,
        "first_bad_step": bad_step,
        "global_steps": last_step,
        "max_steps": max_steps,
        "per_device_batch": per_device_batch,
        "grad_accum": grad_accum,
        "world_size": world_size,
        "max_length": _int_or_none(args.get("max_length")),
        "gradient_checkpointing": gc if isinstance(gc, bool) else None,
        "model": _arg(args, "model", "model_id_or_path", "model_type"),
        "step_time_s": step_time,
        "micro_step_time_ms": (median / grad_accum * 1000) if median and grad_accum else None,
        "samples_per_step": samples_per_step,
        "samples_per_s": samples_per_s,
        "tokens_per_s": tokens_per_s,
        "peak_mem_gib": peak,
        "train_loss": train_loss,
        # ms-swift's running maximum of reserved memory per training line: the peak up to any step
        "memory_curve": _curve(run.train, ("memory(GiB)",)),
        "eval_loss": eval_loss,
        "token_acc": token_acc,
        "eval_token_acc": eval_acc,
        "final_train_loss": statistics.fmean(finite_losses[-3:]) if finite_losses else None,
        "final_eval_loss": eval_loss[-1][1] if eval_loss else None,
        "final_eval_token_acc": eval_acc[-1][1] if eval_acc else None,
        "train_tokens_mean": train_stats["mean"] if train_stats else None,
        "train_tokens_max": train_stats["max"] if train_stats else None,
        "train_samples": train_stats["size"] if train_stats else None,
        "val_samples": val_stats["size"] if val_stats else None,
        "trainable_params": params["trainable_params"] if params else None,
        "train_runtime_s": run.train_end.get("train_runtime") if run.train_end else None,
        "wall_time_to_last_eval_s": _elapsed_at(run, eval_loss[-1][0]) if eval_loss else None,
        **flops,
        **mfu,
        "step_intervals": intervals,
        "warnings": run.warnings,
    }


def _elapsed_at(run: RunLog, step: int) -> float | None:
    """Seconds from training start to the end of the eval at `step` (from that eval line's own speed)."""
    start = _start_step(run.args)
    for ln in run.evals:
        if ln.step == step:
            elapsed = ln.elapsed(start)
            return elapsed if elapsed is not None else parse_elapsed(ln.data.get("elapsed_time"))
    return None


# ------------------------------------------------------------------------------------------ FLOPs, MFU


def flops_per_token(run: RunLog, env: dict, params: dict | None) -> dict:
    """Model FLOPs per trained token for LoRA: forward 2N + backward (input grads only) 2N over the frozen
    matmul weights N, plus 6 per trainable parameter; hfu adds one more forward (2N) when gradient
    checkpointing recomputes activations. Attention score FLOPs are left out (small at these lengths)."""
    args = run.args or {}
    shapes = hardware.model_shapes(args, run.run_dir)
    if shapes is None:
        return {"flops_per_token": None, "hw_flops_per_token": None, "matmul_params": None}
    n = hardware.matmul_params(shapes)
    trainable = params["trainable_params"] if params else None
    if trainable is None:
        trainable = hardware.lora_params(shapes, args)
    if trainable is None:
        return {"flops_per_token": None, "hw_flops_per_token": None, "matmul_params": n}
    model = 4 * n + 6 * trainable
    recompute = bool(args.get("gradient_checkpointing"))
    return {"flops_per_token": model, "hw_flops_per_token": model + (2 * n if recompute else 0),
            "matmul_params": n}


def _utilisation(tokens_per_s: float | None, flops: dict, env: dict) -> dict:
    hw_key = env.get("hw")
    spec = hardware.get(hw_key) if hw_key else None
    if spec is None or not spec["bf16_dense_tflops"] or tokens_per_s is None or flops.get("flops_per_token") is None:
        return {"mfu": None, "hfu": None, "peak_tflops": spec["bf16_dense_tflops"] if spec else None,
                "peak_source": spec["source"] if spec else None}
    peak = spec["bf16_dense_tflops"] * 1e12
    return {
        "mfu": tokens_per_s * flops["flops_per_token"] / peak,
        "hfu": tokens_per_s * flops["hw_flops_per_token"] / peak,
        "peak_tflops": spec["bf16_dense_tflops"],
        "peak_source": f"{spec['name']} dense BF16 {spec['bf16_dense_tflops']} TFLOPS ({spec['source']})",
    }


# --------------------------------------------------------------------------------------------- entry


def parse_path(path: str | Path, env: dict | None = None) -> list[dict]:
    """Metrics of every run under PATH (a run folder, a parent of several, or a logging.jsonl)."""
    from analysis.runs import read_env

    out = []
    for run_path in find_runs(path):
        run = read_log(run_path)
        out.append(run_metrics(run, env if env is not None else read_env(run.run_dir)))
    return out
