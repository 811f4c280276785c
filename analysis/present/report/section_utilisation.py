"""Utilisation section: NVML utilisation, power, clocks and energy per run, and the GPU-bound / host-bound verdict
(analysis.measure.utilisation)."""
from __future__ import annotations

from pathlib import Path

from analysis.measure import utilisation as U
from analysis.measure import utilisation_view as UV
from analysis.present import plots, view_render
from analysis.present.report import html as H
from analysis.present.report.context import Context
from experiments.base import hardware


def timelines(ctx: Context) -> list[str]:
    """One figure per hardware x experiment with NVML samples, side by side."""
    by_run = {(u.hw, u.experiment, u.run): u for u in ctx.util_rows}
    groups: dict[tuple, list] = {}
    for r in ctx.matrix:
        if (Path(r.path) / U.NVML_NAME).is_file():
            groups.setdefault((r.hw, r.experiment), []).append(r)
    parts = []
    for (hw, exp), runs in sorted(groups.items(), key=lambda kv: (ctx.hw_rank(kv[0][0]), kv[0][1])):
        points: list[UV.TimelinePoint] = []
        windows, board, drawn = {}, {}, 0
        for r in sorted(runs, key=lambda r: r.run):
            u = by_run.get((r.hw, r.experiment, r.run))
            run_points = UV.timeline_points(r, u)
            if not run_points:
                continue
            drawn += 1
            points += run_points
            windows[r.name] = u.train_s if u else None
            board[r.name] = u.board_power_w if u else None
        if not drawn:
            continue
        labels = ctx.labels_of(runs)
        fig = plots.utilisation_timeline(view_render.to_frame(points, UV.TimelinePoint), windows, board,
                                         f"Utilisation over time: {hw} · {exp}", labels)
        parts.append(H.figure(ctx, fig, f"utilisation_{hw}_{exp}.png", f"GPU utilisation, power and SM clock of "
                              f"{hw} · {exp} runs (x = 0 at the start of training; green: the training window). "
                              + labels, folded=f"<b>Utilisation over time</b>: {H.e(hw)} · {H.e(exp)} "
                              f"({drawn} runs, one row each)"))
    if not groups:
        return [H.note("No run has an nvml.csv: utilisation, power, clocks and energy were not measured.")]
    return parts  # one page-wide figure each: side by side they showed at a fraction of their size


def gpm_steps(ctx: Context) -> list[str]:
    """One figure of every step's GPU-busy and host seconds (GPM counters) for the matrix runs that have them."""
    points: list[UV.GpmStepPoint] = []
    drawn = 0
    runs = [r for r in ctx.matrix if r.gpm_by_step]
    for r in sorted(runs, key=lambda r: (ctx.hw_rank(r.hw), r.experiment, r.run)):
        run_points = UV.gpm_step_points(r)
        drawn += bool(run_points)
        points += run_points
    if not drawn:
        return []
    labels = ctx.labels_of(runs)
    fig = plots.gpm_step_bars(view_render.to_frame(points, UV.GpmStepPoint), "Each step's GPU-active and host time "
                              "(GPM counters, no profiler)", labels)
    return [H.figure(ctx, fig, "gpm_steps.png", "Every optimizer step's wall time split by NVML's GPM counters into "
                     "the time a context was active on the GPU (dark) and the rest, the host's (light); steady steps "
                     "solid, warm-up, eval/save and profiled steps faded (analysis.measure.profile.gpm_step_rows). "
                     + labels, folded="<b>Each step's GPU-active and host time</b> (GPM counters, "
                     f"{drawn} runs)")]


def utilisation_section(ctx: Context) -> str:
    util = ctx.util
    formats = view_render.formats(UV.UtilisationView)
    limits = ", ".join(f"{k} {v} W" for k, v in hardware.board_power().items())
    parts = [
        H.p("From each run's <code>nvml.csv</code> (one sample a second), tied to the log by the TensorBoard event "
            "file's time stamp (or the last busy sample); energy per 1,000 tokens = 1,000 x joules over the "
            "steady-state intervals / the tokens trained in them (analysis/measure/utilisation.py). <b>Verdict</b>: "
            f"three votes, each host-bound when below: median GPU utilisation {U.UTIL_HOST_BOUND_PCT:.0f} %, median "
            f"power {U.POWER_HOST_BOUND_FRACTION:.0%} of the board limit ({H.e(limits)}), MFU {U.MFU_HOST_BOUND:.0%} "
            "(below it the tensor cores idle most of every step; each run's MFU is in the table); the majority "
            "wins, a tie goes to "
            "utilisation. Where a run has GPM counters (<code>gpm.jsonl</code>: the launcher reads NVML's GPU "
            "Performance Monitoring at every step's end, H100/H200 and newer), the utilisation vote is "
            "<i>gpm_busy_pct</i>, the GPU's busy share of the steady steps, instead of the NVML median: NVML's "
            "once-a-second readings cover only a short sample period each and flip between 0 and 100 % for a mixed "
            "step."),
    ]
    if util.empty:
        parts.append(H.note("No runs."))
        return H.join(parts)
    parts += [
        H.html_table(util, formats, columns=list(UV.SHOWN)),
        H.fold("every column of the utilisation table", H.html_table(util, formats, columns=list(UV.MAIN))),
        H.fold("<b>Energy</b> per run (joules from NVML's energy counter: the whole sampled run, the training window, "
               "the steady-state intervals; tokens trained in those intervals)",
               H.html_table(util, formats, columns=list(UV.ENERGY))),
        H.fold("<b>Verdict per run</b>, with its evidence", "<ul>" + "".join(
            f"<li>{H.e(r.hw)} · {H.e(r.experiment)} · {H.e(r.run)}: "
            f"<span class=\"{'sb-verdict-host' if r.verdict == 'host-bound' else 'sb-verdict-gpu'}\">"
            f"{H.e(r.verdict)}</span> — {H.e(r.evidence)}</li>" for r in ctx.util_rows) + "</ul>"),
        H.csv(ctx, util, "utilisation.csv"),
        *gpm_steps(ctx),
        *timelines(ctx),
    ]
    return H.join(parts)
