"""Claims section: the claims audit's verdicts (analysis.judge.audit.verdicts), the seed articles' claims first (text,
verdict, key number) and the project's own findings apart, with its figures (analysis.judge.audit.frames), then every
claim of the seed articles with where this report has data on it and the audit's verdict.

A failure of the audit is not caught here: it fails the notebook, and with it `swiftbench report`.
"""
from __future__ import annotations

import pandas as pd

from analysis.judge.audit import claim_views as V
from analysis.judge.audit import config, frames, rulespec
from analysis.present import plots, view_render
from analysis.present.report import html as H
from analysis.present.report.context import Context
from experiments.base.paths import relative
from experiments.base.runfolder import Launcher

RECIPE_SEED = "ms_swift_hw_test.yaml"
# Claims of the recipe article for which this report shows data (the verdicts are for the Claims section).
CLAIM_EVIDENCE = {
    "speed.tokens_per_s_derivation": "Published vs measured: tokens per sample and per step",
    "convergence.total_steps": "Published vs measured: steps per epoch",
    "memory.far_below_limit_24gb_enough": "Memory: peak per run against each class's capacity",
    "memory.lora_7b_24gb": "Memory: the seed recipe's peak against 24 GB",
    "memory.lora_adapter_share": "Published vs measured: trainable share of the parameters",
    "flag.dataloader_num_workers_8": "Utilisation: the host-bound verdict of the seed recipe (not the flag)",
    "speed.h100_31pct_of_a10": "Consistency of the published figures",
    "speed.rtx4090_vs_a10_and_a100": "Consistency of the published figures",
    "speed.table_speedups": "Consistency of the published figures",
}


def verdicts(ctx: Context) -> pd.DataFrame:
    """The audit's claims table over every run of the results tree (made once, by the context)."""
    return ctx.verdicts()


def target_factor() -> float | None:
    """The throughput bar of the audit (claims.yaml: the target_speedup rule's factor)."""
    return next((c.rule.factor for c in config.claims() if isinstance(c.rule, rulespec.TargetSpeedup)), None)


def _common_labels(records) -> str:
    if not records:
        return ""
    common = [lab for lab in records[0].labels if all(lab in r.labels for r in records[1:])]
    return "; ".join(common)


def recipes_figure(ctx: Context, rows: tuple[frames.RecipeClaimRow, ...], seed: frames.SeedRecipe
                   ) -> tuple[str, list[str]]:
    """The recipes figure, and what goes under it (the baseline, the table: folded)."""
    by_path = {relative(r.path): r for r in ctx.records}
    runs = [by_path[r.path] for r in rows if r.path in by_path]
    labels = plots.labels_text([(f"{r.experiment} · {r.run}", r.labels) for r in runs])
    rec = frames.recipe_frame_of(rows, seed)
    seed_tps, factor = seed.tokens_per_s, target_factor()
    hws = sorted({r.hw for r in runs if r.hw})
    batches = sorted({r.samples_per_step for r in runs if r.samples_per_step})
    title = ("Throughput recipes" + (f" at global batch {batches[0]}" if len(batches) == 1 else "")
             + (f" ({', '.join(h.upper() for h in hws)})" if hws else ""))
    stops = sorted({stop for r in runs if (stop := r.launcher.get(Launcher.STOP_AFTER))})
    full = sorted({r.max_steps for r in runs if r.launcher.get(Launcher.STOP_AFTER) and r.max_steps})
    steps_text = (", ".join(map(str, stops[:-1])) + " or " + str(stops[-1])) if len(stops) > 1 else \
        "".join(map(str, stops))
    cut = (f"Cut runs stop after step {steps_text} of the full "
           f"{'/'.join(map(str, full)) or '?'}-step schedule, so every eval compares with the seed band at the same "
           "step (no band where the seed runs have no eval at that step). " if stops else "")
    fig = H.figure(ctx, plots.recipe_bars(rec, seed_tps, factor or 0, title, labels), "claims_recipes.png",
                   "Measured tokens/s per recipe against the seed recipe"
                   + (f" and the {factor:g}x bar" if factor else "")
                   + "; colour: eval loss inside or outside the seed band at the recipe's last eval step")
    return fig, [
        H.note(f"Seed recipe baseline: {seed_tps:,.1f} tokens/s ({H.e(seed.run)}, host "
               f"{H.e(seed.host or 'unknown')}). " + cut
               + "<i>other host</i>: made on another machine than the baseline (the host column), which matters for "
               "host-bound steps.") if seed_tps else "",
        break_even_note(rec),
        H.fold(f"throughput recipes: the table ({len(rows)} rows)", H.html_table(view_render.to_frame(
            rows, frames.RecipeClaimRow, [f.name for f in view_render.shown(frames.RecipeClaimRow)]))),
        H.csv(ctx, rec, "claims_recipes.csv"),
    ]


def break_even_note(rec: pd.DataFrame) -> str:
    """Per compiled recipe: its compile seconds, and the step count where it finishes together with its eager twin
    (the recipes frame's break_even_steps, analysis.measure.jobtime)."""
    if "break_even_steps" not in rec:
        return ""
    parts = []
    for _, r in rec[rec["break_even_vs"].notna()].iterrows():
        n = r["break_even_steps"]
        when = ("never (its steady step is not faster)" if n == float("inf")
                else "–" if H.missing(n) else f"after {n:,.0f} optimizer steps")
        parts.append(f"<b>{H.e(r['recipe'])}</b> compiles for {H.fmt(r['compile_s'], '{:.0f}')} s and pays against "
                     f"{H.e(r['break_even_vs'])} {when} (its {r['steps']:.0f} steps took {r['train_runtime_s']:.1f} s "
                     "of train_runtime)")
    return H.note("Where compiling pays (break-even: compile seconds / (eager step - compiled step)): "
                  + "; ".join(parts) + ".") if parts else ""


def claims_figures(ctx: Context) -> list[str]:
    """Throughput recipes and the capacity probes of the claims audit side by side, then where a step's time goes;
    their tables folded."""
    figs, out = [], []
    rows, seed = frames.recipe_claim_rows(ctx.results_dir, records=ctx.records)
    if rows:
        fig, under = recipes_figure(ctx, rows, seed)
        figs.append(fig)
        out += under
    tb = frames.time_breakdown_rows(ctx.results_dir, records=ctx.records)
    if tb:
        out += [H.fold("<b>Where a step's time goes</b> (torch.profiler over the profiled steps; GPU busy = union of "
                       "kernel and copy intervals; the profiler itself slows the host side, so wall time here is "
                       "above the unprofiled median)", H.html_table(view_render.to_frame(
                           tb, frames.TimeBreakdownRow, [f.name for f in view_render.shown(frames.TimeBreakdownRow)]))),
                H.csv(ctx, view_render.to_frame(tb, frames.TimeBreakdownRow), "claims_time_breakdown.csv")]
    host = frames.host_time_frame(ctx.results_dir, records=ctx.records)
    if not host.empty:
        by_path = {relative(r.path): r for r in ctx.records}
        runs = [by_path[p] for p in dict.fromkeys(host["path"]) if p in by_path]
        labels = plots.labels_text([(f"{r.experiment} · {r.run}", r.labels) for r in runs])
        out += [H.figure(ctx, plots.host_time_bars(host, "Where the host time of a profiled step goes", labels),
                         "claims_host_time.png",
                         "Main thread's milliseconds per profiled step by the library frame it was in (stack samples "
                         "of --profile-host-stacks), against the step's GPU-busy time; runs of one host in one device "
                         "call compare", folded="<b>Where the host time of a profiled step goes</b> (the figure)"),
                H.csv(ctx, host, "claims_host_time.csv")]
    cap = frames.capacity_frame(ctx.results_dir, records=ctx.records)
    if not cap.empty:
        by_path = {relative(r.path): r for r in ctx.records}
        runs = [by_path[p] for p in cap["path"] if p in by_path]
        hws = sorted({r.hw for r in runs if r.hw})
        title = ("Largest per-device batch under an allocator cap"
                 + (f" ({', '.join(h.upper() for h in hws)}, seed recipe shape)" if hws else ""))
        labels = "; ".join(x for x in (_common_labels(runs), "allocator capped per process (the cap of each row)") if x)
        figs.append(H.figure(ctx, plots.capacity_points(cap, title, labels), "claims_capacity.png",
                             "Capacity probes per cap: trained or out of memory"))
        out.append(H.csv(ctx, cap, "claims_capacity.csv"))
    return figs + out  # one page-wide figure each: side by side they showed at half their size


def verdict_tables(table: pd.DataFrame) -> list[str]:
    """Per origin (config.ORIGINS: the articles' claims first), its heading and one row per claim: the articles' with
    their text and key number, the findings with the first words of their detail (analysis.judge.audit.claim_views)."""
    out = []
    for origin, heading in config.ORIGINS.items():
        rows: tuple = V.article_rows(table) if origin == "article" else V.finding_rows(table, origin)
        if not rows:
            continue
        counts = ", ".join(f"{n} {H.e(v)}" for v, n in pd.Series([r.verdict for r in rows]).value_counts().items())
        title = f"<b>{H.e(heading)}</b>: {len(rows)} ({counts})"
        shown = view_render.table_html(rows, type(rows[0]))
        if origin == "article":  # the articles' claims shown; the project's own findings one click away
            out += [H.p(title), shown]
        else:
            out.append(H.fold(title, shown))
    return out


def claims_section(ctx: Context) -> str:
    table = verdicts(ctx)
    shown = view_render.to_frame(V.verdict_rows(table), V.VerdictRow)
    evidence = {(RECIPE_SEED, cid): where for cid, where in CLAIM_EVIDENCE.items()}
    seed_rows = V.seed_claim_rows(ctx.seeds, V.audited(table), evidence)
    df = view_render.to_frame(seed_rows, V.SeedClaimRow)
    return H.join([
        H.p(f"<b>{len(table)} claims</b>. Verdicts of analysis/judge over the committed results (the claims in "
            "analysis/judge/audit/claims.yaml, their experiments in experiments/recipes/claims/); <i>not run yet</i>: "
            "defined, GPU runs not committed; <i>cannot be tested here</i> says why. The seed articles' claims "
            "first, one line each with its key number; the project's own findings folded apart. The whole detail "
            "and the run folders are in the folded table below them."),
        *verdict_tables(table),
        H.fold("every verdict with its claim, whole detail and run folders", H.html_table(shown)),
        H.csv(ctx, table, "claims_verdicts.csv"),
        *claims_figures(ctx),
        H.fold(f"the seed articles' {len(seed_rows)} claims ({sum(bool(r.testable_here) for r in seed_rows)} marked "
               "testable on the hardware here), where this report has data on each and the audit's verdict",
               view_render.table_html(seed_rows, V.SeedClaimRow)),
        H.csv(ctx, df, "claims_untested.csv"),
    ])
