"""The rows of the planner's validation table (analysis.estimate.validate.estimates_vs_measurements), as a typed dict
whose keys are the table's columns: mypy checks every key a row is built with, a key added here is a column
added, and a run the planner cannot estimate leaves the estimate's keys out (NaN in the table)."""
from __future__ import annotations

from typing import TypedDict


class ValidationRow(TypedDict, total=False):
    """One run's measurement beside the planner's estimate at its recipe (memory, fit and step time)."""

    hw: str | None
    experiment: str | None
    run: str
    status: str
    method: str | None
    gpus: int
    parallel: str
    per_device_batch: int | None
    grad_accum: int | None
    steps: int | None
    measured_peak_gib: float | None
    note: str | None
    padding_free: bool
    liger: bool
    gradient_checkpointing: bool
    tokens_per_micro_batch: float
    seen_tokens: int
    seen_estimate_gib: float
    seen_ratio: float | None
    within_20pct: bool | None
    seq_len: int
    estimated_peak_gib: float
    live_peak_gib: float
    needs_gib: float
    cap_gib: float | None
    check: str
    predicted_fits: bool | None
    planner_fits: bool | None
    planner_fit: str | None
    verdict_correct: bool | None
    fits_correct: bool | None
    ratio: float | None
    peak_rule: str | None
    within_10pct: bool | None
    tokens_per_sample: float | None
    measured_step_s: float | None
    estimated_step_s: float | None
    step_ratio: float | None
    steady_intervals: int
    host: str | None
    step_checked: bool
