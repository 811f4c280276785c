"""Speed section: the speed-up table and every successful run's ms per sample and tokens/s with their 95 % ranges
(numbers from analysis.measure: steps, throughput, compare)."""
from __future__ import annotations

import pandas as pd

from analysis.judge.answer import run_tables as RT
from analysis.present import plots, view_render
from analysis.present.report import html as H
from analysis.present.report.context import Context
from experiments.base import hardware

HIDDEN = ("status", "samples_per_s")


def speed_frame(ctx: Context) -> pd.DataFrame:
    """Every successful matrix run (and the published rows): ms per sample and tokens/s with their ranges, and the
    speed-up against the table's baseline of its experiment (the figure's data: run_tables.speed_points)."""
    return view_render.to_frame(RT.speed_points(ctx.ok_records(), ctx.speed_rows, ctx.in_tables, ctx.hw_rank,
                                                ctx.picked), RT.SpeedPoint)


def baseline_note(ctx: Context) -> str:
    notes = []
    for (exp, src), (hw, ms, _) in sorted(RT.speed_baselines(ctx.speed_rows, ctx.picked).items()):
        why = "" if hw == ctx.baseline else f" ({ctx.baseline} has no {src} row)"
        notes.append(f"{exp}/{src}: {hw} {ms:,.1f} ms per sample{why}")
    return "Speedup (xN) against: " + "; ".join(notes) + "." if notes else ""


def speed_section(ctx: Context) -> str:
    sf = speed_frame(ctx)
    note = baseline_note(ctx)
    labels = ctx.labels_of(ctx.ok_records()) + (" Grey bars: published (article), not measured here; the article's "
                                                "'step' is one sample (see Published vs measured), so every bar is "
                                                "ms per sample.")
    fig = plots.speed_bars(sf, "Speed: ms per sample and tokens/s", labels, note)
    return H.join([
        H.p("Every successful run's ms per sample and tokens/s with 95 % intervals, and the article's rows. "
            f"Speed-up baseline: {H.e(ctx.baseline)} ({H.e(hardware.describe(ctx.baseline))}); where it has no run "
            "(or no tokens/s to compare with), the slowest measured run of each experiment that has one. "
            + H.e(note)),
        H.figure(ctx, fig, "speed.png", "ms per sample and tokens/s with 95 % intervals, every "
                 "successful run (with the first digits of its host id; ?: made before host fingerprints) and the "
                 "published rows; xN = speed-up against the baseline, a cross-host ratio unless both runs show the "
                 "same host id (the table's speedup_hosts column says which). " + labels),
        H.fold(f"the speed table: one row per hardware, experiment and host ({len(ctx.speed)} rows, every column)",
               H.p("The least-cut successful run per hardware, experiment and host (every run is in Run-to-run "
                   "spread), and the article's rows. <i>speedup</i> = how much faster than the baseline of the same "
                   "experiment and source: for measured rows the baseline's time / this run's for the same work "
                   "(paired step times where both trained the same batches, else the tokens/s ratio; "
                   "<i>speedup_hosts</i>: whether the two runs shared a host), for published rows the baseline's ms "
                   "per sample / this row's. Units: the article's 'ms per step' is one sample's forward-backward "
                   "pass, so it stands in <i>ms_per_sample</i> beside ours; <i>ms_per_step</i> (an optimizer step of "
                   "16 samples) is ours alone. <i>measured_over_published</i> = our ms per sample / the published ms "
                   "per sample on the same hardware. <i>gpu_busy_ms_per_step</i>, <i>host_ms_per_step</i>, "
                   "<i>bound</i>: from the two profiled steps (GPU activity only); <i>gpm_busy_ms_per_step</i>, "
                   "<i>gpm_host_ms_per_step</i>, <i>gpm_busy_frac</i>: the same split over the run's steady steps, "
                   "unprofiled, from NVML's GPM counters (H100/H200 and newer; <i>gpm_steps</i> steps; "
                   "<i>gpm_over_profiler</i>: GPM's busy time over the profiled steps / the profiler's, above 1 "
                   "where tiny kernels leave the engine active between them). <i>tokens_per_s_low/high</i>: 95 % "
                   "bootstrap range; <i>tokens_source</i>: counted tokens (tokens.jsonl) or mean length x samples "
                   "per step.")
               + H.html_table(ctx.speed, view_render.formats(RT.SpeedRow),
                              columns=[c for c in ctx.speed.columns if c not in HIDDEN])),
        H.csv(ctx, ctx.speed, "speedup.csv"),
        scaling_block(ctx),
    ])


def scaling_block(ctx: Context) -> str:
    """Several GPUs: every N-GPU run against the 1-GPU run of the same recipe on the same host
    (analysis.judge.answer.run_tables.scaling_rows, numbers from analysis.measure.compare.scaling)."""
    rows = RT.scaling_rows(ctx.picked)
    if not rows:
        return ""
    sc = view_render.to_frame(rows, RT.ScalingRow)
    ran = {r.run_to for r in rows} | {r.run_from for r in rows}
    recs = [r for r in ctx.picked if r.run in ran]
    labels = ctx.labels_of(recs)
    fig = plots.scaling_bars(view_render.to_frame(RT.scaling_bars(rows), RT.ScalingBar),
                             "Several GPUs: scaling efficiency", labels)
    return H.join([
        H.figure(ctx, fig, "scaling.png", "Scaling efficiency of every N-GPU run over the 1-GPU run of the same "
                 "recipe on the same host, made one right after the other (global batch kept: grad-accum or the "
                 "per-device batch divided by N); 95 % range from bootstrapping both runs' steady intervals. "
                 + labels),
        H.fold(f"the scaling table ({len(sc)} rows)",
               H.html_table(sc, view_render.formats(RT.ScalingRow))),
        H.csv(ctx, sc, "scaling.csv"),
    ])
