"""Loss figures of a run: the final losses, the loss at an eval step, and how fast the training loss dropped."""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from analysis.parse.record import RunRecord


def final_train_loss(rec: RunRecord) -> float | None:
    """Mean of the last three finite logged training losses (one line's noise smoothed)."""
    finite = [v for _, v in rec.train_loss if math.isfinite(v)]
    return statistics.fmean(finite[-3:]) if finite else None


def final_eval_loss(rec: RunRecord) -> float | None:
    return rec.eval_loss[-1][1] if rec.eval_loss else None


def final_eval_token_acc(rec: RunRecord) -> float | None:
    return rec.eval_token_acc[-1][1] if rec.eval_token_acc else None


def eval_at(rec: RunRecord, step: int) -> float | None:
    for s, v in rec.eval_loss:
        if int(s) == int(step):
            return v
    return None


def wall_time_to_last_eval(rec: RunRecord) -> float | None:
    """Seconds from the start of training to the end of the last eval."""
    return rec.eval_elapsed.get(rec.eval_loss[-1][0]) if rec.eval_loss else None


@dataclass(frozen=True)
class LossDrop:
    """How fast the training loss dropped: per 100 steps, and the first logged steps at 50 % and 90 % of the total
    drop (None where the curve does not say)."""

    loss_drop_per_100_steps: float | None = None
    steps_to_50pct_drop: int | None = None
    steps_to_90pct_drop: int | None = None


def loss_drop_stats(rec: RunRecord) -> LossDrop:
    """Loss drop per 100 steps and the first logged steps at which 50 % / 90 % of the total drop is reached.

    total drop D = first logged loss - final loss (final_train_loss); rate = D / (last step - first step) x 100.
    """
    curve, final = rec.train_loss, final_train_loss(rec)
    if len(curve) < 2 or final is None:
        return LossDrop()
    (s0, l0), (s_last, _) = curve[0], curve[-1]
    drop = l0 - final

    def reached(frac: float) -> int | None:
        return next((s for s, v in curve if v <= l0 - frac * drop), None) if drop > 0 else None

    return LossDrop(drop / (s_last - s0) * 100 if s_last > s0 else None, reached(0.5), reached(0.9))
