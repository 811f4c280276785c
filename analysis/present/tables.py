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
from analysis.judge.answer import classes, view
from analysis.judge.answer import published as P
from analysis.judge.answer import run_tables as RT
from analysis.judge.answer.view import ClassRow, RecipeRow
from analysis.measure import repeats
from analysis.parse.record import RunRecord
from analysis.parse.results import Scan, collect, is_matrix, latest_per_group, scan
from analysis.present import recommend_view, view_render
from experiments.base import hardware
from experiments.base.errors import SKIPPED_EXIT

# the tables' rows are typed views (analysis.judge.answer.run_tables), rendered by analysis.present.view_render
speed_row, labels_text, range_text = RT.speed_row, RT.labels_text, RT.range_text


# ------------------------------------------------------------------------------------------ measured


def measured_records(results_dir: str | Path | list | Scan) -> list[RunRecord]:
    """The picked run per (hw, matrix experiment); claims runs are left to analysis.judge. RESULTS_DIR: one root,
    several (merged: analysis.parse.results.scan), or a scan already made."""
    records = results_dir.records if isinstance(results_dir, Scan) else collect(results_dir)
    return latest_per_group([r for r in records if is_matrix(r)])


# ------------------------------------------------------------------------------------------- tables


def speedup_table(results_dir: str | Path | Scan, baseline: str = hardware.DEFAULT_BASELINE,
                  seeds_dir: str | Path | None = None,
                  records: list[RunRecord] | None = None) -> pd.DataFrame:
    """Measured rows (one per hw x experiment x host) and published rows, speed-up versus the baseline
    (analysis.judge.answer.run_tables.speed_rows says how)."""
    records = records if records is not None else measured_records(results_dir)
    rows = RT.speed_rows(records, published_figures(seeds_dir or DEFAULT_SEEDS_DIR), baseline)
    return view_render.to_frame(rows, RT.SpeedRow)


def scaling_table(records: list[RunRecord]) -> pd.DataFrame:
    """Scaling efficiency of every N-GPU run over the 1-GPU run of the same hardware, experiment and host
    (analysis.judge.answer.run_tables.scaling_rows)."""
    return view_render.to_frame(RT.scaling_rows(records), RT.ScalingRow)


def convergence_table(results_dir: str | Path | Scan, seeds_dir: str | Path | None = None,
                      records: list[RunRecord] | None = None) -> pd.DataFrame:
    """Per picked run its losses, and the article's (analysis.judge.answer.run_tables.convergence_rows)."""
    rows = RT.convergence_rows(records if records is not None else measured_records(results_dir),
                               published_figures(seeds_dir or DEFAULT_SEEDS_DIR))
    return view_render.to_frame(rows, RT.ConvergenceRow)


# ---------------------------------------------------------------------------------------------- CLI


render = view_render.frame_text


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


def your_runs_table(records: list[RunRecord]) -> pd.DataFrame:
    """The user's own runs (analysis.judge.answer.run_tables.your_run_rows): their metrics as the speed table has
    them, the nearest matrix recipe and the flags that differ."""
    return view_render.to_frame(RT.your_run_rows(records), RT.YourRunRow)


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
        speed, conv = speed[list(RT.SPEED_COMPACT)], conv[list(RT.CONVERGENCE_COMPACT)]
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
        print(render(view_render.to_frame(t.recipes, RecipeRow, columns=view.RECIPE_FULL_TABLE), "md"))
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
