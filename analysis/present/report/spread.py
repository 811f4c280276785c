"""Run-to-run spread section: every matrix run (picked for the tables or not), the spread between repeated runs of
one hardware and experiment, and every logged interval's step time."""
from __future__ import annotations

import pandas as pd

from analysis.measure import compare, jobtime, repeats, steps, throughput
from analysis.parse.record import RunRecord
from analysis.present import plots, recommend_view
from analysis.present.report import html as H
from analysis.present.report.context import Context

RUN_FORMATS = {"ms_per_step": "{:.1f}", "ms_ci95_low": "{:.1f}", "ms_ci95_high": "{:.1f}",
               "ms_per_micro_step": "{:.1f}",
               "tokens_per_s": "{:,.0f}", "peak_gib": "{:.2f}", "steps": "{:.0f}", "steady_intervals": "{:.0f}"}
SPREAD_COLUMNS = ["hw", "experiment", "gpus", "runs", "ms_per_step of each run", "min", "max", "spread_pct",
                  "same steps"]
INTERVAL_COLUMNS = ["name", "hw", "experiment", "run", "from_step", "to_step", "step_time_ms", "interval"]


def _ms(seconds: float | None) -> float | None:
    return seconds * 1000 if seconds is not None else None


def runs_frame(ctx: Context, records: list[RunRecord]) -> pd.DataFrame:
    rows = []
    for r in records:
        st = steps.step_time(r)
        rows.append({
            "hw": r.hw, "experiment": r.experiment, "run": r.run, "status": r.status, "labels": "; ".join(r.labels),
            "in_tables": ctx.in_tables(r), "steps": r.global_steps, "complete": r.complete,
            "ms_per_step": _ms(st.median), "ms_ci95_low": _ms(st.ci95_low), "ms_ci95_high": _ms(st.ci95_high),
            "steady_intervals": st.n_intervals, "ms_per_micro_step": steps.micro_step_ms(r),
            "tokens_per_s": throughput.throughput(r).tokens_per_s, "peak_gib": r.peak_mem_gib,
        })
    return pd.DataFrame(rows)


def spread_frame(records: list[RunRecord]) -> pd.DataFrame:
    """Per hardware, experiment and GPU layout (GPU count and parallel mode: a 2-GPU step is another quantity, and
    mixing the two made the seed's spread 120 %) with two runs or more: each run's median ms per step, the fastest
    and slowest, and how much faster the fastest is than the slowest by those times
    (analysis.measure.compare.time_speedup(slowest ms, fastest ms).pct)."""
    groups: dict[tuple, list[tuple[RunRecord, float]]] = {}
    for r in records:
        median = steps.step_time(r).median
        if median:
            groups.setdefault((r.hw, r.experiment, r.layout), []).append((r, median * 1000))
    rows = []
    for (hw, exp, _), runs in groups.items():
        if len(runs) < 2:
            continue
        slowest, fastest = max(runs, key=lambda x: x[1]), min(runs, key=lambda x: x[1])
        gpus = runs[0][0].gpus
        rows.append({"hw": hw, "experiment": exp,
                     "gpus": f"{gpus:g}" + (f" ({runs[0][0].parallel})" if gpus > 1 else ""), "runs": len(runs),
                     "ms_per_step of each run": ", ".join(f"{ms:.1f} ({r.run})" for r, ms in runs),
                     "min": fastest[1], "max": slowest[1],
                     "spread_pct": compare.time_speedup(slowest[1], fastest[1]).pct,
                     "same steps": len({r.global_steps for r, _ in runs}) == 1})
    return pd.DataFrame(rows, columns=SPREAD_COLUMNS)


def intervals_frame(records: list[RunRecord]) -> pd.DataFrame:
    rows = []
    for r in records:
        for iv in steps.intervals(r):
            rows.append({"name": r.name, "hw": r.hw, "experiment": r.experiment, "run": r.run,
                         "from_step": iv.from_step, "to_step": iv.to_step, "step_time_ms": iv.step_time_s * 1000,
                         "interval": iv.excluded or "kept"})
    return pd.DataFrame(rows, columns=INTERVAL_COLUMNS)


def repeats_points(records: list[RunRecord]) -> pd.DataFrame:
    """One row per full-epoch single-GPU run of harness 2 or plain: its recipe and harness, host, round, epoch and
    host probe (the strip plot's points)."""
    rows = []
    for r in records:
        kind = repeats.harness(r)
        jt = jobtime.job_time(r)
        if kind not in (repeats.LAUNCHER, repeats.PLAIN) or not jt.full_epoch or not r.host_id:
            continue
        pl, pr = repeats.place(r), repeats.probes(r)
        rows.append({"recipe": f"{r.experiment} ({kind})", "host": r.host_id[:8], "run": r.run,
                     "round": pl.round if pl else None, "epoch_s": jt.epoch_s, "probe_before": pr.loop_before,
                     "probe_after": pr.loop_after})
    return pd.DataFrame(rows, columns=["recipe", "host", "run", "round", "epoch_s", "probe_before", "probe_after"])


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
    table = H.html_table(frame.drop(columns=["run_names"]), {
        "epoch_s": "{:.1f}", "epoch_low_s": "{:.1f}", "epoch_high_s": "{:.1f}", "steady_ms": "{:.0f}",
        "steady_low_ms": "{:.0f}", "steady_high_ms": "{:.0f}", "load_s": "{:.1f}", "load_low_s": "{:.1f}",
        "load_high_s": "{:.1f}", "probe_loop_ns_low": "{:.0f}", "probe_loop_ns_high": "{:.0f}"})
    strip = H.figure(ctx, fig, "repeats_strip.png", "Each timed run's epoch (points: runs, colour: host, number: "
                     "round) and the host probe before and after it. " + labels) if not points.empty else ""
    pairs_table = H.html_table(recommend_view.harness_frame(pairs), {
        "launcher_s": "{:.2f}", "plain_s": "{:.2f}", "launcher_x_plain": "{:.3f}"}) if pairs else ""
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
         + H.html_table(spread_df, {"min": "{:.1f}", "max": "{:.1f}", "spread_pct": "{:.1f} %"})
         if not spread_df.empty else H.note("No hardware/experiment has more than one run.")),
        H.csv(ctx, spread_df, "run_spread.csv"),
        H.fold(f"every matrix run ({len(runs_df)}), including those the tables do not pick (<i>in_tables</i>)",
               H.html_table(runs_df, RUN_FORMATS)),
        H.csv(ctx, runs_df, "runs.csv"),
        H.figure(ctx, fig, "step_time_spread.png", "Seconds per optimizer step of every logged interval "
                 "(box: steady-state intervals; colours: why an interval is excluded). " + labels,
                 folded="<b>Every logged interval's step time</b> per run (the figure)"),
        H.csv(ctx, iv_df, "step_intervals.csv"),
    ])
