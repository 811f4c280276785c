"""The time model's two checks on the committed runs, as `swiftbench plan --checks` prints them.

(1) Each committed H200 run with a kernel-level profile gives back its steady median step: the profile alone (its
profiled steps' own host time + GPU work carried to the steady steps' tokens) is set beside the median, and the host's
part the model keeps (median - GPU work) beside what GPM measured on the steady steps. (2) The published cross-GPU
ratios are predicted from the reference bs16 run (analysis.estimate.anchors), and their errors give the band.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from analysis.estimate import anchors, transfer
from analysis.parse.results import collect


@dataclass(frozen=True)
class GivenBack:
    """One run's steady median beside what its profile gives: profile_only_s (the profiled steps' host + the GPU
    work at the steady tokens), model_s (the model's own step on its class: host from the median, so equal to it),
    and the host the model keeps beside GPM's steady host."""

    run: str
    steady_s: float
    profiled_wall_s: float
    profile_only_s: float
    model_s: float
    busy_s: float
    host_s: float
    gpm_host_s: float | None
    token_scale: float

    @property
    def profile_only_error(self) -> float:
        return self.profile_only_s / self.steady_s - 1

    @property
    def model_error(self) -> float:
        return self.model_s / self.steady_s - 1


@dataclass(frozen=True)
class TimeModelChecks:
    given_back: tuple[GivenBack, ...]
    anchors: tuple[anchors.AnchorCheck, ...]
    reference_run: str
    band: tuple[float, float]          # derived now from the anchors
    band_in_data: tuple[float, float]  # time_model.yaml's


def run_checks(results: str | Path = "results") -> TimeModelChecks:
    records = collect(results)
    rows = []
    for r in records:
        if r.hw != "h200" or not transfer.transferable(r):
            continue
        step = transfer.profile_step(r)
        if not step.steady_step_s:
            continue
        own = transfer.step_on(step, r.hw).total_s
        rows.append(GivenBack(run=step.run, steady_s=step.steady_step_s, profiled_wall_s=step.profiled_wall_s,
                              profile_only_s=step.profile_only_s, model_s=own, busy_s=step.busy_s,
                              host_s=step.host_s, gpm_host_s=step.gpm_host_s, token_scale=step.token_scale))
    ref = anchors.reference_run(records)
    checks = anchors.anchor_checks(ref)
    return TimeModelChecks(given_back=tuple(rows), anchors=tuple(checks),
                           reference_run=f"{ref.hw}/{ref.experiment}/{ref.run}",
                           band=anchors.derive_band(checks), band_in_data=transfer.band())
