"""Convergence section: train and eval loss curves of every matrix run and the convergence table."""
from __future__ import annotations

import pandas as pd

from analysis.judge.answer.run_tables import ConvergenceRow
from analysis.measure import run_views
from analysis.present import plots, view_render
from analysis.present.report import html as H
from analysis.present.report.context import Context


def loss_frame(records) -> pd.DataFrame:
    """Every logged train and eval loss (analysis.measure.run_views.loss_points)."""
    return view_render.to_frame(run_views.loss_points(records), run_views.LossPoint)


COINCIDE_LOSS = 0.02  # train losses this close at every common logged step draw as one line in the loss figure


def _same_curve(a, b) -> bool:
    common = dict(a).keys() & dict(b).keys()
    da, db = dict(a), dict(b)
    return bool(common) and all(abs(da[s] - db[s]) <= COINCIDE_LOSS for s in common)


def coincides(records) -> dict[str, str]:
    """name -> the first run of its hw and experiment whose logged train losses it repeats (within COINCIDE_LOSS at
    every step both logged): the figure draws such runs apart and its legend says they coincide."""
    out = {}
    for key in sorted({(r.hw, r.experiment) for r in records}):
        group = [r for r in records if (r.hw, r.experiment) == key and r.train_loss]
        for i, r in enumerate(group):
            first = next((f for f in group[:i] if f.name not in out and _same_curve(f.train_loss, r.train_loss)), None)
            if first is not None:
                out[r.name] = first.name
    return out


def convergence_section(ctx: Context) -> str:
    runs = [r for r in ctx.matrix if r.train_loss or r.eval_loss]
    df = loss_frame(runs)
    labels = ctx.labels_of(runs)
    fig = plots.loss_curves(df, "Convergence: train and eval loss per optimizer step", labels,
                            same_as=coincides(runs), cut={r.name for r in runs if r.is_cut_run})
    same_as = coincides(runs)
    same = [f"{a} with {b}" for a, b in same_as.items()]
    return H.join([
        (H.p("<b>Dummy weights:</b> the measured losses start near ln(vocabulary) ≈ 11.9 and are meaningless "
             "for quality; they show that the optimizer steps ran and that runs on different hardware follow "
             "the same path, not how good the model gets.") if any(r.dummy_weights for r in runs) else ""),
        H.figure(ctx, fig, "loss.png", "Train (line) and eval (markers only) loss, one panel per experiment; a later "
                 "run that repeats an earlier one's losses is drawn thinner and dashed over it (the legend says which "
                 "it coincides with); a bar marks where a cut run stops. " + labels),
        (H.note(f"Repeated runs whose train losses agree within {COINCIDE_LOSS} at every logged step (same data order "
                "and seed), so their curves lie on top of each other: " + H.e("; ".join(same)) + ".") if same else ""),
        H.csv(ctx, df, "loss_curves.csv"),
        H.fold(f"the convergence table ({len(ctx.conv)} rows: final losses, accuracy, steps to 50 / 90 % of the drop)",
               H.html_table(ctx.conv, view_render.formats(ConvergenceRow))),
        H.csv(ctx, ctx.conv, "convergence.csv"),
        H.note("Published rows: the article's final losses and accuracies lost their integer parts in the "
               "extraction (only the digits after the point survive), so they are text, not numbers."),
    ])
