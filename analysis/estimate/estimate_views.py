"""The estimates section's tables and figure data as typed views (issue 46): the time model against published
cross-GPU ratios (analysis.estimate.anchors), each quick run's estimate against the full run after it and the steps
both runs have (analysis.estimate.quick_check), one frozen row each, built here and rendered by
analysis.present.view_render. QUICK_BRIEF: the quick table's fields on the page (every shown field is in the folded
table and every field in the CSV).
"""
from __future__ import annotations

from dataclasses import dataclass

from analysis.core.viewfield import col, hidden
from analysis.estimate import quick_check as Q
from analysis.estimate.anchor_transfer import AnchorPrediction
from analysis.estimate.anchors import AnchorCheck
from analysis.parse.record import RunRecord


@dataclass(frozen=True)
class AnchorRow:
    """One published pair: its throughput ratio beside the time model's predicted time ratio, and the error."""

    source: str = col("source", default="")
    pair: str = col("pair", default="")
    comparable: bool = col("comparable job", default=False)
    published: float = col("published ratio", "", "{:.3f}", default=0.0)
    predicted: float = col("predicted ratio", "", "{:.3f}", default=0.0)
    error: float = col("error", "", "{:+.1%}", default=0.0)


def anchor_rows(checks: list[AnchorCheck]) -> tuple[AnchorRow, ...]:
    return tuple(AnchorRow(source=c.source, pair=c.pair, comparable=c.comparable, published=c.published,
                           predicted=c.predicted, error=c.error) for c in checks)


@dataclass(frozen=True)
class CarriedRow:
    """A published workload reproduced on one class and carried by the model to another (anchor_transfer): the
    time model's tokens/s beside the anchor's figure, the share of the card's peak that figure needs, and the error
    where the figure is a check (docs/time-model.md, check 6)."""

    workload: str = col("workload", default="")
    run: str = col("reproduced in", default="")
    dst: str = col("carried to", default="")
    model_tokens_per_s: float = col("time model's tokens/s", "", "{:,.0f}", default=0.0)
    published: float | None = col("published tokens/s", "", "{:,.0f}")
    needs: float | None = col("peak share the published figure needs", "", "{:.0%}")
    model_ratio: float = col("time model's ratio to the run's GPU", "", "{:.3f}", default=0.0)
    published_ratio: float | None = col("published ratio to the run's GPU", "", "{:.3f}")
    check: str = col("a check?", default="")
    error: float | None = col("error", "", "{:+.1%}")
    basis: str = col("error on", default="")


def carried_rows(predictions: list[AnchorPrediction]) -> tuple[CarriedRow, ...]:
    """One row per prediction with a published figure (the A10 / A100 rows have none to check); the error only where
    the figure counts as a check (AnchorPrediction.counts)."""
    def check(p: AnchorPrediction) -> str:
        if not p.feasible:
            return f"no: the figure needs {p.published_use:.0%} of the card's dense bf16 peak (another configuration)"
        if p.note:
            return f"no: {p.note}"
        return "yes"

    return tuple(CarriedRow(workload=p.workload, run=p.run, dst=p.dst, model_tokens_per_s=p.tokens_per_s,
                            published=p.published, needs=p.published_use, model_ratio=p.ratio,
                            published_ratio=p.published_ratio, check=check(p), error=p.error if p.counts else None,
                            basis=("the ratio to " + p.src if p.basis == "ratio" else "tokens/s") if p.counts else "")
                 for p in predictions if p.published is not None)


NUM = "{:,.4g}"


@dataclass(frozen=True)
class QuickRow:
    """One quick run (quick_check.comparison_table): its estimate of the full run's training time with the 95 % range,
    the full run's measured time and the error, the error's three parts (quick_check.ErrorParts) and how the full run
    repeated the quick run's steady steps (quick_check.SameSteps: wall, GPU-active and host ratios)."""

    experiment: str | None = col("recipe")
    quick_run: str = col("quick run", default="")
    first_on_host: bool | None = col("host's first run")
    full_first: bool | None = col("full run made first")
    quick_steps: int | None = col("quick run's steps", "", NUM)
    fit_steps: int | None = col("steps fitted", "", NUM)
    form: str | None = col("model form")
    predicted_train_s: float | None = col("predicted train_runtime", "s", NUM)
    low: float | None = col("predicted low", "s", NUM)
    high: float | None = col("predicted high", "s", NUM)
    measured_train_s: float | None = col("measured train_runtime", "s", NUM)
    error_pct: float | None = col("error", "%", "{:+.2f}")
    inside: bool | None = col("inside the range")
    to_anchor_s: float | None = col("error up to the anchor step", "s", "{:+.1f}")
    steps_s: float | None = col("error of the modelled steps", "s", "{:+.1f}")
    events_s: float | None = col("error of the evaluations and saves", "s", "{:+.1f}")
    same_steps_ratio: float | None = col("full / quick on the same steps", "", NUM)
    same_steps_gpu_ratio: float | None = col("full / quick GPU-active on the same steps", "", NUM)
    same_steps_host_ratio: float | None = col("full / quick host on the same steps", "", NUM)
    hw: str | None = hidden("GPU class")
    full_run: str | None = hidden("full run")


QUICK_BRIEF = ("experiment", "quick_run", "quick_steps", "predicted_train_s", "low", "high", "measured_train_s",
               "error_pct", "inside", "same_steps_ratio")


def quick_rows(rows: list[Q.Paired | Q.Unpaired]) -> tuple[QuickRow, ...]:
    """Each comparison_table row as a QuickRow (a quick run without a full run after it: its estimate only)."""
    out = []
    for r in rows:
        p = r if isinstance(r, Q.Paired) else None
        parts, same = (p.error_parts, p.same_steps) if p else (None, None)
        out.append(QuickRow(
            experiment=r.experiment, quick_run=r.quick_run, first_on_host=r.first_on_host,
            full_first=p.full_first if p else None, quick_steps=r.quick_steps, fit_steps=r.fit_steps, form=r.form,
            predicted_train_s=r.predicted_train_s, low=r.low, high=r.high,
            measured_train_s=p.measured_train_s if p else None, error_pct=p.error_pct if p else None,
            inside=p.inside if p else None, to_anchor_s=parts.to_anchor_s if parts else None,
            steps_s=parts.steps_s if parts else None, events_s=parts.events_s if parts else None,
            same_steps_ratio=same.ratio if same else None, same_steps_gpu_ratio=same.busy_ratio if same else None,
            same_steps_host_ratio=same.host_ratio if same else None, hw=r.hw, full_run=r.full_run))
    return tuple(out)


@dataclass(frozen=True)
class PairStepPoint:
    """One steady interval a quick run and the full run after it both have (quick_check.same_step_rows), with the
    pair's ratio (quick_check.SameSteps.ratio)."""

    name: str = col("pair", default="")
    from_step: int = col("from step", "", "{:d}", default=0)
    to_step: int = col("to step", "", "{:d}", default=0)
    first_s: float = col("quick run", "s", "{:.3f}", default=0.0)
    second_s: float = col("full run", "s", "{:.3f}", default=0.0)
    first_busy_s: float | None = col("quick run GPU-active", "s", "{:.3f}")
    first_host_s: float | None = col("quick run host", "s", "{:.3f}")
    second_busy_s: float | None = col("full run GPU-active", "s", "{:.3f}")
    second_host_s: float | None = col("full run host", "s", "{:.3f}")
    ratio: float | None = col("full / quick on the same steps", "", "{:.3f}")


def pair_step_points(rows: list[Q.Paired | Q.Unpaired], records: list[RunRecord]
                     ) -> tuple[tuple[PairStepPoint, ...], list[RunRecord]]:
    """The steps each pair of ROWS (a quick run and its full run among RECORDS) both have, and the runs drawn."""
    by_run: dict[tuple, RunRecord] = {(r.hw, r.experiment, r.run): r for r in records}
    points: list[PairStepPoint] = []
    runs: list[RunRecord] = []
    for r in rows:
        q, full = by_run.get((r.hw, r.experiment, r.quick_run)), by_run.get((r.hw, r.experiment, r.full_run))
        if q is None or full is None:
            continue
        steps = Q.same_step_rows(q, full)
        if steps:
            runs += [q, full]
            ratio = r.same_steps.ratio if isinstance(r, Q.Paired) else None
            points += [PairStepPoint(f"{r.hw} · {r.experiment} · {r.quick_run}", s.from_step, s.to_step, s.first_s,
                                     s.second_s, s.first_busy_s, s.first_host_s, s.second_busy_s, s.second_host_s,
                                     ratio) for s in steps]
    return tuple(points), runs
