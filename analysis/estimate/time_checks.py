"""The time model's two checks on the committed runs, as `swiftbench plan --checks` prints them.

(1) Each committed H200 run with a kernel-level profile gives back its steady median step: the profile alone (its
profiled steps' own host time + GPU work carried to the steady steps' tokens) is set beside the median, and the host's
part the model keeps (median - GPU work) beside what GPM measured on the steady steps. (2) The published cross-GPU
ratios are predicted from the reference bs16 run (analysis.estimate.anchors), and their errors give the band.
(5) Where a recipe also ran on a class the model predicts, its measured steady step and epoch stand beside what the
model carries there from the recipe's profiled run (a ratio across hosts: the host part is the profiled run's).
(6) The published workloads reproduced (results/anchors/, torchtune's own recipe): each run's steady tokens/s beside
the anchor's figure for the same GPU where it has one: the reproduction's difference, apart from the model's. Where a
run has a profile, the model carries it to the anchor's other GPUs (analysis.estimate.anchor_transfer).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path

from analysis.estimate import anchor_transfer, anchors, epoch, planner, scaled, transfer
from analysis.estimate.lengths import BatchStats
from analysis.measure.steps import steady_steps, step_time
from analysis.parse import anchor_run
from analysis.parse.record import RunRecord
from analysis.parse.results import ANCHORS_DIR, collect
from experiments.base import hardware
from experiments.base.errors import InputError


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
class ScaledCheck:
    """A committed H200 run's steady median beside the step the scaled model builds for its recipe from the
    reference profiles (its own tokens per step; the references' host)."""

    run: str
    host: str | None
    recipe: str
    steady_s: float
    scaled_s: float
    counted: bool  # the recipes' 4 dataloader workers (the references'): its error counts in the scaled band

    @property
    def error(self) -> float:
        return self.scaled_s / self.steady_s - 1


@dataclass(frozen=True)
class MeasuredCheck:
    """A recipe measured on a class the model otherwise predicts: the run's steady median step beside the step the
    model carries there from the recipe's profiled run (PROFILED), and, for a full epoch, the class's measured epoch
    figure (analysis.estimate.epoch.measured_on) beside the modelled one (modelled_on) with its band."""

    run: str
    hw: str
    host: str | None
    profiled: str
    steady_s: float
    predicted_step_s: float
    epoch_s: float | None = None
    predicted_epoch_s: float | None = None
    predicted_low_s: float | None = None
    predicted_high_s: float | None = None

    @property
    def step_error(self) -> float:
        return self.predicted_step_s / self.steady_s - 1

    @property
    def epoch_error(self) -> float | None:
        if self.epoch_s is None or self.predicted_epoch_s is None:
            return None
        return self.predicted_epoch_s / self.epoch_s - 1

    @property
    def within_band(self) -> bool | None:
        """Whether the measured epoch lies in the modelled epoch's band (None without a full epoch)."""
        if self.epoch_s is None or self.predicted_low_s is None or self.predicted_high_s is None:
            return None
        return self.predicted_low_s <= self.epoch_s <= self.predicted_high_s


@dataclass(frozen=True)
class TimeModelChecks:
    given_back: tuple[GivenBack, ...]
    anchors: tuple[anchors.AnchorCheck, ...]
    reference_run: str
    reference_parts: transfer.StepParts  # the reference run's steady step on its own class, by kind
    band: tuple[float, float]          # derived now from the anchors
    band_in_data: tuple[float, float]  # time_model.yaml's
    scaled: tuple[ScaledCheck, ...] = ()
    scaled_band: tuple[float, float] = (0.0, 0.0)          # derived now: scaled H200 errors x the anchors' band
    scaled_band_in_data: tuple[float, float] = (0.0, 0.0)  # time_model.yaml's scaled.band
    measured: tuple[MeasuredCheck, ...] = ()
    family_bands: dict[str, tuple[float, float]] = field(default_factory=dict)  # derived now (checks 2 and 6)
    family_bands_in_data: dict[str, tuple[float, float]] = field(default_factory=dict)  # time_model.yaml's
    reproduced: tuple[anchor_run.AnchorRun, ...] = ()  # (6) the anchor runs (reproductions)
    carried: tuple[AnchorCarried, ...] = ()            # (6) each carried to the anchor's other GPUs (carried)


def run_checks(results: str | Path = "results") -> TimeModelChecks:
    records = collect(results)
    rows = []
    for r in records:
        if r.hw != transfer.profiled_class() or not transfer.transferable(r):
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
    band = anchors.derive_band(checks)
    scaled_rows = scaled_checks(records)
    runs = reproductions(results)
    carried_runs = carried(runs)
    return TimeModelChecks(given_back=tuple(rows), anchors=tuple(checks),
                           reference_run=f"{ref.hw}/{ref.experiment}/{ref.run}",
                           reference_parts=transfer.step_on(transfer.profile_step(ref), str(ref.hw)),
                           band=band, band_in_data=transfer.band(), scaled=tuple(scaled_rows),
                           scaled_band=derive_scaled_band(scaled_rows, band),
                           scaled_band_in_data=transfer.band("scaled"), measured=tuple(measured_checks(records)),
                           family_bands=anchors.derive_family_bands(
                               checks, [p for c in carried_runs for p in c.predictions], band),
                           family_bands_in_data=family_bands_in_data(), reproduced=tuple(runs),
                           carried=tuple(carried_runs))


def family_bands_in_data() -> dict[str, tuple[float, float]]:
    """time_model.yaml's family_band entries, {family: (low, high)}."""
    c = transfer.model_constants()
    return {name.split(".", 1)[1]: (float(v["low"]), float(v["high"])) for name, v in c.values.items()
            if name.startswith("family_band.")}


def reproductions(results: str | Path = "results") -> list[anchor_run.AnchorRun]:
    """(6) Every run folder under RESULTS/anchors/<hw>/<workload>/ (analysis.parse.anchor_run), oldest first."""
    base = Path(results) / ANCHORS_DIR
    folders = sorted(p for p in base.glob("*/*/*") if (p / anchor_run.RUN_FILE).is_file()) if base.is_dir() else []
    return [anchor_run.parse(p) for p in folders]


@dataclass(frozen=True)
class AnchorCarried:
    """(6) One anchor run's predictions on the anchor's other GPUs, or why there are none (a one-line reason)."""

    workload: str
    run: str
    predictions: tuple[anchor_transfer.AnchorPrediction, ...] = ()
    missing: str | None = None


def carried(runs: list[anchor_run.AnchorRun]) -> list[AnchorCarried]:
    """(6) Each anchor run carried to its targets (anchor_transfer.predict); a run without a kernel-level profile
    says so instead."""
    out = []
    for r in runs:
        label = anchor_transfer.run_label(r)
        if r.profile is None:
            out.append(AnchorCarried(r.workload, label, missing=anchor_transfer.NO_PROFILE))
            continue
        try:
            out.append(AnchorCarried(r.workload, label, tuple(anchor_transfer.predict(r))))
        except InputError as e:
            out.append(AnchorCarried(r.workload, label, missing=f"{anchor_transfer.NO_PROFILE} ({e.message})"))
    return out


def measured_checks(records: list[RunRecord]) -> list[MeasuredCheck]:
    """(5) Each run on a class other than the profiled one whose recipe has a profiled run to carry: one row per
    run (its steady median vs the carried step); a class's epoch figures sit on its newest full epoch's row."""
    src = transfer.profiled_class()
    out = []
    for name in sorted({str(r.experiment) for r in records}):
        runs = [r for r in records if str(r.experiment) == name]
        prof = epoch.profile_run(runs)
        if prof is None:
            continue
        step = transfer.profile_step(prof)
        counted = epoch.countable(runs)
        for hw in sorted({str(r.hw) for r in counted if r.hw != src}):
            if hardware.resolve(hw) is None:
                continue
            on = [r for r in counted if r.hw == hw and (r.world_size or 1) == (prof.world_size or 1)
                  and step_time(r).median]
            full = epoch.full_epochs(on)
            measured = epoch.measured_on(runs, hw)
            modelled = epoch.modelled_on(runs, hw, prof)
            predicted = transfer.step_on(step, hw).total_s
            for r in on:
                last = bool(full) and r is full[-1] and measured is not None and modelled is not None
                out.append(MeasuredCheck(
                    run=f"{r.hw}/{r.experiment}/{r.run}", hw=hw, host=r.host_id,
                    profiled=f"{prof.hw}/{prof.experiment}/{prof.run}", steady_s=float(step_time(r).median or 0),
                    predicted_step_s=predicted,
                    epoch_s=measured.epoch_s if last and measured else None,
                    predicted_epoch_s=modelled.epoch_s if last and modelled else None,
                    predicted_low_s=modelled.low_s if last and modelled else None,
                    predicted_high_s=modelled.high_s if last and modelled else None))
    return out


def _run_stats(r: RunRecord, recipe: scaled.Recipe) -> BatchStats | None:
    """A run's micro-batches as the scaled model reads them, from its steady steps' tokens (tokens.jsonl)."""
    by = r.padded_by_step or r.tokens_by_step
    steps = [by[s] for s in steady_steps(r) if s in by] if by else []
    if not steps:
        return None
    ga, b = recipe.grad_accum, recipe.batch
    row_sq = statistics.mean((t / ga) ** 2 if recipe.padding_free else b * (t / ga / b) ** 2 for t in steps)
    return BatchStats(batch=b, padding_free=recipe.padding_free, mean_tokens=statistics.mean(t / ga for t in steps),
                      max_tokens=int(max(steps)), mean_row_sq=row_sq)


def scaled_checks(records: list[RunRecord]) -> list[ScaledCheck]:
    """(3) Every committed single-GPU eager LoRA H200 run with a steady median, against the scaled model."""
    refs = scaled.references(records)
    out = []
    for r in records:
        args = r.args or {}
        median = step_time(r).median
        if (not median or r.hw != transfer.profiled_class() or (r.world_size or 1) != 1 or args.get("torch_compile")
                or args.get("attn_impl") not in (None, "sdpa") or planner.run_method(args) != "lora"
                or not r.per_device_batch or not r.grad_accum):
            continue
        flags = planner.run_flags(args)
        recipe = scaled.Recipe(r.per_device_batch, r.grad_accum, flags.padding_free, flags.liger,
                               r.gradient_checkpointing is not False, int(args.get("lora_rank") or 8))
        stats = _run_stats(r, recipe)
        shapes = hardware.model_shapes(args, Path(r.path) if r.path else None)
        if stats is None or shapes is None:
            continue
        step = scaled.scaled_step(shapes, recipe, stats, refs)
        out.append(ScaledCheck(run=f"{r.hw}/{r.experiment}/{r.run}", host=r.host_id, recipe=describe(recipe),
                               steady_s=median, scaled_s=step.profile_only_s,
                               counted=int(args.get("dataloader_num_workers") or 0) == 4
                               and not args.get("group_by_length")))
    return out


def derive_scaled_band(rows: list[ScaledCheck], band: tuple[float, float]) -> tuple[float, float]:
    """The scaled model's H200 errors (counted runs) compounded with the cross-GPU band: (1 + e_h200)(1 + e_x) - 1."""
    errors = [r.error for r in rows if r.counted] or [0.0]
    lo, hi = min([*errors, 0.0]), max([*errors, 0.0])
    return (1 + lo) * (1 + band[0]) - 1, (1 + hi) * (1 + band[1]) - 1


def describe(recipe: scaled.Recipe) -> str:
    """A recipe as batch x grad-accum and its flags."""
    flags = [n for n, on in (("padding-free", recipe.padding_free), ("Liger", recipe.liger)) if on]
    flags.append("GC on" if recipe.gradient_checkpointing else "GC off")
    return f"{recipe.batch}x{recipe.grad_accum} " + ", ".join(flags)
