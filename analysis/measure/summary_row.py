"""One run's summary as `swiftbench parse --json` prints it (analysis.measure.summary.run_summary), as typed dicts
whose keys are the JSON object's, in order: mypy checks every key a summary is built with or read by."""
from __future__ import annotations

from typing import TypedDict

from analysis.measure.steps import IntervalRow
from analysis.parse.logfacts import Curve


class StepTimeRow(TypedDict):
    """steps.StepTime's fields."""

    median: float | None
    mean: float | None
    ci95_low: float | None
    ci95_high: float | None
    n_intervals: int


class _Summary(TypedDict):
    """The record's facts (RunRecord's fields of these names), then its measurements, then flops.Mfu's fields."""

    path: str
    hw: str | None
    experiment: str | None
    run: str
    status: str
    failure: str | None
    swift_version: str | None
    log_format: str | None
    complete: bool
    torn_last_line: bool
    duplicate_lines_dropped: int
    diverged: bool
    first_bad_step: int | None
    global_steps: int | None
    max_steps: int | None
    per_device_batch: int | None
    grad_accum: int | None
    world_size: int | None
    max_length: int | None
    gradient_checkpointing: bool | None
    model: str | None
    samples_per_step: int | None
    peak_mem_gib: float | None
    train_loss: Curve
    memory_curve: Curve
    eval_loss: Curve
    token_acc: Curve
    eval_token_acc: Curve
    train_tokens_mean: float | None
    train_tokens_max: float | None
    train_samples: int | None
    val_samples: int | None
    trainable_params: int | None
    train_runtime_s: float | None
    labels: list[str]
    warnings: list[str]
    log: str | None
    step_time_s: StepTimeRow
    micro_step_time_ms: float | None
    samples_per_s: float | None
    tokens_per_s: float | None
    tokens_per_s_low: float | None
    tokens_per_s_high: float | None
    tokens_source: str | None
    final_train_loss: float | None
    final_eval_loss: float | None
    final_eval_token_acc: float | None
    wall_time_to_last_eval_s: float | None
    flops_per_token: int | None
    hw_flops_per_token: int | None
    matmul_params: int | None
    mfu: float | None
    hfu: float | None
    peak_tflops: float | None
    peak_source: str | None


class RunSummary(_Summary, total=False):
    """run_summary's object: step_intervals with its WITH_INTERVALS; log_complete where the parse view sets the
    runner's verdict over the log's (analysis.present.parse_view.summary)."""

    step_intervals: list[IntervalRow]
    log_complete: bool
