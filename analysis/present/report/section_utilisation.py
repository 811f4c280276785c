"""Utilisation section: NVML utilisation, power, clocks and energy per run, and the GPU-bound / host-bound verdict
(analysis.measure.utilisation)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis.measure import profile as P
from analysis.measure import utilisation as U
from analysis.present import plots
from analysis.present.report import html as H
from analysis.present.report.context import Context
from experiments.base import hardware


def _share(v: float) -> str:
    """A 0-1 share as a percentage, in the one form the table uses for every percentage."""
    return f"{v * 100:.0f} %"


def _share1(v: float) -> str:
    return f"{v * 100:.1f} %"


# every percentage in one form, "31 %" (MFU and HFU with one decimal: they are a few per cent)
FORMATS = {"train_start_s": "{:.1f}", "train_s": "{:.1f}", "util_mean_pct": "{:.0f} %", "util_median_pct": "{:.0f} %",
           "power_mean_w": "{:.0f}", "power_median_w": "{:.0f}", "power_fraction": _share,
           "power_capped_pct": "{:.0f} %", "sm_clock_mean_mhz": "{:.0f}", "sm_clock_median_mhz": "{:.0f}",
           "energy_run_j": "{:,.0f}", "energy_train_j": "{:,.0f}", "energy_steady_j": "{:,.0f}",
           "steady_s": "{:.1f}", "tokens_steady": "{:,.0f}", "j_per_1k_tokens": "{:.1f}", "mfu": _share1,
           "hfu": _share1, "board_power_w": "{:.0f}", "gpm_busy_pct": "{:.0f} %"}
MAIN_COLUMNS = ["hw", "experiment", "run", "train_s", "gpm_busy_pct", "util_median_pct", "util_mean_pct",
                "power_median_w",
                "power_mean_w", "power_fraction", "power_capped_pct", "sm_clock_median_mhz", "sm_clock_mean_mhz",
                "mfu", "j_per_1k_tokens", "verdict"]
# the columns on the page (the verdict and its three votes first); every column is in the folded table and the CSV
SHOWN_COLUMNS = ["experiment", "run", "verdict", "gpm_busy_pct", "util_median_pct", "power_fraction", "mfu",
                 "power_median_w",
                 "j_per_1k_tokens", "sm_clock_median_mhz", "train_s"]
ENERGY_COLUMNS = ["hw", "experiment", "run", "window_method", "train_start_s", "train_s", "energy_run_j",
                  "energy_train_j", "steady_s", "energy_steady_j", "tokens_steady", "j_per_1k_tokens", "board_power_w",
                  "hfu"]


def timelines(ctx: Context) -> list[str]:
    """One figure per hardware x experiment with NVML samples, side by side."""
    by_run = {(u["hw"], u["experiment"], u["run"]): u for u in ctx.util.to_dict("records")}
    groups: dict[tuple, list] = {}
    for r in ctx.matrix:
        if (Path(r.path) / U.NVML_NAME).is_file():
            groups.setdefault((r.hw, r.experiment), []).append(r)
    parts = []
    for (hw, exp), runs in sorted(groups.items(), key=lambda kv: (ctx.hw_rank(kv[0][0]), kv[0][1])):
        frames, windows, board = [], {}, {}
        for r in sorted(runs, key=lambda r: r.run):
            u = by_run.get((r.hw, r.experiment, r.run), {})
            tl = U.timeline(r, u.get("train_start_s"), u.get("train_end_s"))
            if tl is None:
                continue
            tl["name"] = r.name
            frames.append(tl)
            windows[r.name] = u.get("train_s")
            board[r.name] = u.get("board_power_w")
        if not frames:
            continue
        labels = ctx.labels_of(runs)
        fig = plots.utilisation_timeline(pd.concat(frames, ignore_index=True), windows, board,
                                         f"Utilisation over time: {hw} · {exp}", labels)
        parts.append(H.figure(ctx, fig, f"utilisation_{hw}_{exp}.png", f"GPU utilisation, power and SM clock of "
                              f"{hw} · {exp} runs (x = 0 at the start of training; green: the training window). "
                              + labels, folded=f"<b>Utilisation over time</b>: {H.e(hw)} · {H.e(exp)} "
                              f"({len(frames)} runs, one row each)"))
    if not groups:
        return [H.note("No run has an nvml.csv: utilisation, power, clocks and energy were not measured.")]
    return parts  # one page-wide figure each: side by side they showed at a fraction of their size


def gpm_steps(ctx: Context) -> list[str]:
    """One figure of every step's GPU-busy and host seconds (GPM counters) for the matrix runs that have them."""
    frames = []
    runs = [r for r in ctx.matrix if r.gpm_by_step]
    for r in sorted(runs, key=lambda r: (ctx.hw_rank(r.hw), r.experiment, r.run)):
        rows = P.gpm_step_rows(r)
        if rows:
            frames.append(pd.DataFrame(rows).assign(name=f"{r.hw} · {r.experiment} · {r.run}",
                                                    steady_busy_frac=P.steady_share(r).gpm_busy_frac))
    if not frames:
        return []
    labels = ctx.labels_of(runs)
    fig = plots.gpm_step_bars(pd.concat(frames, ignore_index=True), "Each step's GPU-active and host time (GPM "
                              "counters, no profiler)", labels)
    return [H.figure(ctx, fig, "gpm_steps.png", "Every optimizer step's wall time split by NVML's GPM counters into "
                     "the time a context was active on the GPU (dark) and the rest, the host's (light); steady steps "
                     "solid, warm-up, eval/save and profiled steps faded (analysis.measure.profile.gpm_step_rows). "
                     + labels, folded="<b>Each step's GPU-active and host time</b> (GPM counters, "
                     f"{len(frames)} runs)")]


def utilisation_section(ctx: Context) -> str:
    util = ctx.util
    limits = ", ".join(f"{k} {v} W" for k, v in hardware.board_power().items())
    parts = [
        H.p("From each run's <code>nvml.csv</code> (one sample a second), tied to the log by the TensorBoard event "
            "file's time stamp (or the last busy sample); energy per 1,000 tokens = 1,000 x joules over the "
            "steady-state intervals / the tokens trained in them (analysis/measure/utilisation.py). <b>Verdict</b>: "
            f"three votes, each host-bound when below: median GPU utilisation {U.UTIL_HOST_BOUND_PCT:.0f} %, median "
            f"power {U.POWER_HOST_BOUND_FRACTION:.0%} of the board limit ({H.e(limits)}), MFU {U.MFU_HOST_BOUND:.0%} "
            "(a GPU-bound LoRA run on ~128-token samples reaches only 5-10 %); the majority wins, a tie goes to "
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
        H.html_table(util, FORMATS, columns=SHOWN_COLUMNS),
        H.fold("every column of the utilisation table", H.html_table(util, FORMATS, columns=MAIN_COLUMNS)),
        H.fold("<b>Energy</b> per run (joules from NVML's energy counter: the whole sampled run, the training window, "
               "the steady-state intervals; tokens trained in those intervals)",
               H.html_table(util, FORMATS, columns=ENERGY_COLUMNS)),
        H.fold("<b>Verdict per run</b>, with its evidence", "<ul>" + "".join(
            f"<li>{H.e(r['hw'])} · {H.e(r['experiment'])} · {H.e(r['run'])}: "
            f"<span class=\"{'sb-verdict-host' if r['verdict'] == 'host-bound' else 'sb-verdict-gpu'}\">"
            f"{H.e(r['verdict'])}</span> — {H.e(r['evidence'])}</li>" for _, r in util.iterrows()) + "</ul>"),
        H.csv(ctx, util, "utilisation.csv"),
        *gpm_steps(ctx),
        *timelines(ctx),
    ]
    return H.join(parts)
