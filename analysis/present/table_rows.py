"""The rows of `swiftbench tables`' speed, convergence and scaling tables, as typed dicts whose keys are the tables'
columns in order: mypy checks every key a row is built with or read by, a key added here is a column added, and a
row that leaves a key out has it empty (NaN, as pandas reads a missing key) where a row of that kind does not have it.
"""
from __future__ import annotations

from typing import TypedDict


class SpeedRow(TypedDict, total=False):
    """One row of the speed table: a measured run (analysis.measure) or a published figure (the seeds)."""

    hw: str | None
    experiment: str | None
    source: str
    gpus: int
    parallel: str
    status: str
    run: str
    host: str | None
    labels: str
    ms_per_sample: float | None
    ms_per_step: float | None
    ms_per_step_ci95: str | None
    ms_per_micro_step: float | None
    tokens_per_s: float | None
    tokens_per_s_per_gpu: float | None
    tokens_per_s_low: float | None
    tokens_per_s_high: float | None
    tokens_source: str | None
    samples_per_s: float | None
    gpu_busy_ms_per_step: float | None
    host_ms_per_step: float | None
    comm_ms_per_step: float | None
    gpu_busy_frac: float | None
    bound: str | None
    profiled_over_steady: float | None
    gpm_busy_ms_per_step: float | None
    gpm_host_ms_per_step: float | None
    gpm_busy_frac: float | None
    gpm_steps: int | None
    gpm_over_profiler: float | None
    peak_gib: float | None
    mfu: float | None
    speedup: float | None
    speedup_basis: str
    speedup_hosts: str
    baseline: str
    published_ms_per_sample: float | None
    measured_over_published: float | None
    host_python_ns: float | None
    host_dispatch_us: float | None
    host_lora_ms: float | None
    est_full_train_s: float | None
    est_full_train_s_low: float | None
    est_full_train_s_high: float | None
    est_full_tokens_per_s: float | None
    est_full_tokens_per_s_low: float | None
    est_full_tokens_per_s_high: float | None
    est_steps: int | None
    est_basis: str
    steady_steps: int | None


class ConvergenceRow(TypedDict, total=False):
    """One row of the convergence table: a measured run's losses (analysis.measure.loss) or the article's."""

    hw: str | None
    experiment: str | None
    source: str
    status: str
    run: str
    labels: str
    steps: int | float | None
    final_train_loss: float | None
    final_eval_loss: float | None
    eval_token_acc: float | None
    loss_drop_per_100_steps: float | None
    steps_to_50pct_drop: int | None
    steps_to_90pct_drop: int | None
    wall_time_to_last_eval_s: float | None


class ScalingRow(TypedDict):
    """One row of the scaling table: an N-GPU run over the 1-GPU run of its hardware, experiment and host."""

    hw: str | None
    experiment: str | None
    parallel: str
    host: str | None
    gpus_from: int
    gpus_to: int
    speedup: float | None
    efficiency: float | None
    efficiency_low: float | None
    efficiency_high: float | None
    basis: str
    hosts: str
    tokens_per_s_from: float | None
    tokens_per_s_to: float | None
    comm_ms_per_step: float | None
    gpu_busy_frac: float | None
    run_from: str
    run_to: str
    labels: str


def columns(row: type) -> list[str]:
    """A row type's keys, in order: its table's columns."""
    return list(row.__annotations__)
