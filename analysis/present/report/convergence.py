"""Convergence section: train and eval loss curves of every matrix run and the convergence table."""
from __future__ import annotations

import pandas as pd

from analysis.present import plots
from analysis.present.report import html as H
from analysis.present.report.context import Context

FORMATS = {"final_train_loss": "{:.4f}", "final_eval_loss": "{:.4f}", "eval_token_acc": "{:.4f}",
           "loss_drop_per_100_steps": "{:.3f}", "steps": "{:.0f}", "steps_to_50pct_drop": "{:.0f}",
           "steps_to_90pct_drop": "{:.0f}", "wall_time_to_last_eval_s": "{:.1f}"}
COLUMNS = ["experiment", "name", "hw", "run", "split", "step", "loss"]


def loss_frame(records) -> pd.DataFrame:
    pts = []
    for r in records:
        for split, curve in (("train", r.train_loss), ("eval", r.eval_loss)):
            for step, value in curve:
                pts.append({"experiment": r.experiment, "name": r.name, "hw": r.hw, "run": r.run, "split": split,
                            "step": step, "loss": value})
    return pd.DataFrame(pts, columns=COLUMNS)


def identical_curves(records) -> list[str]:
    """Groups of repeated runs (one hw and experiment) whose logged train losses are identical where they overlap."""
    same = []
    for key in sorted({(r.hw, r.experiment) for r in records}):
        group = [r for r in records if (r.hw, r.experiment) == key and r.train_loss]
        if len(group) > 1:
            n = min(len(r.train_loss) for r in group)
            if all(r.train_loss[:n] == group[0].train_loss[:n] for r in group[1:]):
                same.append(f"{key[0]} · {key[1]} ({len(group)} runs, first {n} logged points)")
    return same


def convergence_section(ctx: Context) -> str:
    runs = [r for r in ctx.matrix if r.train_loss or r.eval_loss]
    df = loss_frame(runs)
    labels = ctx.labels_of(runs)
    fig = plots.loss_curves(df, "Convergence: train and eval loss per optimizer step", labels)
    same = identical_curves(runs)
    return H.join([
        (H.p("<b>Dummy weights:</b> the measured losses start near ln(vocabulary) ≈ 11.9 and are meaningless "
             "for quality; they show that the optimizer steps ran and that runs on different hardware follow "
             "the same path, not how good the model gets.") if any(r.dummy_weights for r in runs) else ""),
        H.figure(ctx, fig, "loss.png", "Train (line) and eval (markers) loss, one panel per experiment. " + labels),
        (H.note("Identical train losses in repeated runs (same data order and seed), so their curves lie on "
                "top of each other: " + H.e("; ".join(same)) + ".") if same else ""),
        H.csv(ctx, df, "loss_curves.csv"),
        H.html_table(ctx.conv, FORMATS),
        H.csv(ctx, ctx.conv, "convergence.csv"),
        H.note("Published rows: the article's final losses and accuracies lost their integer parts in the "
               "extraction (only the digits after the point survive), so they are text, not numbers."),
    ])
