"""One run's row of the utilisation table (analysis.measure.utilisation.run_utilisation), as a typed dict whose keys are
the table's columns in order: mypy checks every key a row is built with or read by, a key added is a column added."""
from __future__ import annotations

from typing import TypedDict


class UtilisationRow(TypedDict):
    """One run's utilisation row (run_utilisation; the module docstring says what each key is): its keys are the
    table's columns, in order."""

    hw: str | None
    experiment: str | None
    run: str
    labels: str
    nvml_samples: int
    window_method: str | None
    train_start_s: float | None
    train_end_s: float | None
    train_s: float | None
    util_mean_pct: float | None
    util_median_pct: float | None
    power_mean_w: float | None
    power_median_w: float | None
    board_power_w: float | None
    power_fraction: float | None
    power_capped_pct: float | None
    sm_clock_mean_mhz: float | None
    sm_clock_median_mhz: float | None
    energy_run_j: float | None
    energy_train_j: float | None
    steady_s: float | None
    energy_steady_j: float | None
    tokens_steady: float | None
    j_per_1k_tokens: float | None
    mfu: float | None
    hfu: float | None
    gpm_busy_pct: float | None
    verdict: str | None
    evidence: str | None
