"""One run's measurements as a flat JSON-able object (`swiftbench parse --json`, the tables): formatting of what the
measure functions return, nothing computed here. Its keys and their order are RunSummary's (summary_row.py)."""
from __future__ import annotations

from analysis.measure import flops, loss, steps, throughput
from analysis.measure.summary_row import RunSummary
from analysis.parse.logs import gc_paused
from analysis.parse.record import RunRecord


def run_summary(rec: RunRecord, with_intervals: bool = True) -> RunSummary:
    """The record's facts and its measurements: step time, micro-step, samples/s, tokens/s (with range and source),
    MFU/HFU, final losses, wall time to the last eval, and (WITH_INTERVALS) every log interval."""
    with gc_paused():  # a long log's record holds millions of objects the collector would walk again and again
        return _run_summary(rec, with_intervals)


def _run_summary(rec: RunRecord, with_intervals: bool) -> RunSummary:
    tp = throughput.throughput(rec)
    st = steps.step_time(rec)
    m = flops.mfu(rec, tp.tokens_per_s)
    out: RunSummary = {
        "path": rec.path, "hw": rec.hw, "experiment": rec.experiment, "run": rec.run, "status": rec.status,
        "failure": rec.failure, "swift_version": rec.swift_version, "log_format": rec.log_format,
        "complete": rec.complete, "torn_last_line": rec.torn_last_line,
        "duplicate_lines_dropped": rec.duplicate_lines_dropped, "diverged": rec.diverged,
        "first_bad_step": rec.first_bad_step, "global_steps": rec.global_steps, "max_steps": rec.max_steps,
        "per_device_batch": rec.per_device_batch, "grad_accum": rec.grad_accum, "world_size": rec.world_size,
        "max_length": rec.max_length, "gradient_checkpointing": rec.gradient_checkpointing, "model": rec.model,
        "samples_per_step": rec.samples_per_step, "peak_mem_gib": rec.peak_mem_gib, "train_loss": rec.train_loss,
        "memory_curve": rec.memory_curve, "eval_loss": rec.eval_loss, "token_acc": rec.token_acc,
        "eval_token_acc": rec.eval_token_acc, "train_tokens_mean": rec.train_tokens_mean,
        "train_tokens_max": rec.train_tokens_max, "train_samples": rec.train_samples, "val_samples": rec.val_samples,
        "trainable_params": rec.trainable_params, "train_runtime_s": rec.train_runtime_s, "labels": rec.labels,
        "warnings": rec.warnings,
        "log": rec.log_path,
        "step_time_s": {"median": st.median, "mean": st.mean, "ci95_low": st.ci95_low, "ci95_high": st.ci95_high,
                        "n_intervals": st.n_intervals},
        "micro_step_time_ms": steps.micro_step_ms(rec),
        "samples_per_s": throughput.samples_per_s(rec),
        "tokens_per_s": tp.tokens_per_s,
        "tokens_per_s_low": tp.low,
        "tokens_per_s_high": tp.high,
        "tokens_source": tp.source,
        "final_train_loss": loss.final_train_loss(rec),
        "final_eval_loss": loss.final_eval_loss(rec),
        "final_eval_token_acc": loss.final_eval_token_acc(rec),
        "wall_time_to_last_eval_s": loss.wall_time_to_last_eval(rec),
        "flops_per_token": m.flops_per_token, "hw_flops_per_token": m.hw_flops_per_token,
        "matmul_params": m.matmul_params, "mfu": m.mfu, "hfu": m.hfu, "peak_tflops": m.peak_tflops,
        "peak_source": m.peak_source,
    }
    if with_intervals:
        out["step_intervals"] = [iv.as_row() for iv in steps.intervals(rec)]
    return out
