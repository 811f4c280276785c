"""The utilisation section's tables and figure data as typed views (issue 46): one frozen row per run
(analysis.measure.utilisation.run_utilisation's keys, each with its column's words), per NVML sample of a run's
timeline and per GPM step, built here from the measures and rendered by analysis.present.view_render. SHOWN, MAIN and
ENERGY: the fields of the page's table, of its folded full table and of its energy table.
"""
from __future__ import annotations

from dataclasses import dataclass

from analysis.core.viewfield import col
from analysis.measure import profile
from analysis.measure import utilisation as U
from analysis.parse.record import RunRecord
from experiments.base.runfolder import Nvml


@dataclass(frozen=True)
class UtilisationView:
    """One run's NVML utilisation, power, clocks, energy and the GPU-bound / host-bound verdict with its evidence
    (run_utilisation; analysis.measure.utilisation says what each is)."""

    hw: str | None = col("GPU class")
    experiment: str | None = col("recipe")
    run: str = col("run", default="")
    labels: str = col("labels", default="")
    nvml_samples: int = col("NVML samples", "", "{:d}", default=0)
    window_method: str | None = col("training window from")
    train_start_s: float | None = col("training starts", "s", "{:.1f}")
    train_end_s: float | None = col("training ends", "s", "{:.1f}")
    train_s: float | None = col("training", "s", "{:.1f}")
    util_mean_pct: float | None = col("GPU utilisation (mean)", "%", "{:.0f} %")
    util_median_pct: float | None = col("GPU utilisation (median)", "%", "{:.0f} %")
    power_mean_w: float | None = col("power (mean)", "W", "{:.0f}")
    power_median_w: float | None = col("power (median)", "W", "{:.0f}")
    board_power_w: float | None = col("board power limit", "W", "{:.0f}")
    power_fraction: float | None = col("median power / board limit", "%", "{:.0f} %", scale=100)
    power_capped_pct: float | None = col("power-capped samples", "%", "{:.0f} %")
    sm_clock_mean_mhz: float | None = col("SM clock (mean)", "MHz", "{:.0f}")
    sm_clock_median_mhz: float | None = col("SM clock (median)", "MHz", "{:.0f}")
    energy_run_j: float | None = col("energy, sampled run", "J", "{:,.0f}")
    energy_train_j: float | None = col("energy, training window", "J", "{:,.0f}")
    steady_s: float | None = col("steady intervals", "s", "{:.1f}")
    energy_steady_j: float | None = col("energy, steady intervals", "J", "{:,.0f}")
    tokens_steady: float | None = col("tokens in the steady intervals", "", "{:,.0f}")
    j_per_1k_tokens: float | None = col("energy per 1,000 tokens", "J", "{:.1f}")
    mfu: float | None = col("MFU", "%", "{:.1f} %", scale=100)
    hfu: float | None = col("HFU", "%", "{:.1f} %", scale=100)
    gpm_busy_pct: float | None = col("GPU busy share of the steady steps (GPM)", "%", "{:.0f} %")
    verdict: str | None = col("verdict")
    evidence: str | None = col("evidence")


# the page's table (the verdict and its three votes first), the folded one with every vote and the energy table
SHOWN = ("experiment", "run", "verdict", "gpm_busy_pct", "util_median_pct", "power_fraction", "mfu", "power_median_w",
         "j_per_1k_tokens", "sm_clock_median_mhz", "train_s")
MAIN = ("hw", "experiment", "run", "train_s", "gpm_busy_pct", "util_median_pct", "util_mean_pct", "power_median_w",
        "power_mean_w", "power_fraction", "power_capped_pct", "sm_clock_median_mhz", "sm_clock_mean_mhz", "mfu",
        "j_per_1k_tokens", "verdict")
ENERGY = ("hw", "experiment", "run", "window_method", "train_start_s", "train_s", "energy_run_j", "energy_train_j",
          "steady_s", "energy_steady_j", "tokens_steady", "j_per_1k_tokens", "board_power_w", "hfu")


def utilisation_views(records: list[RunRecord]) -> tuple[UtilisationView, ...]:
    """Each of RECORDS' utilisation row (run_utilisation), failed runs included."""
    return tuple(UtilisationView(**U.run_utilisation(r)) for r in records)


@dataclass(frozen=True)
class TimelinePoint:
    """One NVML sample of a run (utilisation.timeline): seconds since training started, whether inside the training
    window, GPU utilisation, power and SM clock."""

    name: str = col("run name", default="")
    gpu: int = col("GPU index", "", "{:d}", default=0)
    t_rel_s: float = col("since training started", "s", "{:.1f}", default=0.0)
    in_training: bool = col("in the training window", default=False)
    util_gpu_pct: float | None = col("GPU utilisation", "%", "{:.0f}")
    power_w: float | None = col("power", "W", "{:.0f}")
    sm_clock_mhz: float | None = col("SM clock", "MHz", "{:.0f}")


def timeline_points(rec: RunRecord, row: UtilisationView | None) -> tuple[TimelinePoint, ...]:
    """REC's NVML samples, the training window from its utilisation row ROW (none without samples)."""
    tl = U.timeline(rec, row.train_start_s if row else None, row.train_end_s if row else None)
    if tl is None:
        return ()
    return tuple(TimelinePoint(name=rec.name, gpu=int(s.get(Nvml.GPU, 0)), t_rel_s=s["t_rel_s"],
                               in_training=bool(s["in_training"]), util_gpu_pct=s.get(Nvml.UTIL_GPU_PCT),
                               power_w=s.get(Nvml.POWER_W), sm_clock_mhz=s.get(Nvml.SM_CLOCK_MHZ))
                 for s in tl.to_dict("records"))


@dataclass(frozen=True)
class GpmStepPoint:
    """One optimizer step of a run's GPM counters (profile.gpm_step_rows), with the run's steady busy share
    (profile.steady_share)."""

    name: str = col("run", default="")
    step: int = col("step", "", "{:d}", default=0)
    wall_s: float = col("step wall time", "s", "{:.3f}", default=0.0)
    busy_s: float = col("GPU busy", "s", "{:.3f}", default=0.0)
    host_s: float = col("host", "s", "{:.3f}", default=0.0)
    sm_util: float | None = col("SM utilisation", "%", "{:.0f}")
    tensor_util: float | None = col("tensor utilisation", "%", "{:.0f}")
    steady: bool = col("steady", default=False)
    profiled: bool = col("profiled", default=False)
    steady_busy_frac: float | None = col("steady steps' GPU busy share", "", "{:.0%}")


def gpm_step_points(rec: RunRecord) -> tuple[GpmStepPoint, ...]:
    """Every GPM step of REC, named 'hw · experiment · run'."""
    share = profile.steady_share(rec).gpm_busy_frac
    return tuple(GpmStepPoint(name=f"{rec.hw} · {rec.experiment} · {rec.run}", step=g.step, wall_s=g.wall_s,
                              busy_s=g.busy_s, host_s=g.host_s, sm_util=g.sm_util, tensor_util=g.tensor_util,
                              steady=g.steady, profiled=g.profiled, steady_busy_frac=share)
                 for g in profile.gpm_step_rows(rec))
