"""Speed section: the speed-up table and every successful run's ms per sample and tokens/s with their 95 % ranges
(numbers from analysis.measure: steps, throughput, compare)."""
from __future__ import annotations

import pandas as pd

from analysis.judge.answer.run_tables import ScalingRow, SpeedRow, baseline_name
from analysis.measure import compare, steps, throughput
from analysis.parse.record import RunRecord
from analysis.present import plots, view_render
from analysis.present.report import html as H
from analysis.present.report.context import Context
from experiments.base import hardware

HIDDEN = ("status", "samples_per_s")


def baselines(ctx: Context) -> dict[tuple[str | None, str], tuple[str, float, RunRecord | None]]:
    """(experiment, source) -> (baseline, its ms per sample, its run record; None for published rows), as the speed
    table chose them."""
    by_id = {(r.hw, r.experiment, r.run): r for r in ctx.picked}
    out = {}
    for _, row in ctx.speed.iterrows():
        is_base = row["baseline"] is not None and baseline_name(row["hw"], row.get("host")) == row["baseline"]
        if is_base and not H.missing(row["ms_per_sample"]):
            rec = by_id.get((row["hw"], row["experiment"], row["run"])) if row["source"] == "measured" else None
            out[(row["experiment"], row["source"])] = (row["baseline"], float(row["ms_per_sample"]), rec)
    return out


def speed_frame(ctx: Context) -> pd.DataFrame:
    """Every successful matrix run (and the published rows): ms per step and tokens/s with their ranges, and the
    speed-up against the table's baseline of its experiment (the figure's data)."""
    base = baselines(ctx)
    rows = []
    for r in sorted(ctx.ok_records(), key=lambda r: (r.experiment, ctx.hw_rank(r.hw), r.run)):
        st, tp = steps.step_time(r), throughput.throughput(r)
        b = base.get((r.experiment, "measured"))
        per_sample = steps.sample_time_ms(r)
        sp = compare.speedup(b[2], r) if b and b[2] else None
        rows.append({
            "name": f"{r.name} · {'host ' + r.host_id[:6] if r.host_id else 'host ?'}", "hw": r.hw,
            "experiment": r.experiment, "run": r.run, "source": "measured",
            "labels": "; ".join(r.labels), "in_tables": ctx.in_tables(r),
            "ms": per_sample.median, "ms_lo": per_sample.ci95_low, "ms_hi": per_sample.ci95_high,
            "n_intervals": st.n_intervals, "tok": tp.tokens_per_s, "tok_lo": tp.low, "tok_hi": tp.high,
            "baseline": b[0] if b else None, "speedup": sp.factor if sp else None,
            "speedup_hosts": sp.hosts if sp else None,
        })
    for _, p in ctx.speed[ctx.speed["source"] == "published"].sort_values(
            "hw", key=lambda s: s.map(ctx.hw_rank)).iterrows():
        rows.append({"name": f"{p['hw']} · published (per sample)", "hw": p["hw"], "experiment": p["experiment"],
                     "run": p["run"], "source": "published", "labels": p["labels"], "in_tables": True,
                     "ms": p["ms_per_sample"], "ms_lo": None, "ms_hi": None, "n_intervals": None,
                     "tok": p["tokens_per_s"], "tok_lo": None, "tok_hi": None, "baseline": p["baseline"],
                     "speedup": p["speedup"]})
    return pd.DataFrame(rows)


def baseline_note(ctx: Context) -> str:
    notes = []
    for (exp, src), (hw, ms, _) in sorted(baselines(ctx).items()):
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
               + H.html_table(ctx.speed, view_render.formats(SpeedRow),
                              columns=[c for c in ctx.speed.columns if c not in HIDDEN])),
        H.csv(ctx, ctx.speed, "speedup.csv"),
        scaling_block(ctx),
    ])


def scaling_block(ctx: Context) -> str:
    """Several GPUs: every N-GPU run against the 1-GPU run of the same recipe on the same host
    (analysis.present.tables.scaling_table, numbers from analysis.measure.compare.scaling)."""
    from analysis.present.tables import scaling_table

    sc = scaling_table(ctx.picked)
    if sc.empty:
        return ""
    named = sc.assign(name=[f"{r.experiment} · {r.parallel} · {r.gpus_from}->{r.gpus_to} GPUs · host "
                            f"{str(r.host)[:6]}" for r in sc.itertuples()])  # the figure's bars
    recs = [r for r in ctx.picked if r.run in set(sc["run_to"]) | set(sc["run_from"])]
    labels = ctx.labels_of(recs)
    fig = plots.scaling_bars(named, "Several GPUs: scaling efficiency", labels)
    return H.join([
        H.figure(ctx, fig, "scaling.png", "Scaling efficiency of every N-GPU run over the 1-GPU run of the same "
                 "recipe on the same host, made one right after the other (global batch kept: grad-accum or the "
                 "per-device batch divided by N); 95 % range from bootstrapping both runs' steady intervals. "
                 + labels),
        H.fold(f"the scaling table ({len(sc)} rows)",
               H.html_table(sc, view_render.formats(ScalingRow))),
        H.csv(ctx, sc, "scaling.csv"),
    ])
