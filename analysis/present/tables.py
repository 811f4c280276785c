"""Speed-up and convergence tables of a results tree, the seed article's published rows beside the measured ones, and
the recommended recipe for the job: one sentence, the matrix recipes by time to finish the epoch, and the recommended
recipe per GPU class with its cost at a price table.

`swiftbench tables RESULTS_DIR [--baseline a10] [--format md|csv|json] [--compact] [--prices FILE]`. Rows come from
the run records (analysis.parse.results: one picked run per hardware and matrix experiment) and the reviewed published
figures (seeds/); every number is what analysis.measure (step time, tokens/s, MFU, losses, speed-ups) or
analysis.judge.published (measured vs published) returns: this module chooses rows and formats them, it computes no
statistic. The recommendation is analysis.judge.recommend's, its per-GPU rows analysis.estimate.recipe_gpus'.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

from analysis.core.seeds import DEFAULT_SEEDS_DIR, published_figures
from analysis.estimate import quick as quick_estimate
from analysis.estimate import recipe_gpus
from analysis.judge import published as P
from analysis.judge import recommend
from analysis.measure import compare, flops, loss, profile, steps, throughput
from analysis.parse.record import RunRecord
from analysis.parse.results import Scan, collect, is_matrix, latest_per_group, scan
from analysis.present import recommend_view
from experiments.base import hardware
from experiments.base.errors import SKIPPED_EXIT

SPEED_COLUMNS = [
    "hw", "experiment", "source", "gpus", "parallel", "status", "run", "host", "labels", "ms_per_sample",
    "ms_per_step", "ms_per_step_ci95", "ms_per_micro_step", "tokens_per_s", "tokens_per_s_per_gpu",
    "tokens_per_s_low", "tokens_per_s_high", "tokens_source",
    "samples_per_s", "gpu_busy_ms_per_step", "host_ms_per_step", "comm_ms_per_step", "gpu_busy_frac", "bound",
    "profiled_over_steady", "gpm_busy_ms_per_step", "gpm_host_ms_per_step", "gpm_busy_frac", "gpm_steps",
    "gpm_over_profiler",
    "peak_gib", "mfu",
    "speedup", "speedup_basis", "speedup_hosts", "baseline", "published_ms_per_sample", "measured_over_published",
    "host_python_ns", "host_dispatch_us", "host_lora_ms",
    "est_full_train_s", "est_full_train_s_low", "est_full_train_s_high", "est_full_tokens_per_s",
    "est_full_tokens_per_s_low", "est_full_tokens_per_s_high", "est_steps", "est_basis", "steady_steps",
]
CONVERGENCE_COLUMNS = [
    "hw", "experiment", "source", "status", "run", "labels", "steps", "final_train_loss", "final_eval_loss",
    "eval_token_acc", "loss_drop_per_100_steps", "steps_to_50pct_drop", "steps_to_90pct_drop",
    "wall_time_to_last_eval_s",
]
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


def estimate_cells(rec: RunRecord) -> dict:
    """The full run as a cut run with a schedule predicts it (analysis.estimate.quick): training time and steady
    tokens/s with their 95 % ranges, the steps behind them and what the estimate is. Empty for other runs."""
    if not rec.ok or not rec.schedule or (rec.global_steps or 0) >= len(rec.schedule):
        return {}
    est = quick_estimate.estimate(rec)
    return {"est_full_train_s": est.train_s, "est_full_train_s_low": est.train_s_low,
            "est_full_train_s_high": est.train_s_high, "est_full_tokens_per_s": est.tokens_per_s,
            "est_full_tokens_per_s_low": est.tokens_per_s_low, "est_full_tokens_per_s_high": est.tokens_per_s_high,
            "est_steps": est.fit_steps, "est_basis": est.label}


def _identity(rec: RunRecord) -> dict:
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


def speed_row(rec: RunRecord) -> dict:
    """One measured row of the speed table (without the speed-up, which needs the baseline)."""
    st = steps.step_time(rec)
    tp = throughput.throughput(rec)
    ci = None
    if st["ci95_low"] is not None:
        ci = range_text(st["ci95_low"] * 1000, st["ci95_high"] * 1000)
    share = profile.step_share(rec)
    gpm = profile.steady_share(rec)
    probe = rec.host_probe
    return {
        **_identity(rec), "ms_per_sample": steps.sample_ms(rec), "ms_per_step": _ms(st["median"]),
        "ms_per_step_ci95": ci, "ms_per_micro_step": steps.micro_step_ms(rec), "tokens_per_s": tp.tokens_per_s,
        "tokens_per_s_per_gpu": tp.tokens_per_s / rec.gpus if tp.tokens_per_s else None, "tokens_per_s_low": tp.low,
        "tokens_per_s_high": tp.high,
        "tokens_source": tp.source if tp.tokens_per_s is not None else None,
        "samples_per_s": throughput.samples_per_s(rec), "gpu_busy_ms_per_step": share["gpu_busy_ms"],
        "host_ms_per_step": share["host_ms"], "comm_ms_per_step": share["comm_ms"],
        "gpu_busy_frac": share["gpu_busy_frac"], "bound": share["bound"],
        "profiled_over_steady": share["profiled_over_steady"], "gpm_busy_ms_per_step": gpm["gpm_busy_ms"],
        "gpm_host_ms_per_step": gpm["gpm_host_ms"], "gpm_busy_frac": gpm["gpm_busy_frac"],
        "gpm_steps": gpm["gpm_steps"] or None, "gpm_over_profiler": gpm["gpm_over_profiler"],
        "peak_gib": rec.peak_mem_gib, "mfu": flops.mfu(rec, tp.tokens_per_s)["mfu"],
        "host_python_ns": probe["python_ns"], "host_dispatch_us": probe["dispatch_us"],
        "host_lora_ms": probe["lora_ms"],
        "steady_steps": len(steps.steady_steps(rec)) or None,
        **estimate_cells(rec),
    }


# ----------------------------------------------------------------------------------------- published


def published_speed_rows(pub: pd.DataFrame) -> list[dict]:
    rows = []
    for hw in P.hardware_with(pub, "ms_per_step"):
        rows.append({
            "hw": hw, "experiment": SEED_EXPERIMENT, "source": "published", "status": "published",
            "run": PUBLISHED_RUN, "labels": "published (ms-swift hardware article; its 'step' is one sample)",
            "ms_per_sample": P.value(pub, hw, "ms_per_step"), "tokens_per_s": P.value(pub, hw, "tokens_per_s"),
            "peak_gib": P.value(pub, hw, "peak_mem_gib"),
        })
    return rows


# ------------------------------------------------------------------------------------------- tables


def baseline_name(row: dict | pd.Series) -> str:
    """How the `baseline` column names a row: its hardware, and its host id where it has one."""
    host = row.get("host")
    return row["hw"] + (f" ({host})" if isinstance(host, str) and host else "")


MIN_BASELINE_STEADY_STEPS = 10  # a measured baseline row's steady steps, where any row of the group has that many


def pick_baseline(rows: list[dict], baseline: str) -> dict | None:
    """The row of one experiment and source that speed-ups are relative to: BASELINE's row when it has a time per
    sample (and, for measured rows, a tokens/s: the speed-up is a ratio of throughputs or paired step times); else the
    slowest such row, among measured rows with at least MIN_BASELINE_STEADY_STEPS steady steps where there are any: a
    20-step run has one 5-step steady interval, too few to pair step by step with anything, and its tokens/s over
    those few batches (fewer tokens than most) would skew every tokens/s ratio against it."""
    usable = [r for r in rows if r.get("ms_per_sample") is not None
              and (r["source"] != "measured" or r.get("tokens_per_s") is not None)]
    hit = [r for r in usable if r["hw"] == baseline]
    if hit:
        return hit[0]
    long_enough = [r for r in usable if r["source"] != "measured"
                   or (r.get("steady_steps") or 0) >= MIN_BASELINE_STEADY_STEPS]
    usable = long_enough or usable
    return max(usable, key=lambda r: r["ms_per_sample"]) if usable else None


def speedup_table(results_dir: str | Path | Scan, baseline: str = "a10", seeds_dir: str | Path | None = None,
                  records: list[RunRecord] | None = None) -> pd.DataFrame:
    """Measured rows (one per hw x experiment x host) and published rows, speed-up versus the baseline.

    Units: the article's "ms per step" is one sample's forward-backward pass, so it sits in `ms_per_sample` beside our
    ms per sample (optimizer-step time / samples per step); `ms_per_step` (an optimizer step) is ours alone.
    speedup, measured rows: analysis.measure.compare.speedup(baseline run, this run).factor (paired step times where
    both trained the same batches, else the tokens/s ratio), `speedup_hosts` saying whether the two runs shared a host;
    published rows: time_speedup(baseline ms per sample, this row's). The baseline is BASELINE's row of the same
    experiment and source, else the slowest (pick_baseline). measured_over_published:
    analysis.judge.published.sample_vs_published (our ms per sample / the published ms per sample, same hardware).
    """
    records = records if records is not None else measured_records(results_dir)
    by_row: list[tuple[dict, RunRecord | None]] = [(speed_row(r), r) for r in records]
    pub = published_figures(seeds_dir or DEFAULT_SEEDS_DIR)
    by_row += [(row, None) for row in published_speed_rows(pub)]
    groups: dict[tuple, list[tuple[dict, RunRecord | None]]] = {}
    for row, rec in by_row:
        groups.setdefault((row["experiment"], row["source"]), []).append((row, rec))
    for (_, source), members in groups.items():
        base = pick_baseline([row for row, _ in members], baseline)
        if base is None:
            continue
        base_rec = next(rec for row, rec in members if row is base)
        for row, rec in members:
            row["baseline"] = baseline_name(base)
            if source == "measured":
                assert base_rec is not None and rec is not None  # measured rows carry their records
                sp = compare.speedup(base_rec, rec)
                row.update(speedup=sp.factor, speedup_basis=sp.how, speedup_hosts=sp.hosts)
            else:
                sp = compare.time_speedup(base["ms_per_sample"], row["ms_per_sample"])
                row.update(speedup=sp.factor, speedup_basis="ms per sample (published)")
    for row, rec in by_row:
        if rec is not None and rec.experiment == SEED_EXPERIMENT:
            row.update(P.sample_vs_published(rec, pub))
    df = pd.DataFrame([row for row, _ in by_row], columns=SPEED_COLUMNS)
    return df.sort_values(["experiment", "source", "hw"], ignore_index=True)


SCALING_COLUMNS = ["hw", "experiment", "parallel", "host", "gpus_from", "gpus_to", "speedup", "efficiency",
                   "efficiency_low", "efficiency_high", "basis", "hosts", "tokens_per_s_from", "tokens_per_s_to",
                   "comm_ms_per_step", "gpu_busy_frac", "run_from", "run_to", "labels"]


def scaling_table(records: list[RunRecord]) -> pd.DataFrame:
    """Scaling efficiency of every N-GPU run over the 1-GPU run of the same hardware, experiment and host
    (analysis.measure.compare.scaling_pairs: a ratio across hosts measures the hosts, so none is made)."""
    rows = []
    for one, many, sc in compare.scaling_pairs(records):
        share = profile.step_share(many)
        rows.append({"hw": many.hw, "experiment": many.experiment, "parallel": many.parallel, "host": many.host_id,
                     **{k: sc[k] for k in ("gpus_from", "gpus_to", "speedup", "efficiency", "efficiency_low",
                                            "efficiency_high", "basis", "hosts")},
                     "tokens_per_s_from": throughput.throughput(one).tokens_per_s,
                     "tokens_per_s_to": throughput.throughput(many).tokens_per_s,
                     "comm_ms_per_step": share["comm_ms"], "gpu_busy_frac": share["gpu_busy_frac"],
                     "run_from": one.run, "run_to": many.run, "labels": labels_text(many)})
    return pd.DataFrame(rows, columns=SCALING_COLUMNS)


def convergence_table(results_dir: str | Path | Scan, seeds_dir: str | Path | None = None,
                      records: list[RunRecord] | None = None) -> pd.DataFrame:
    """Per picked run: steps, final train / eval loss, eval token accuracy, the training loss's drop
    (analysis.measure.loss), wall time to the last eval; and the article's final losses and accuracies."""
    out = []
    for r in records if records is not None else measured_records(results_dir):
        out.append({
            **_identity(r), "steps": r.global_steps, "final_train_loss": loss.final_train_loss(r),
            "final_eval_loss": loss.final_eval_loss(r), "eval_token_acc": loss.final_eval_token_acc(r),
            **loss.loss_drop_stats(r), "wall_time_to_last_eval_s": loss.wall_time_to_last_eval(r),
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
    p.add_argument("--baseline", default="a10", help="hardware the speedup is relative to (default a10)")
    p.add_argument("--format", choices=["md", "csv", "json"], default="md",
                   help="output format: md (Markdown, the default), csv or json")
    p.add_argument("--seeds", default=None, help="folder of published figures (default: the suite's seeds/)")
    p.add_argument("--compact", action="store_true", help="only the main columns")
    p.add_argument("--answer", action="store_true",
                   help="only the answer (README's): the recommendation sentence, the recipes measured beside a "
                        "full seed epoch of their own host, and the recommended recipe per GPU class; Markdown, "
                        "without host ids (the full tables name the hosts and runs)")
    p.add_argument("--prices", default=str(recipe_gpus.DEFAULT_PRICES), metavar="FILE",
                   help="price table for the recommended recipe's cost per GPU class (YAML 'h100: 2.5' per GPU-hour, "
                        "optionally 'currency: EUR'; default: analysis/data/prices.yaml, dated list prices)")
    p.set_defaults(func=run)


RECIPE_COLUMNS = ["hw", "experiment", "host", "run", "steps", "train_runtime_s", "load_s", "tokens_per_s", "peak_gib",
                  "seed_run", "seed_train_runtime_s", "x_seed", "eval_step", "eval_loss", "seed_eval_loss", "loss_dev",
                  "seed_range", "band_step", "loss_counts", "same_host_seed", "recommended", "labels"]
RECOMMENDED_COLUMNS = ["experiment", "hw", "host", "run", "steps", "train_runtime_s", "load_s", "seed_run",
                       "seed_train_runtime_s", "x_seed", "eval_loss", "seed_eval_loss", "seed_range", "loss_counts",
                       "same_host_pair", "note", "sentence"]
GPU_COLUMNS = ["experiment", "hw", "name", "capacity_gib", "needs_gib", "planner_needs_gib", "fits", "fit_basis",
               "epoch_s", "gpu_hours", "price_per_gpu_hour", "currency", "cost", "source", "host"]
GPU_CLASSES = ("a10", "rtx4090", "a100", "a100-80gb", "h100", "h200")  # the classes a reader asks about


def recommendation(records: list[RunRecord], prices: str | Path | None = recipe_gpus.DEFAULT_PRICES,
                   results_dir=None) -> dict:
    """{"recipes": every full-epoch matrix recipe per host by time to finish the job (analysis.judge.recommend),
    "pick": the recommended one, "gpus": its rows per GPU class (analysis.estimate.recipe_gpus), "sentence"}."""
    rows = recommend.candidates(records)
    pick = recommend.recommend(records, rows)
    gpus = []
    if pick.get("path"):
        rec = next(r for r in records if r.path == pick["path"])
        measured = pick if pick["same_host_pair"] else {"peak_gib": pick.get("peak_gib")}
        gpus = [{"experiment": pick["experiment"], **g} for g in recipe_gpus.gpu_rows(
            recipe_gpus.recipe_kwargs(rec), [k for k in GPU_CLASSES if hardware.get(k)], measured, prices,
            results_dir)]
    for r in rows:
        r["recommended"] = bool(pick["same_host_pair"] and r["path"] == pick["path"])
    return {"recipes": rows, "pick": pick, "gpus": gpus, "sentence": recommend_view.sentence(pick, gpus)}


def tables(results_dir: str | Path | Scan, baseline: str = "a10", seeds_dir: str | Path | None = None,
           compact: bool = False, prices: str | Path | None = recipe_gpus.DEFAULT_PRICES,
           planner_results: str | Path | None = None) -> dict[str, pd.DataFrame]:
    """{"speedup", "convergence", "scaling", "recommended" (one row: the recipe for the job and its sentence),
    "recipes" (every full-epoch matrix recipe by time to finish the job), "recommended_gpus" (the recommended recipe
    per GPU class; PLANNER_RESULTS: the tree the planner takes measured steps and sample lengths from, by default
    RESULTS_DIR where it is one folder)} of RESULTS_DIR (COMPACT: only the main columns of the first two)."""
    records = measured_records(results_dir)
    speed = speedup_table(results_dir, baseline, seeds_dir, records=records)
    conv = convergence_table(results_dir, seeds_dir, records=records)
    scale = scaling_table(records)
    everything = results_dir.records if isinstance(results_dir, Scan) else collect(results_dir)
    if planner_results is None and isinstance(results_dir, (str, Path)):
        planner_results = results_dir
    rec = recommendation(everything, prices, planner_results)
    if compact:
        speed, conv = speed[COMPACT["speedup"]], conv[COMPACT["convergence"]]
    return {"speedup": speed, "convergence": conv, "scaling": scale,
            "recommended": pd.DataFrame([{**rec["pick"], "sentence": rec["sentence"]}], columns=RECOMMENDED_COLUMNS),
            "recipes": pd.DataFrame(rec["recipes"], columns=RECIPE_COLUMNS),
            "recommended_gpus": pd.DataFrame(rec["gpus"], columns=GPU_COLUMNS)}


ANSWER_RECIPES = {"experiment": "recipe", "hw": "GPU", "pair": "host", "steps": "steps", "train_runtime_s": "epoch s",
                  "load_s": "start-up s", "tokens_per_s": "steady tokens/s", "x_seed": "x seed (epoch)",
                  "eval_loss": "eval loss", "seed_eval_loss": "seed's eval loss", "loss_counts": "in band"}
ANSWER_GPUS = {"hw": "GPU class", "capacity_gib": "GiB", "needs_gib": "needs GiB", "fits": "fits", "epoch_s": "epoch s",
               "gpu_hours": "GPU-h", "price_per_gpu_hour": "price/h", "cost": "cost", "source": "how"}


def answer_md(t: dict[str, pd.DataFrame]) -> str:
    """The answer as README shows it: the sentence, the same-host recipe rows (fastest first), the recommended
    recipe per GPU class. Formats only what tables() computed; host ids stay in the full tables."""
    rec = t["recipes"]
    paired = rec[rec["same_host_seed"].astype(bool)].sort_values("train_runtime_s").copy()
    letters = {h: chr(ord("A") + i) for i, h in enumerate(dict.fromkeys(paired["host"]))}
    paired["pair"] = paired["host"].map(letters)  # which rows share a host (a ratio is of one host's runs)
    gpus = t["recommended_gpus"]
    parts = [str(t["recommended"].iloc[0]["sentence"]), "",
             render(paired[list(ANSWER_RECIPES)].rename(columns=ANSWER_RECIPES), "md")]
    if not gpus.empty:
        parts += ["", render(gpus[list(ANSWER_GPUS)].rename(columns=ANSWER_GPUS), "md")]
    return "\n".join(parts)


def run(args) -> int:
    hardware.require(args.baseline)  # an unknown baseline is bad input (exit 2, the known names), as in report
    recipe_gpus.check_prices(args.prices)  # so is a price table that cannot be read, even where none is needed
    found = scan(args.results_dir)
    for line in found.lines():  # folders left out and copies counted once, one line each; exit 3 if any was left out
        print(f"swiftbench: {line}", file=sys.stderr)
    done = SKIPPED_EXIT if found.skipped else 0
    t = tables(found, args.baseline, args.seeds, args.compact, args.prices, args.results_dir[0])
    speed, conv = t["speedup"], t["convergence"]
    if getattr(args, "answer", False):
        print(answer_md(t))
        return done
    if args.format == "json":
        print(json.dumps({name: json.loads(df.to_json(orient="records", double_precision=15))
                          for name, df in t.items()}, indent=2))
        return done
    if args.format == "md":
        print(f"{t['recommended'].iloc[0]['sentence']}\n")
        print("## Recipes by time to finish the job (full-epoch runs; train_runtime, start-up beside it)\n")
        print(render(t["recipes"].drop(columns=["labels"]), "md"))
        if not t["recommended_gpus"].empty:
            print("\n## The recommended recipe per GPU class\n")
            print(render(t["recommended_gpus"], "md"))
        print()
    if args.format == "md":
        print(f"## Speedup (baseline {args.baseline}; slowest measured where it has no run)\n")
    print(render(speed, args.format))
    if args.format == "md":
        print("\n## Convergence\n")
    else:
        print()
    print(render(conv, args.format))
    if not t["scaling"].empty:
        print("\n## Scaling (same host; efficiency = speed-up / GPU ratio)\n" if args.format == "md" else "")
        print(render(t["scaling"], args.format))
    return done
