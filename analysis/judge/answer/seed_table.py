"""The seed recipe per GPU class as one typed view (issue 46): a row per measured run (one per host), the planner's
prediction and the article's figure (SeedRow), rendered by analysis.present.view_render and the report's answer
section. Every number is some stage's: measured rows analysis.measure (steps, throughput, profile), predicted rows
the planner (analysis.estimate.planner), published rows the seeds.

Two durations, two names: a measured row's STEADY_EXTRAPOLATED_S is the steady median step x the epoch's steps
(analysis.measure.steps.epoch_time: warm-up, evaluations and saves left out); a predicted row's PLANNER_EPOCH_S is
the planner's epoch (its total_time_s: the one estimator's train_runtime where it has one, else the roofline's).
"""
from __future__ import annotations

from dataclasses import dataclass

from analysis.core.viewfield import col, hidden
from analysis.estimate import planner
from analysis.judge.answer.published import short
from analysis.measure import profile, steps, throughput
from analysis.parse.record import RunRecord


@dataclass(frozen=True)
class SeedRow:
    """One row of the seed recipe's table: a measured run, the planner's prediction or the article's figure; with
    the class's recipe (analysis.judge.answer.classes) and its epoch."""

    hw: str = col("GPU class", default="")
    gpu: str | None = col("GPU")
    source: str = col("source", default="")           # measured, predicted, published
    run: str | None = hidden("run")
    host: str | None = hidden("host id")
    gpus: int | None = hidden("GPUs", "", "{:d}")
    labels: str = hidden("labels", default="")
    ms_per_sample: float | None = col("ms / sample", "", "{:,.0f}")
    ms_per_step: float | None = col("ms / step", "", "{:,.0f}")
    tokens_per_s: float | None = col("tokens/s", "", "{:,.0f}")
    peak_gib: float | None = col("peak", "GiB", "{:.1f}")
    capacity_gib: float = col("capacity", "GiB", "{:.0f}", default=0.0)
    fits: bool | None = hidden("fits")
    gpu_busy_frac: float | None = col("GPU busy", "", "{:.0%}")
    epoch_steps: int | None = hidden("epoch steps", "", "{:d}")
    steady_extrapolated_s: float | None = col("steady x steps", "s", "{:.1f}")
    planner_epoch_s: float | None = col("planner's epoch", "s", "{:.1f}")
    gpu_hours: float | None = col("GPU\u2011h", "", "{:.2f}")  # a non-breaking hyphen
    largest_batch: int | None = hidden("largest batch", "", "{:d}")
    class_recipe: str | None = col("the class's recipe")
    class_recipe_epoch_s: float | None = col("its epoch", "s", "{:.1f}")  # the class's recipe's
    detail: str = hidden("source detail", default="")


def _gpu(hw: str | None) -> str | None:
    return short(hw) if hw else hw  # no class: its None (or "") as it is


def _host(rec: RunRecord) -> str:
    return rec.host_id[:8] if rec.host_id else "host ?"


def measured_row(rec: RunRecord, capacity: float, recipe: str | None, recipe_epoch_s: float | None) -> SeedRow:
    """A measured seed-recipe run: its steady step extrapolated over the epoch's steps."""
    st = steps.step_time(rec).median
    ep = steps.epoch_time(rec)
    gpus = rec.world_size or 1
    extra = [f"{gpus} GPUs" if gpus > 1 else None,
             f"{rec.global_steps} steps" if rec.is_cut_run and rec.global_steps else None,
             "forced" if any(lab.startswith("forced") for lab in rec.labels) else None]
    named = [x for x in extra if x]
    return SeedRow(hw=rec.hw or "", gpu=_gpu(rec.hw), source="measured", run=rec.run, host=rec.host_id, gpus=gpus,
                   labels="; ".join(rec.labels), detail=" · ".join([_host(rec)] + named),
                   ms_per_sample=steps.sample_ms(rec), ms_per_step=st * 1000 if st else None,
                   tokens_per_s=throughput.throughput(rec).tokens_per_s, peak_gib=rec.peak_mem_gib,
                   capacity_gib=capacity, gpu_busy_frac=profile.busy_fraction(rec), epoch_steps=ep.steps,
                   steady_extrapolated_s=ep.seconds, gpu_hours=ep.gpu_hours, class_recipe=recipe,
                   class_recipe_epoch_s=recipe_epoch_s)


def predicted_row(p: planner.PlanRow, recipe: str | None, recipe_epoch_s: float | None) -> SeedRow:
    """The planner's row: its time where it has one (the one estimator's, as `plan` prints it), else the roofline's;
    the GPU's busy share is the roofline's."""
    roof = p.roofline
    timed = p.total_time_s is not None and p.step_time_s is not None
    how = f"{p.time_kind} time ({p.time_source})" if timed else "roofline time"
    return SeedRow(hw=p.hw, gpu=_gpu(p.hw), source="predicted", run=None, host=None, gpus=1,
                   labels=f"planner (analysis/estimate/planner.py): {how}, memory model",
                   detail="planner" + ("" if p.fits else "; does NOT fit"),
                   ms_per_sample=p.ms_per_sample if timed else roof.ms_per_sample,
                   ms_per_step=(p.step_time_s if timed and p.step_time_s else roof.step_time_s) * 1000,
                   tokens_per_s=p.tokens_per_s if timed else roof.tokens_per_s, peak_gib=p.logged_peak_gib,
                   capacity_gib=p.capacity_gib, fits=p.fits, gpu_busy_frac=roof.gpu_busy_frac, epoch_steps=p.steps,
                   planner_epoch_s=p.total_time_s if timed else roof.total_time_s,
                   gpu_hours=(p.total_time_s if timed and p.total_time_s else roof.total_time_s) / 3600,
                   largest_batch=p.max_batch, class_recipe=recipe, class_recipe_epoch_s=recipe_epoch_s)


def published_row(hw: str, ms_per_sample: float | None, capacity: float) -> SeedRow | None:
    """The article's figure for HW (ms per sample only), None where it has none."""
    if ms_per_sample is None:
        return None
    return SeedRow(hw=hw, gpu=_gpu(hw), source="published", run="seeds/ms_swift_hw_test.yaml", host=None,
                   labels="published (ms-swift hardware article; its 'step' is one sample)", detail="article",
                   ms_per_sample=ms_per_sample, capacity_gib=capacity)
