"""Estimates section (the planner's validation): how far the planner was off on the runs we made
(analysis.estimate.validate.planner_error), the runs its model covers, and every run's estimate beside its measurement
(analysis.estimate.validate.estimates_vs_measurements), the tables folded; then the quick runs' estimates of the full
run against the full runs made after them (analysis.estimate.quick)."""
from __future__ import annotations

import pandas as pd

from analysis.estimate import quick_check as Q
from analysis.estimate.validate import planner_error
from analysis.parse.record import RunRecord
from analysis.present import plots
from analysis.present.report import html as H
from analysis.present.report.answer import error_text
from analysis.present.report.context import Context

CHECKED = ["check", "experiment", "run", "per_device_batch", "seq_len", "cap_gib", "measured_peak_gib",
           "estimated_peak_gib", "ratio", "within_10pct", "fits_correct", "measured_step_s", "estimated_step_s",
           "step_ratio"]


def anchors_frame(ctx: Context) -> pd.DataFrame:
    """The time model against the published same-source cross-GPU ratios (analysis.estimate.anchors): each pair's
    published ratio, the model's prediction from the reference run's profile, the error."""
    from analysis.estimate import anchors

    checks = anchors.anchor_checks(anchors.reference_run(ctx.records))
    return pd.DataFrame([{"source": c.source, "pair": c.pair, "comparable": c.comparable, "published": c.published,
                          "predicted": c.predicted, "error": c.error} for c in checks],
                        columns=["source", "pair", "comparable", "published", "predicted", "error"])


def anchors_html(ctx: Context) -> str:
    from analysis.estimate import transfer
    from experiments.base.errors import InputError

    try:
        df = anchors_frame(ctx)
    except InputError as exc:  # a results tree without the reference run: say so
        return H.p(f"The time model's check against published cross-GPU ratios needs its reference run: {H.e(exc)}")
    low, high = transfer.band()
    ref = transfer.model_constants()["anchors.reference_run"]
    return H.join([
        H.p(f"<b>The time model against published cross-GPU ratios</b> (docs/time-model.md): the step of "
            f"<code>{H.e(ref)}</code> (padded rows, checkpointing on: the recipe comparable to milabench's LoRA) "
            "carried kernel by kernel to each class, the predicted time ratio beside the same source's published "
            f"throughput ratio. The errors set the band every modelled time carries: {low:+.1%} .. {high:+.1%}. "
            "Lambda's pairs are a proxy workload (BERT-large), not LoRA of a 7-8B model."),
        H.html_table(df, {"published": "{:.3f}", "predicted": "{:.3f}", "error": "{:+.1%}"}),
        H.csv(ctx, df, "time_model_anchors.csv"),
    ])


def estimates_section(ctx: Context) -> str:
    df = ctx.estimates()
    err = planner_error(df)
    modelled = df[df["check"].isin(["reserved peak", "fits under the cap"])] if "check" in df else df.iloc[0:0]
    formats = {c: "{:,.4g}" for c in df.select_dtypes("number").columns}
    not_modelled = int(df["check"].astype(str).str.startswith("not modelled").sum()) if "check" in df else 0
    return H.join([
        H.p(f"The planner (analysis/estimate/planner.py) against the {len(df)} run folders: <b>{H.e(error_text(err))}"
            f"</b>. {len(modelled)} runs are of a configuration its model covers (finished uncapped runs: the "
            "reserved peak and the step time; runs under an allocator cap: whether the batch fits), "
            f"{not_modelled} use a recipe it does not model (padding-free, Liger, length-grouped, eager attention, "
            "GC off), the rest did not finish. Three constants are calibrated on these same runs, so agreement is "
            "a consistency check, not an independent validation."),
        H.fold(f"the {len(modelled)} runs its model covers, estimate beside measurement",
               H.html_table(modelled, formats, columns=[c for c in CHECKED if c in modelled.columns])),
        H.fold(f"every run ({len(df)}), every column", H.html_table(df, formats)),
        H.csv(ctx, df, "estimates_vs_measurements.csv"),
        anchors_html(ctx),
        *quick_section(ctx),
    ])


ROW_COLUMNS = ["experiment", "quick_run", "first_on_host", "full_first", "quick_steps", "fit_steps", "form",
               "predicted_train_s", "low", "high", "measured_train_s", "error_pct", "inside"]
PART_COLUMNS = ["to_anchor_s", "steps_s", "events_s"]  # analysis.estimate.quick_check.ErrorParts
QUICK_COLUMNS = [*ROW_COLUMNS, *PART_COLUMNS, "same_steps_ratio", "same_steps_gpu_ratio", "same_steps_host_ratio"]
# shown on the page; the error's parts and the GPM ratios are in the folded table and quick_runs.csv
QUICK_BRIEF = ["experiment", "quick_run", "quick_steps", "predicted_train_s", "low", "high", "measured_train_s",
               "error_pct", "inside", "same_steps_ratio"]


def quick_frame(rows: list[dict]) -> pd.DataFrame:
    """analysis.estimate.quick_check.comparison_table's rows (as_json), flat: the error's parts and the same-steps
    ratios as columns."""
    flat = []
    for r in rows:
        parts, same = r.get("error_parts") or {}, r.get("same_steps") or {}
        flat.append({**{k: r.get(k) for k in ROW_COLUMNS}, **{k: parts.get(k) for k in PART_COLUMNS},
                     "same_steps_ratio": same.get("ratio"), "same_steps_gpu_ratio": same.get("busy_ratio"),
                     "same_steps_host_ratio": same.get("host_ratio"), "hw": r.get("hw"),
                     "full_run": r.get("full_run")})
    return pd.DataFrame(flat, columns=[*QUICK_COLUMNS, "hw", "full_run"])


def quick_section(ctx: Context) -> list[str]:
    """The quick runs (docs/quick-runs.md): each estimate with its range and the steps behind it, against the full
    run made after it on the same host, the error split into its parts, and a figure of the steps both runs have."""
    rows = [Q.as_json(r) for r in Q.comparison_table(records=ctx.records)]
    if not rows:
        return [H.p("<b>Quick runs.</b> None in these results (<code>make run-all ... QUICK=1</code>).")]
    df = quick_frame(rows)
    by_run: dict[tuple, RunRecord] = {(r.hw, r.experiment, r.run): r for r in ctx.records}
    frames, runs = [], []
    for r in rows:
        q, full = by_run.get((r["hw"], r["experiment"], r["quick_run"])), by_run.get(
            (r["hw"], r["experiment"], r.get("full_run")))
        if q is None or full is None:
            continue
        steps = Q.same_step_rows(q, full)
        if steps:
            runs += [q, full]
            frames.append(pd.DataFrame(steps).assign(name=f"{r['hw']} · {r['experiment']} · {r['quick_run']}",
                                                     ratio=(r.get("same_steps") or {}).get("ratio")))
    formats = {c: "{:,.4g}" for c in df.select_dtypes("number").columns}
    formats.update(error_pct="{:+.2f}", to_anchor_s="{:+.1f}", steps_s="{:+.1f}", events_s="{:+.1f}")
    parts = [
        H.p(f"<b>Quick runs.</b> {len(df)} quick runs (<code>swiftbench quick</code>): each one's estimate of the full "
            "run's training time with its 95 % range and the steps behind it, against the full run made after it on "
            f"the same host ({int(df['measured_train_s'].notna().sum())} made, shown here; <i>full_first</i>: the "
            "full run was made before the quick run, on a machine that had already run the recipe to the end). The "
            "error (predicted - measured) is split into its parts (folded table): the measured part up to the anchor "
            "step, the modelled steps after it, the evaluations and saves. <i>same_steps_ratio</i>: the full run's "
            "seconds over the quick run's on the steady steps both have (the same batches); "
            "<i>same_steps_gpu_ratio</i> and <i>same_steps_host_ratio</i>: the same for the GPU-active and host "
            "seconds (GPM counters). The bar set for a quick estimate: within 3 % of the measured time, and inside "
            "its range. The range covers the quick run's own step noise, not how the next run on the host will go: "
            "where the step is host-bound, the full run's host seconds over the very same batches differed from the "
            "quick run's (docs/quick-runs.md)."),
        H.html_table(df[df["measured_train_s"].notna()], formats, columns=QUICK_BRIEF),
        H.fold(f"every quick run ({len(df)}), the error's parts and the GPM ratios",
               H.html_table(df, formats, columns=QUICK_COLUMNS)),
        H.csv(ctx, df, "quick_runs.csv"),
    ]
    if frames:
        labels = ctx.labels_of(runs)
        fig = plots.quick_pair_steps(pd.concat(frames, ignore_index=True), "A quick run and the full run after it: "
                                     "the same steps", labels)
        parts.append(H.figure(ctx, fig, "quick_pairs.png", "Each steady interval both runs of a pair have (the same "
                              "batches, the same host, minutes apart): the quick run solid, the full run dashed; "
                              "where both have GPM counters, the GPU-active seconds below "
                              "(analysis.estimate.quick_check.same_step_rows). " + labels))
    return parts
