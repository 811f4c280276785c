"""Estimates section (the planner's validation): how far the planner was off on the runs we made
(analysis.estimate.validate.planner_error), the runs its model covers, and every run's estimate beside its measurement
(analysis.estimate.validate.estimates_vs_measurements), the tables folded."""
from __future__ import annotations

from analysis.estimate.validate import planner_error
from analysis.present.report import html as H
from analysis.present.report.answer import error_text
from analysis.present.report.context import Context

CHECKED = ["check", "experiment", "run", "per_device_batch", "seq_len", "cap_gib", "measured_peak_gib",
           "estimated_peak_gib", "ratio", "within_10pct", "fits_correct", "measured_step_s", "estimated_step_s",
           "step_ratio"]


def estimates_section(ctx: Context) -> str:
    df = ctx.estimates()
    err = planner_error(df)
    modelled = df[df["check"].isin(["reserved peak", "fits under the cap"])] if "check" in df else df.iloc[0:0]
    formats = {c: "{:,.4g}" for c in df.select_dtypes("number").columns}
    not_modelled = int(df["check"].astype(str).str.startswith("not modelled").sum()) if "check" in df else 0
    return H.join([
        H.p(f"The planner (analysis/estimate/planner.py) against the {len(df)} run folders: <b>{H.e(error_text(err))}"
            f"</b>. {len(modelled)} runs are of a configuration its model covers (finished uncapped runs: the "
            "reserved peak and the step time; runs under an allocator cap: whether the batch fits), "
            f"{not_modelled} use a recipe it does not model (padding-free, Liger, length-grouped, eager attention, "
            "GC off), the rest did not finish. Three constants are calibrated on these same runs, so agreement is "
            "a consistency check, not an independent validation."),
        H.fold(f"the {len(modelled)} runs its model covers, estimate beside measurement",
               H.html_table(modelled, formats, columns=[c for c in CHECKED if c in modelled.columns])),
        H.fold(f"every run ({len(df)}), every column", H.html_table(df, formats)),
        H.csv(ctx, df, "estimates_vs_measurements.csv"),
    ])
