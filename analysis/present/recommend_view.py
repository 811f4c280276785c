"""The recommendation in words: one sentence for the first screen (the report's answer, `swiftbench tables`), from
analysis.judge.recommend's pick and analysis.estimate.recipe_gpus' rows. Formatting only."""
from __future__ import annotations

from analysis.judge.published import SEED_EXPERIMENT, short


def seconds_text(s: float | None) -> str:
    """A duration for a sentence: seconds under 2 minutes, else minutes, else hours."""
    if s is None:
        return "–"
    if s < 120:
        return f"{s:.1f} s"
    return f"{s / 60:.1f} min" if s < 5400 else f"{s / 3600:.1f} h"


def money(value: float | None, currency: str | None) -> str:
    if value is None:
        return "–"
    return f"{value:.2f} {currency}" if currency else f"{value:.2f}"


def _basis(row: dict) -> str:
    return "measured" if row["source"].startswith("measured") else "the planner's prediction"


def gpu_clause(rows: list[dict]) -> str:
    """Then the GPU: which classes the recipe fits, the soonest and the cheapest epoch among them."""
    fits = [r for r in rows if r["fits"]]
    timed = [r for r in fits if r["epoch_s"] is not None]
    if not rows:
        return ""
    if not fits:
        return "; it fits none of the GPU classes shown"
    text = f"; then the GPU: it fits {len(fits)} of the {len(rows)} classes shown"
    if not timed:
        return text + ", none with a measured or modelled epoch time"
    soonest = min(timed, key=lambda r: r["epoch_s"])
    untimed = len(fits) - len(timed)
    rest = f"; the other {untimed}: time not modelled for this recipe" if untimed else ""
    if len(timed) == 1:
        return text + (f", with an epoch time only on the {short(soonest['hw'])} ({seconds_text(soonest['epoch_s'])}, "
                       f"{_basis(soonest)}{rest})")
    text += (f", {short(soonest['hw'])} finishing soonest ({seconds_text(soonest['epoch_s'])}, {_basis(soonest)}"
             f"{rest})")
    priced = [r for r in timed if r["cost"] is not None]
    if priced:
        cheap = min(priced, key=lambda r: r["cost"])
        text += (f" and {short(cheap['hw'])} the cheapest "
                 f"({money(cheap['cost'], cheap['currency'])} at the price table's rate)")
    return text


def sentence(pick: dict, rows: list[dict] | None = None) -> str:
    """The recommendation in one sentence (no number that the pick or the rows do not hold)."""
    if not pick.get("same_host_pair"):
        return f"No recommended recipe yet: {pick['note']}."
    gpu = short(pick["hw"]) if pick.get("hw") else "this GPU"
    if pick["experiment"] == SEED_EXPERIMENT or not pick.get("x_seed"):
        head = f"For this job, the published recipe ({pick['experiment']}) is the fastest measured"
    else:
        head = (f"For this job ({pick['steps']} optimizer steps), change the settings before the GPU: recipe "
                f"{pick['experiment']} finishes the epoch in {seconds_text(pick['train_runtime_s'])} on the {gpu} "
                f"against {seconds_text(pick['seed_train_runtime_s'])} for the published seed recipe on the same host "
                f"({pick['x_seed']:.1f}x sooner)")
    loss = (f", at equal eval loss ({pick['eval_loss']:.4f} vs {pick['seed_eval_loss']:.4f} at step "
            f"{pick['eval_step']}, within the seeds' range {pick['seed_range']:.4f} at step {pick['band_step']})")
    return head + loss + gpu_clause(rows or []) + "."
