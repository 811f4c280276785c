"""One run's measurements as a flat JSON-able dict (`swiftbench parse --json`, the tables): formatting of what the
measure functions return, nothing computed here."""
from __future__ import annotations

from dataclasses import asdict

from analysis.measure import flops, loss, steps, throughput
from analysis.parse.logs import gc_paused
from analysis.parse.record import RunRecord

FACTS = ("path", "hw", "experiment", "run", "status", "failure", "swift_version", "log_format", "complete",
         "torn_last_line", "duplicate_lines_dropped", "diverged", "first_bad_step", "global_steps", "max_steps",
         "per_device_batch", "grad_accum", "world_size", "max_length", "gradient_checkpointing", "model",
         "samples_per_step", "peak_mem_gib", "train_loss", "memory_curve", "eval_loss", "token_acc", "eval_token_acc",
         "train_tokens_mean", "train_tokens_max", "train_samples", "val_samples", "trainable_params",
         "train_runtime_s", "labels", "warnings")


def run_summary(rec: RunRecord, with_intervals: bool = True) -> dict:
    """The record's facts and its measurements: step time, micro-step, samples/s, tokens/s (with range and source),
    MFU/HFU, final losses, wall time to the last eval, and (WITH_INTERVALS) every log interval."""
    with gc_paused():  # a long log's record holds millions of objects the collector would walk again and again
        return _run_summary(rec, with_intervals)


def _run_summary(rec: RunRecord, with_intervals: bool) -> dict:
    tp = throughput.throughput(rec)
    out = {k: getattr(rec, k) for k in FACTS}
    out["log"] = rec.log_path
    out.update({
        "step_time_s": asdict(steps.step_time(rec)),
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
        **asdict(flops.mfu(rec, tp.tokens_per_s)),
    })
    if with_intervals:
        out["step_intervals"] = [iv.as_dict() for iv in steps.intervals(rec)]
    return out
