"""Estimates section: the memory/time planner's estimates beside the measurements
(analysis.estimate.validate.estimates_vs_measurements)."""
from __future__ import annotations

from analysis.estimate.validate import estimates_vs_measurements
from analysis.present.report import html as H
from analysis.present.report.context import Context


def estimates_section(ctx: Context) -> str:
    df = estimates_vs_measurements(ctx.results_dir)
    return H.join([
        H.p("The memory/time planner's estimates beside the measurements "
            "(analysis.estimate.validate.estimates_vs_measurements)."),
        H.html_table(df, {c: "{:,.4g}" for c in df.select_dtypes("number").columns}),
        H.csv(ctx, df, "estimates_vs_measurements.csv"),
    ])
