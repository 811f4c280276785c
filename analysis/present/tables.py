"""Speed-up and convergence tables of a results tree, the seed article's published rows beside the measured ones, and
the recommended recipe for the job: one sentence, the matrix recipes by time to finish the epoch, and the recommended
recipe per GPU class with its cost at a price table.

`swiftbench tables RESULTS_DIR [--baseline a10] [--format md|csv|json] [--compact] [--prices FILE]`. Rows come from
the run records (analysis.parse.results: one picked run per hardware and matrix experiment) and the reviewed published
figures (seeds/); every number is what analysis.measure (step time, tokens/s, MFU, losses, speed-ups) or
analysis.judge.answer.published (measured vs published) returns: this module chooses rows and formats them, it
computes no statistic. The recommendation is analysis.judge.answer.recommend's, each GPU class's
analysis.judge.answer.classes'.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, fields
from pathlib import Path

import pandas as pd

from analysis.core.seeds import DEFAULT_SEEDS_DIR, published_figures
from analysis.estimate import prices as price_tables
from analysis.estimate import quick as quick_estimate
from analysis.judge.answer import classes, view, your_runs
from analysis.judge.answer import published as P
from analysis.judge.answer.baseline import Candidate, pick_baseline
from analysis.judge.answer.view import ClassRow, RecipeRow
from analysis.measure import compare, flops, loss, profile, repeats, steps, throughput
from analysis.parse.record import RunRecord
from analysis.parse.results import Scan, collect, is_matrix, latest_per_group, scan
from analysis.present import recommend_view, view_render
from analysis.present.table_rows import ConvergenceRow, ScalingRow, SpeedRow, columns
from experiments.base import hardware
from experiments.base.errors import SKIPPED_EXIT

SPEED_COLUMNS = columns(SpeedRow)
CONVERGENCE_COLUMNS = columns(ConvergenceRow)
COMPACT = {  # --compact: the columns that fit a README page
    "speedup": ["hw", "experiment", "source", "gpus", "host", "ms_per_sample", "ms_per_step", "tokens_per_s",
                "gpu_busy_ms_per_step", "host_ms_per_step", "bound", "peak_gib", "mfu", "speedup", "speedup_hosts",
                "labels"],
    "convergence": ["hw", "experiment", "source", "steps", "final_train_loss", "final_eval_loss", "eval_token_acc",
                    "steps_to_50pct_drop", "wall_time_to_last_eval_s", "labels"],
}
SEED_EXPERIMENT = P.SEED_EXPERIMENT  # the experiment that reproduces the published recipe; published rows sit beside it
PUBLISHED_RUN = "seeds/ms_swift_hw_test.yaml"


# ------------------------------------------------------------------------------------------ measured


def measured_records(results_dir: str | Path | list | Scan) -> list[RunRecord]:
    """The picked run per (hw, matrix experiment); claims runs are left to analysis.judge. RESULTS_DIR: one root,
    several (merged: analysis.parse.results.scan), or a scan already made."""
    records = results_dir.records if isinstance(results_dir, Scan) else collect(results_dir)
    return latest_per_group([r for r in records if is_matrix(r)])


def labels_text(rec: RunRecord) -> str:
    labels = list(rec.labels)
    if rec.quick and rec.quick.get("at_step"):  # experiments/launch/quick_stop.py's stop, from launch.json
        q = rec.quick
        labels.append(f"quick run (stopped after step {q['at_step']} of {q.get('max_steps_of_schedule')})")
    return "; ".join(labels) + (f"; failed: {rec.failure}" if rec.failure else "")


def estimate_cells(rec: RunRecord) -> SpeedRow:
    """The full run as a cut run with a schedule predicts it (analysis.estimate.quick): training time and steady
    tokens/s with their 95 % ranges, the steps behind them and what the estimate is. Empty for other runs."""
    if not rec.ok or not rec.schedule or (rec.global_steps or 0) >= len(rec.schedule):
        return {}
    est = quick_estimate.estimate(rec)
    return {"est_full_train_s": est.train_s, "est_full_train_s_low": est.train_s_low,
            "est_full_train_s_high": est.train_s_high, "est_full_tokens_per_s": est.tokens_per_s,
            "est_full_tokens_per_s_low": est.tokens_per_s_low, "est_full_tokens_per_s_high": est.tokens_per_s_high,
            "est_steps": est.fit_steps, "est_basis": est.label}


def _identity(rec: RunRecord) -> SpeedRow:
    return {"hw": rec.hw, "experiment": rec.experiment, "source": "measured", "gpus": rec.gpus,
            "parallel": rec.parallel, "status": rec.status, "run": rec.run, "host": rec.host_id,
            "labels": labels_text(rec)}


def range_text(low: float, high: float, spec: str = ".0f") -> str:
    """A range as text: '874-880', and with a bound below zero '-1126 .. 5143' (a hyphen between a negative and a
    positive number reads as one number)."""
    sep = "-" if low >= 0 and high >= 0 else " .. "
    return f"{low:{spec}}{sep}{high:{spec}}"


def _ms(seconds: float | None) -> float | None:
    return seconds * 1000 if seconds else None


def speed_row(rec: RunRecord) -> SpeedRow:
    """One measured row of the speed table (without the speed-up, which needs the baseline)."""
    st = steps.step_time(rec)
    tp = throughput.throughput(rec)
    ci = None
    if st.ci95_low is not None and st.ci95_high is not None:
        ci = range_text(st.ci95_low * 1000, st.ci95_high * 1000)
    share = profile.step_share(rec)
    gpm = profile.steady_share(rec)
    probe = rec.host_probe
    row: SpeedRow = {
        **_identity(rec), "ms_per_sample": steps.sample_ms(rec), "ms_per_step": _ms(st.median),
        "ms_per_step_ci95": ci, "ms_per_micro_step": steps.micro_step_ms(rec), "tokens_per_s": tp.tokens_per_s,
        "tokens_per_s_per_gpu": tp.tokens_per_s / rec.gpus if tp.tokens_per_s else None, "tokens_per_s_low": tp.low,
        "tokens_per_s_high": tp.high,
        "tokens_source": tp.source if tp.tokens_per_s is not None else None,
        "samples_per_s": throughput.samples_per_s(rec), "gpu_busy_ms_per_step": share.gpu_busy_ms,
        "host_ms_per_step": share.host_ms, "comm_ms_per_step": share.comm_ms,
        "gpu_busy_frac": share.gpu_busy_frac, "bound": share.bound,
        "profiled_over_steady": share.profiled_over_steady, "gpm_busy_ms_per_step": gpm.gpm_busy_ms,
        "gpm_host_ms_per_step": gpm.gpm_host_ms, "gpm_busy_frac": gpm.gpm_busy_frac,
        "gpm_steps": gpm.gpm_steps or None, "gpm_over_profiler": gpm.gpm_over_profiler,
        "peak_gib": rec.peak_mem_gib, "mfu": flops.mfu(rec, tp.tokens_per_s).mfu,
        "host_python_ns": probe.python_ns, "host_dispatch_us": probe.dispatch_us, "host_lora_ms": probe.lora_ms,
        "steady_steps": len(steps.steady_steps(rec)) or None,
        **estimate_cells(rec),
    }
    return row


# ----------------------------------------------------------------------------------------- published


def published_speed_rows(pub: pd.DataFrame) -> list[SpeedRow]:
    rows: list[SpeedRow] = []
    for hw in P.hardware_with(pub, "ms_per_step"):
        rows.append({
            "hw": hw, "experiment": SEED_EXPERIMENT, "source": "published", "status": "published",
            "run": PUBLISHED_RUN, "labels": "published (ms-swift hardware article; its 'step' is one sample)",
            "ms_per_sample": P.value(pub, hw, "ms_per_step"), "tokens_per_s": P.value(pub, hw, "tokens_per_s"),
            "peak_gib": P.value(pub, hw, "peak_mem_gib"),
        })
    return rows


# ------------------------------------------------------------------------------------------- tables


def baseline_name(row: SpeedRow | pd.Series) -> str:
    """How the `baseline` column names a row: its hardware, and its host id where it has one."""
    host = row.get("host")
    return f"{row['hw']}" + (f" ({host})" if isinstance(host, str) and host else "")


def speedup_table(results_dir: str | Path | Scan, baseline: str = hardware.DEFAULT_BASELINE,
                  seeds_dir: str | Path | None = None,
                  records: list[RunRecord] | None = None) -> pd.DataFrame:
    """Measured rows (one per hw x experiment x host) and published rows, speed-up versus the baseline.

    Units: the article's "ms per step" is one sample's forward-backward pass, so it sits in `ms_per_sample` beside our
    ms per sample (optimizer-step time / samples per step); `ms_per_step` (an optimizer step) is ours alone.
    speedup, measured rows: analysis.measure.compare.speedup(baseline run, this run).factor (paired step times where
    both trained the same batches, else the tokens/s ratio), `speedup_hosts` saying whether the two runs shared a host;
    published rows: time_speedup(baseline ms per sample, this row's). The baseline is BASELINE's row of the same
    experiment and source, else the slowest (analysis.judge.answer.baseline.pick_baseline). measured_over_published:
    analysis.judge.answer.published.sample_vs_published (our ms per sample / the published ms per sample, same
    hardware).
    """
    records = records if records is not None else measured_records(results_dir)
    by_row: list[tuple[SpeedRow, RunRecord | None]] = [(speed_row(r), r) for r in records]
    pub = published_figures(seeds_dir or DEFAULT_SEEDS_DIR)
    by_row += [(row, None) for row in published_speed_rows(pub)]
    groups: dict[tuple, list[tuple[SpeedRow, RunRecord | None]]] = {}
    for row, rec in by_row:
        groups.setdefault((row["experiment"], row["source"]), []).append((row, rec))
    for (_, source), members in groups.items():
        i = pick_baseline([Candidate(str(row.get("hw")), row["source"], row.get("ms_per_sample"),
                                     row.get("tokens_per_s"), row.get("steady_steps")) for row, _ in members], baseline)
        if i is None:
            continue
        base, base_rec = members[i]
        for row, rec in members:
            row["baseline"] = baseline_name(base)
            if source == "measured":
                assert base_rec is not None and rec is not None  # measured rows carry their records
                sp = compare.speedup(base_rec, rec)
                row["speedup"], row["speedup_basis"], row["speedup_hosts"] = sp.factor, sp.how, sp.hosts
            else:
                sp = compare.time_speedup(base.get("ms_per_sample"), row.get("ms_per_sample"))
                row["speedup"], row["speedup_basis"] = sp.factor, "ms per sample (published)"
    for row, rec in by_row:
        if rec is not None and rec.experiment == SEED_EXPERIMENT:
            vs = P.sample_vs_published(rec, pub)
            row["published_ms_per_sample"], row["measured_over_published"] = vs.published_ms_per_sample, vs.ratio
    df = pd.DataFrame([row for row, _ in by_row], columns=SPEED_COLUMNS)
    return df.sort_values(["experiment", "source", "hw"], ignore_index=True)


SCALING_COLUMNS = columns(ScalingRow)


def scaling_table(records: list[RunRecord]) -> pd.DataFrame:
    """Scaling efficiency of every N-GPU run over the 1-GPU run of the same hardware, experiment and host
    (analysis.measure.compare.scaling_pairs: a ratio across hosts measures the hosts, so none is made)."""
    rows: list[ScalingRow] = []
    for one, many, sc in compare.scaling_pairs(records):
        share = profile.step_share(many)
        rows.append({"hw": many.hw, "experiment": many.experiment, "parallel": many.parallel, "host": many.host_id,
                     "gpus_from": sc.gpus_from, "gpus_to": sc.gpus_to, "speedup": sc.speedup,
                     "efficiency": sc.efficiency, "efficiency_low": sc.efficiency_low,
                     "efficiency_high": sc.efficiency_high, "basis": sc.basis, "hosts": sc.hosts,
                     "tokens_per_s_from": throughput.throughput(one).tokens_per_s,
                     "tokens_per_s_to": throughput.throughput(many).tokens_per_s,
                     "comm_ms_per_step": share.comm_ms, "gpu_busy_frac": share.gpu_busy_frac,
                     "run_from": one.run, "run_to": many.run, "labels": labels_text(many)})
    return pd.DataFrame(rows, columns=SCALING_COLUMNS)


def convergence_table(results_dir: str | Path | Scan, seeds_dir: str | Path | None = None,
                      records: list[RunRecord] | None = None) -> pd.DataFrame:
    """Per picked run: steps, final train / eval loss, eval token accuracy, the training loss's drop
    (analysis.measure.loss), wall time to the last eval; and the article's final losses and accuracies."""
    out: list[ConvergenceRow] = []
    for r in records if records is not None else measured_records(results_dir):
        drop = loss.loss_drop_stats(r)
        out.append({
            "hw": r.hw, "experiment": r.experiment, "source": "measured", "status": r.status, "run": r.run,
            "labels": labels_text(r), "steps": r.global_steps, "final_train_loss": loss.final_train_loss(r),
            "final_eval_loss": loss.final_eval_loss(r), "eval_token_acc": loss.final_eval_token_acc(r),
            "loss_drop_per_100_steps": drop.loss_drop_per_100_steps, "steps_to_50pct_drop": drop.steps_to_50pct_drop,
            "steps_to_90pct_drop": drop.steps_to_90pct_drop, "wall_time_to_last_eval_s": loss.wall_time_to_last_eval(r),
        })
    pub = published_figures(seeds_dir or DEFAULT_SEEDS_DIR)
    total_steps = P.value(pub, None, "total_steps")
    for hw in P.hardware_with(pub, "final_eval_loss", legible=False):
        acc = P.value(pub, hw, "final_eval_acc_pct")
        out.append({
            "hw": hw, "experiment": SEED_EXPERIMENT, "source": "published", "status": "published",
            "run": PUBLISHED_RUN,
            "labels": "published; loss text " + repr(P.text(pub, hw, "final_eval_loss") or "").replace("\\n", " "),
            "steps": total_steps, "final_eval_loss": P.value(pub, hw, "final_eval_loss"),
            "eval_token_acc": acc / 100 if acc else None,
        })
    return pd.DataFrame(out, columns=CONVERGENCE_COLUMNS).sort_values(
        ["experiment", "source", "hw"], ignore_index=True)


# ---------------------------------------------------------------------------------------------- CLI


def render(df: pd.DataFrame, fmt: str) -> str:
    if fmt == "csv":
        return df.to_csv(index=False)
    if fmt == "json":
        return json.dumps(json.loads(df.to_json(orient="records", double_precision=15)), indent=2)
    shown = df.astype(object).where(df.notna(), None)  # tabulate only treats None as missing, not NaN
    return shown.to_markdown(index=False, floatfmt=".4g", missingval="–")


def register(sub) -> None:
    p = sub.add_parser("tables", help="speedup and convergence tables of a results tree")
    p.add_argument("results_dir", nargs="+", help="results/ (results/<hw>/<experiment>/<run>/); several roots (other "
                   "machines' trees) are merged, a run found twice counted once")
    p.add_argument("--baseline", default=hardware.DEFAULT_BASELINE,
                   help=f"hardware the speedup is relative to (default {hardware.DEFAULT_BASELINE})")
    p.add_argument("--format", choices=["md", "csv", "json"], default="md",
                   help="output format: md (Markdown, the default), csv or json")
    p.add_argument("--seeds", default=None, help="folder of published figures (default: the suite's seeds/)")
    p.add_argument("--compact", action="store_true", help="only the main columns")
    p.add_argument("--answer", action="store_true",
                   help="only the answer (README's): the recommendation sentence, the recipes measured beside a "
                        "full seed epoch of their own host, and the recommended recipe per GPU class; Markdown, "
                        "without host ids (the full tables name the hosts and runs)")
    p.add_argument("--prices", default=str(price_tables.DEFAULT_PRICES), metavar="FILE",
                   help="price table for the recommended recipe's cost per GPU class (YAML 'h100: 2.5' per GPU-hour, "
                        "optionally 'currency: EUR'; default: data/prices.yaml, dated list prices)")
    p.set_defaults(func=run)


YOUR_COLUMNS = ["run", "hw", "experiment", "host", "labels", "steps", "ms_per_step", "tokens_per_s", "peak_gib", "mfu",
                "final_eval_loss", "nearest", "differs"]


def your_runs_table(records: list[RunRecord]) -> pd.DataFrame:
    """The user's own runs (analysis.judge.answer.your_runs: experiments that are neither the matrix's nor the claims
    audit's): their metrics as the speed table has them, the nearest matrix recipe and the flags that differ."""
    by_path = {str(r.path): r for r in records}
    rows = []
    for y in your_runs.your_runs(records):
        rec = by_path[y.path]
        sp = speed_row(rec)
        rows.append({"run": y.run, "hw": y.hw, "experiment": y.experiment, "host": rec.host_id,
                     "labels": labels_text(rec), "steps": rec.global_steps, "ms_per_step": sp["ms_per_step"],
                     "tokens_per_s": sp["tokens_per_s"], "peak_gib": sp["peak_gib"], "mfu": sp["mfu"],
                     "final_eval_loss": loss.final_eval_loss(rec), "nearest": y.nearest,
                     "differs": "; ".join(y.differs) or None})
    return pd.DataFrame(rows, columns=YOUR_COLUMNS)


@dataclass(frozen=True)
class Tables:
    """What `swiftbench tables` prints, each a frame: speed-up and convergence (COMPACT: their main columns only),
    scaling, the recommendation (one row: the recipe for the job, its command and sentence), every matrix recipe's
    full epochs per host, which recipe finishes sooner (and which orders are undetermined), each GPU class's recipe,
    epoch and cost, and the user's own runs. `--format json` prints them in this order."""

    speedup: pd.DataFrame
    convergence: pd.DataFrame
    scaling: pd.DataFrame
    recommended: pd.DataFrame
    recipes: tuple[RecipeRow, ...]   # the answer's view (analysis.judge.answer.view): every recipe per host
    orders: pd.DataFrame
    classes: tuple[ClassRow, ...]    # the answer's view: each GPU class's recipe
    your_runs: pd.DataFrame
    repeats: pd.DataFrame   # each recipe's runs per host and harness: n, median and range (epoch, steady, start-up)
    harness: pd.DataFrame   # paired rounds through the launcher and as the plain command
    harness_line: str | None = None

    def records(self) -> dict[str, list[dict]]:
        """Every table as JSON's records, in field order: the frames' rows, the view's rows (every field)."""
        out: dict[str, list[dict]] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, pd.DataFrame):
                # every digit (as the view's rows have them: one figure in two tables reads equal)
                out[f.name] = v.astype(object).where(v.notna(), None).to_dict("records")
            elif isinstance(v, tuple):
                out[f.name] = view_render.to_records(v)
        return out


def tables(results_dir: str | Path | Scan, baseline: str = hardware.DEFAULT_BASELINE,
           seeds_dir: str | Path | None = None,
           compact: bool = False, prices: str | Path | None = price_tables.DEFAULT_PRICES) -> Tables:
    """The tables of RESULTS_DIR (Tables)."""
    records = measured_records(results_dir)
    speed = speedup_table(results_dir, baseline, seeds_dir, records=records)
    conv = convergence_table(results_dir, seeds_dir, records=records)
    scale = scaling_table(records)
    everything = results_dir.records if isinstance(results_dir, Scan) else collect(results_dir)
    ans = classes.answer(everything, prices)
    pairs = repeats.harness_pairs(everything)
    if compact:
        speed, conv = speed[COMPACT["speedup"]], conv[COMPACT["convergence"]]
    return Tables(speedup=speed, convergence=conv, scaling=scale,
                  recommended=recommend_view.recommended_frame(ans.recommendation, list(ans.classes)),
                  recipes=view.recipe_rows(ans.recommendation),
                  orders=recommend_view.orders_frame(ans.recommendation),
                  classes=view.class_rows(ans.classes),
                  your_runs=your_runs_table(everything),
                  repeats=recommend_view.repeats_frame(repeats.recipe_runs(everything)),
                  harness=recommend_view.harness_frame(pairs), harness_line=recommend_view.harness_line(pairs))


def answer_md(t: Tables) -> str:
    """The answer as README shows it: the sentence, the command to paste, the recipes' full epochs per host (hosts
    lettered: a ratio is only of one host's runs), the undetermined orders, the recipe per GPU class. The two tables
    are the answer's view (analysis.judge.answer.view) rendered by analysis.present.view_render; host ids stay in the
    full tables."""
    top = t.recommended.iloc[0]
    parts = [str(top["sentence"])]
    if isinstance(top.get("command"), str):
        parts += ["", f"The recommended recipe, for ms-swift {top['swift_version']} (`pip install .` of this "
                      "repository gives `swiftbench plugin`, the path of the one plugin file it names):", "", "```bash",
                  str(top["command"]), "```"]
    if t.recipes:
        parts += ["", view_render.to_markdown(t.recipes, RecipeRow)]
    if t.harness_line:
        parts += ["", t.harness_line]
    orders = t.orders
    open_rows = orders[orders["undetermined"].astype(bool)] if not orders.empty else orders
    if not open_rows.empty:
        parts += ["", "Orders the runs do not settle: " + "; ".join(
            f"{a} vs {b} ({why}; settle with {settle})"
            for a, b, why, settle in zip(open_rows["faster"], open_rows["slower"], open_rows["basis"],
                                         open_rows["settle"])) + "."]
    if t.classes:
        parts += ["", view_render.to_markdown(t.classes, ClassRow)]
        parts += class_commands_md(t.classes, str(top.get("experiment")))
    return "\n".join(parts)


def class_commands_md(classes: tuple[ClassRow, ...], recommended: str) -> list[str]:
    """Each class's command where its recipe is not the recommended one (printed above): one line to paste, with
    how its fit was shown and how its time was obtained."""
    out: list[str] = []
    same = [P.short(c.hw) for c in classes if c.recipe == recommended]
    groups: dict[str, list[ClassRow]] = {}
    for c in classes:
        if c.command is not None and c.recipe != recommended and c.recipe is not None:
            groups.setdefault(c.recipe, []).append(c)
    for recipe, group in groups.items():
        names = " and ".join(P.short(c.hw) for c in group)
        how = "measured" if all(c.measured is True for c in group) else "modelled"
        out += ["", f"For the {names}: recipe {recipe} ({group[0].fit_basis} on the H200; its time on "
                    f"{'it' if len(group) == 1 else 'them'} {how}), one line to paste"
                    + (f" (the {', '.join(same)} take the command above)" if same else "") + ":", "", "```bash",
                " ".join(str(group[0].command).split(" \\\n  ")), "```"]
    return out


def run(args) -> int:
    # an unknown baseline is bad input (exit 2, the known names), as in report; H200 is h200 (one rule)
    args.baseline = hardware.user_key(args.baseline)
    price_tables.check_prices(args.prices)  # so is a price table that cannot be read, even where none is needed
    found = scan(args.results_dir)
    for line in found.lines():  # folders left out and copies counted once, one line each; exit 3 if any was left out
        print(f"swiftbench: {line}", file=sys.stderr)
    done = SKIPPED_EXIT if found.skipped else 0
    t = tables(found, args.baseline, args.seeds, args.compact, args.prices)
    speed, conv = t.speedup, t.convergence
    if getattr(args, "answer", False):
        print(answer_md(t))
        return done
    if args.format == "json":
        print(json.dumps(t.records(), indent=2, default=str))
        return done
    if args.format == "md":
        print(answer_md(t) + "\n")
        print("## Recipes' full epochs per host (the runs the answer counts: median, range and count)\n")
        print(render(view_render.to_frame(t.recipes, RecipeRow).drop(columns=["labels", "path"]), "md"))
        print("\n## Every recipe's runs per host and harness (n, median and range; the host probe's loop in ns/iter)\n")
        print(render(t.repeats, "md"))
        if not t.harness.empty:
            print("\n## The harness against the printed command (paired rounds, ABBA)\n")
            print(render(t.harness, "md"))
        print("\n## Which recipe finishes sooner (same host only)\n")
        print(render(t.orders, "md"))
        print("\n## Each GPU class's recipe\n")
        print(render(view_render.to_frame(t.classes, ClassRow), "md"))
        if not t.your_runs.empty:
            print("\n## Your runs (experiments of your own: the nearest matrix recipe and the flags that differ)\n")
            print(render(t.your_runs, "md"))
        print()
    if args.format == "md":
        print(f"## Speedup (baseline {args.baseline}; slowest measured where it has no run)\n")
    print(render(speed, args.format))
    if args.format == "md":
        print("\n## Convergence\n")
    else:
        print()
    print(render(conv, args.format))
    if not t.scaling.empty:
        print("\n## Scaling (same host; efficiency = speed-up / GPU ratio)\n" if args.format == "md" else "")
        print(render(t.scaling, args.format))
    return done
