"""Run-to-run spread section: every matrix run (picked for the tables or not), the spread between repeated runs of
one hardware and experiment, and every logged interval's step time."""
from __future__ import annotations

import pandas as pd

from analysis.measure import repeats, run_views
from analysis.parse.record import RunRecord
from analysis.present import plots, recommend_view, view_render
from analysis.present.report import html as H
from analysis.present.report.context import Context

# the tables and the figures' data are typed views (analysis.measure.run_views, analysis.measure.repeats),
# rendered through analysis.present.view_render


def runs_frame(ctx: Context, records: list[RunRecord]) -> pd.DataFrame:
    return view_render.to_frame(run_views.run_rows(records, ctx.in_tables), run_views.RunRow)


def spread_frame(records: list[RunRecord]) -> pd.DataFrame:
    """Per hardware, experiment and GPU layout with two runs or more (analysis.measure.run_views.spread_rows)."""
    return view_render.to_frame(run_views.spread_rows(records), run_views.SpreadRow)


def intervals_frame(records: list[RunRecord]) -> pd.DataFrame:
    return view_render.to_frame(run_views.interval_rows(records), run_views.IntervalRow)


def repeats_points(records: list[RunRecord]) -> pd.DataFrame:
    """The strip plot's points (analysis.measure.run_views.repeat_points)."""
    return view_render.to_frame(run_views.repeat_points(records), run_views.RepeatPoint)


def repeats_section(ctx: Context) -> str:
    """Repeated runs per recipe, host and harness (n, median, range), the strip plot of their epochs with the host
    probe beside, and the harness against the printed command."""
    groups = repeats.recipe_runs(ctx.records)
    frame = recommend_view.repeats_frame(groups)
    pairs = repeats.harness_pairs(ctx.records)
    points = repeats_points(ctx.records)
    labels = ctx.labels_of(ctx.ok_records())
    line = recommend_view.harness_line(pairs)
    fig = plots.repeats_strip(points, "Repeated runs: each run's epoch per recipe and host, the host probe beside",
                              labels)
    table = H.html_table(frame, view_render.formats(repeats.RepeatRow),
                         columns=[f.name for f in view_render.shown(repeats.RepeatRow)])
    strip = H.figure(ctx, fig, "repeats_strip.png", "Each timed run's epoch (points: runs, colour: host, number: "
                     "round) and the host probe before and after it. " + labels) if not points.empty else ""
    pairs_table = (H.html_table(recommend_view.harness_frame(pairs), view_render.formats(repeats.HarnessRow))
                   if pairs else "")
    # one fold: the page's height is bounded (tests/test_report.py), the figure keeps its size when opened
    return H.join([
        H.fold(f"<b>Repeated runs</b> per recipe, host and harness ({len(frame)} rows), each run's epoch and host "
               "probe, the harness's paired rounds", table + strip + (H.p(line) if line else "") + pairs_table),
        H.csv(ctx, frame, "repeats.csv"),
    ])


def spread_section(ctx: Context) -> str:
    records = sorted(ctx.matrix, key=lambda r: (ctx.hw_rank(r.hw), r.experiment, r.run))
    runs_df, spread_df, iv_df = runs_frame(ctx, records), spread_frame(records), intervals_frame(ctx.matrix)
    labels = ctx.labels_of(ctx.ok_records())
    fig = plots.step_time_spread(iv_df, "Run-to-run spread: ms per optimizer step of every interval", labels)
    return H.join([
        repeats_section(ctx),
        (H.p("<b>Run-to-run spread</b> (median ms per optimizer step of each run of one hardware and experiment; "
             "<i>spread_pct</i>: how much faster the fastest run is than the slowest by these medians; runs cut at "
             "different steps are not strictly comparable):")
         + H.html_table(spread_df, view_render.formats(run_views.SpreadRow))
         if not spread_df.empty else H.note("No hardware/experiment has more than one run.")),
        H.csv(ctx, spread_df, "run_spread.csv"),
        H.fold(f"every matrix run ({len(runs_df)}), including those the tables do not pick (<i>in_tables</i>)",
               H.html_table(runs_df, view_render.formats(run_views.RunRow))),
        H.csv(ctx, runs_df, "runs.csv"),
        H.figure(ctx, fig, "step_time_spread.png", "Seconds per optimizer step of every logged interval "
                 "(box: steady-state intervals; colours: why an interval is excluded). " + labels,
                 folded="<b>Every logged interval's step time</b> per run (the figure)"),
        H.csv(ctx, iv_df, "step_intervals.csv"),
    ])
