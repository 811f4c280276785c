"""Speedup and convergence tables from a results tree, with the seed documents' published rows beside ours.

`swiftbench tables RESULTS_DIR [--baseline a10] [--format md|csv|json]`. Reads only what earlier stages
wrote: run folders under RESULTS_DIR and the reviewed published figures under seeds/.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from analysis.runs import collect

SPEED_COLUMNS = [
    "hw", "experiment", "source", "status", "run", "labels", "ms_per_step", "ms_per_step_ci95",
    "ms_per_micro_step", "tokens_per_s", "samples_per_s", "peak_gib", "mfu", "speedup",
    "published_ms_per_step", "measured_over_published",
]
CONVERGENCE_COLUMNS = [
    "hw", "experiment", "source", "status", "run", "labels", "steps", "final_train_loss", "final_eval_loss",
    "eval_token_acc", "loss_drop_per_100_steps", "steps_to_50pct_drop", "steps_to_90pct_drop",
    "wall_time_to_last_eval_s",
]
COMPACT = {  # --compact: the columns that fit a README page
    "speedup": ["hw", "experiment", "source", "ms_per_step", "ms_per_step_ci95", "ms_per_micro_step", "tokens_per_s",
                "peak_gib", "mfu", "speedup", "labels"],
    "convergence": ["hw", "experiment", "source", "steps", "final_train_loss", "final_eval_loss", "eval_token_acc",
                    "steps_to_50pct_drop", "wall_time_to_last_eval_s", "labels"],
}
SEED_EXPERIMENT = "seed"  # the experiment that reproduces the published recipe; published rows sit beside it


# ------------------------------------------------------------------------------------------ measured


def _latest_per_group(rows: list[dict]) -> list[dict]:
    """One row per (hw, experiment): the successful run with the most steps (the least cut), newest first
    among equals; else the newest failed one. Every run stays listed by `runs_table`."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["hw"], r["experiment"]), []).append(r)
    out = []
    for _, runs in sorted(groups.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))):
        ok = [r for r in runs if r["status"] == "ok"]
        pick = sorted(ok or runs, key=lambda r: (r.get("global_steps") or 0, r["run"]))[-1]
        out.append({**pick, "n_runs": len(runs)})
    return out


def loss_drop_stats(curve: list[list[float]], final: float | None) -> dict:
    """Loss drop per 100 steps and the first logged steps at which 50 % / 90 % of the total drop is reached.

    total drop D = first logged loss - final loss (mean of the last three logged); rate = D / (last step -
    first step) x 100.
    """
    out = {"loss_drop_per_100_steps": None, "steps_to_50pct_drop": None, "steps_to_90pct_drop": None}
    if len(curve) < 2 or final is None:
        return out
    (s0, l0), (s_last, _) = curve[0], curve[-1]
    drop = l0 - final
    if s_last > s0:
        out["loss_drop_per_100_steps"] = drop / (s_last - s0) * 100
    if drop > 0:
        for frac, key in ((0.5, "steps_to_50pct_drop"), (0.9, "steps_to_90pct_drop")):
            target = l0 - frac * drop
            out[key] = next((s for s, v in curve if v <= target), None)
    return out


def measured_rows(results_dir: str | Path) -> list[dict]:
    """The picked run per (hw, matrix experiment); claims runs are left to analysis.claims."""
    from analysis.runs import is_matrix

    return _latest_per_group([r for r in collect(results_dir) if is_matrix(r)])


def _speed_row(r: dict) -> dict:
    st = r.get("step_time_s") or {}
    med = st.get("median")
    ci = None
    if st.get("ci95_low") is not None:
        ci = f"{st['ci95_low'] * 1000:.0f}-{st['ci95_high'] * 1000:.0f}"
    return {
        "hw": r["hw"], "experiment": r["experiment"], "source": "measured", "status": r["status"],
        "run": r["run"], "labels": "; ".join(r["labels"]) + (f"; failed: {r['failure']}" if r.get("failure") else ""),
        "ms_per_step": med * 1000 if med else None, "ms_per_step_ci95": ci,
        "ms_per_micro_step": r.get("micro_step_time_ms"), "tokens_per_s": r.get("tokens_per_s"),
        "samples_per_s": r.get("samples_per_s"), "peak_gib": r.get("peak_mem_gib"), "mfu": r.get("mfu"),
    }


# ----------------------------------------------------------------------------------------- published


def _published(seeds_dir: str | Path | None) -> pd.DataFrame:
    try:
        from analysis.core.seeds import published_figures
    except ModuleNotFoundError:
        return pd.DataFrame(columns=["hw", "metric", "value"])
    return published_figures(seeds_dir) if seeds_dir else published_figures()


def _pub_value(pub: pd.DataFrame, hw: str, metric: str):
    hit = pub[(pub["hw"] == hw) & (pub["metric"] == metric)]
    if hit.empty:
        return None
    v = hit.iloc[0]["value"]
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def published_speed_rows(pub: pd.DataFrame) -> list[dict]:
    rows = []
    for hw in [h for h in pub["hw"].dropna().unique()]:
        ms = _pub_value(pub, hw, "ms_per_step")
        if ms is None:
            continue
        rows.append({
            "hw": hw, "experiment": SEED_EXPERIMENT, "source": "published", "status": "published",
            "run": "seeds/ms_swift_hw_test.yaml", "labels": "published (ms-swift hardware article)",
            "ms_per_step": ms, "tokens_per_s": _pub_value(pub, hw, "tokens_per_s"),
            "peak_gib": _pub_value(pub, hw, "peak_mem_gib"),
        })
    return rows


# ------------------------------------------------------------------------------------------- tables


def speedup_table(results_dir: str | Path, baseline: str = "a10", seeds_dir: str | Path | None = None,
                  rows: list[dict] | None = None) -> pd.DataFrame:
    """Measured rows (one per hw x experiment) and published rows, speedup versus the baseline.

    speedup = baseline ms per optimizer step / this row's, within one experiment and one source; when the
    baseline has no row there, the slowest row of that experiment and source is the baseline.
    measured_over_published = measured ms per micro-step / published ms per step on the same hardware (the
    article's "step" is one forward-backward pass of one sample, i.e. our micro-step at batch 1).
    """
    measured = [_speed_row(r) for r in (rows if rows is not None else measured_rows(results_dir))]
    pub = _published(seeds_dir)
    published = published_speed_rows(pub)
    df = pd.DataFrame(measured + published, columns=SPEED_COLUMNS)
    df["baseline"] = None
    for (exp, src), idx in df.groupby(["experiment", "source"]).groups.items():
        part = df.loc[idx]
        base = part[(part["hw"] == baseline) & part["ms_per_step"].notna()]
        if base.empty:
            valid = part[part["ms_per_step"].notna()]
            if valid.empty:
                continue
            base = valid.loc[[valid["ms_per_step"].idxmax()]]
        base_ms = float(base.iloc[0]["ms_per_step"])
        df.loc[idx, "speedup"] = base_ms / df.loc[idx, "ms_per_step"]
        df.loc[idx, "baseline"] = base.iloc[0]["hw"]
    for i, r in df[df["source"] == "measured"].iterrows():
        if r["experiment"] != SEED_EXPERIMENT:
            continue
        ms = _pub_value(pub, r["hw"], "ms_per_step") if len(pub) else None
        df.at[i, "published_ms_per_step"] = ms
        if ms and r["ms_per_micro_step"]:
            df.at[i, "measured_over_published"] = r["ms_per_micro_step"] / ms
    return df.sort_values(["experiment", "source", "hw"], ignore_index=True)


def convergence_table(results_dir: str | Path, seeds_dir: str | Path | None = None,
                      rows: list[dict] | None = None) -> pd.DataFrame:
    out = []
    for r in rows if rows is not None else measured_rows(results_dir):
        base = _speed_row(r)
        out.append({
            **{k: base[k] for k in ("hw", "experiment", "source", "status", "run", "labels")},
            "steps": r.get("global_steps"), "final_train_loss": r.get("final_train_loss"),
            "final_eval_loss": r.get("final_eval_loss"), "eval_token_acc": r.get("final_eval_token_acc"),
            **loss_drop_stats(r.get("train_loss") or [], r.get("final_train_loss")),
            "wall_time_to_last_eval_s": r.get("wall_time_to_last_eval_s"),
        })
    pub = _published(seeds_dir)
    for hw in [h for h in pub["hw"].dropna().unique()]:
        loss, acc = _pub_value(pub, hw, "final_eval_loss"), _pub_value(pub, hw, "final_eval_acc_pct")
        steps = _pub_value(pub.assign(hw=pub["hw"].fillna("*")), "*", "total_steps")
        text = pub[(pub["hw"] == hw) & (pub["metric"] == "final_eval_loss")]
        if text.empty:
            continue
        out.append({
            "hw": hw, "experiment": SEED_EXPERIMENT, "source": "published", "status": "published",
            "run": "seeds/ms_swift_hw_test.yaml",
            "labels": "published; loss text " + repr(str(text.iloc[0].get("text", ""))).replace("\\n", " "),
            "steps": steps, "final_eval_loss": loss, "eval_token_acc": acc / 100 if acc else None,
        })
    return pd.DataFrame(out, columns=CONVERGENCE_COLUMNS).sort_values(
        ["experiment", "source", "hw"], ignore_index=True)


# ---------------------------------------------------------------------------------------------- CLI


def render(df: pd.DataFrame, fmt: str) -> str:
    if fmt == "csv":
        return df.to_csv(index=False)
    if fmt == "json":
        return json.dumps(json.loads(df.to_json(orient="records")), indent=2)
    shown = df.astype(object).where(df.notna(), None)  # tabulate only treats None as missing, not NaN
    return shown.to_markdown(index=False, floatfmt=".4g", missingval="–")


def register(sub) -> None:
    p = sub.add_parser("tables", help="speedup and convergence tables of a results tree")
    p.add_argument("results_dir", help="results/ (results/<hw>/<experiment>/<run>/)")
    p.add_argument("--baseline", default="a10", help="hardware the speedup is relative to (default a10)")
    p.add_argument("--format", choices=["md", "csv", "json"], default="md")
    p.add_argument("--seeds", default=None, help="folder of published figures (default: the suite's seeds/)")
    p.add_argument("--compact", action="store_true", help="only the main columns")
    p.set_defaults(func=run)


def run(args) -> int:
    rows = measured_rows(args.results_dir)
    speed = speedup_table(args.results_dir, args.baseline, args.seeds, rows=rows)
    conv = convergence_table(args.results_dir, args.seeds, rows=rows)
    if args.compact:
        speed, conv = speed[COMPACT["speedup"]], conv[COMPACT["convergence"]]
    if args.format == "json":
        print(json.dumps({"speedup": json.loads(speed.to_json(orient="records")),
                          "convergence": json.loads(conv.to_json(orient="records"))}, indent=2))
        return 0
    if args.format == "md":
        print(f"## Speedup (baseline {args.baseline}; slowest measured where it has no run)\n")
    print(render(speed, args.format))
    if args.format == "md":
        print("\n## Convergence\n")
    else:
        print()
    print(render(conv, args.format))
    return 0
