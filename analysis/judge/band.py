"""The seed band: does a run's eval loss count, i.e. stay within the seed-to-seed spread of the same recipe?

The band at a step is the mean and the range (max - min) of the seeds' eval losses there (measure.loss.eval_at); a
run counts when |its eval loss - the seeds' mean| <= the range, both at the run's last eval step.
"""
from __future__ import annotations

import statistics
from typing import Any

from analysis.judge.result import rnd
from analysis.judge.select import Runs, pick
from analysis.measure.loss import eval_at
from analysis.parse.record import RunRecord


def seed_band(runs: Runs, names: list[str], step: int) -> dict | None:
    """Mean and range (max - min) of the seeds' eval loss at STEP; None with fewer than 2 seeds there."""
    recs = [pick(runs, n) for n in names]
    losses = [v for v in (eval_at(r, step) for r in recs if r) if v is not None]
    if len(losses) < 2:
        return None
    return {"mean": statistics.fmean(losses), "range": max(losses) - min(losses), "n": len(losses), "step": step}


def loss_check(rec: RunRecord, spread: list[str], runs: Runs) -> dict:
    """Does REC's eval loss at its last eval step stay within the band of the SPREAD seeds at that step?
    {'eval_step', 'eval_loss', 'counts' (None without a band)} and, with a band, the deviation, range, mean, n."""
    step = rec.last_eval_step
    band = seed_band(runs, spread, step) if step else None
    out: dict[str, Any] = {"eval_step": step, "eval_loss": rnd(eval_at(rec, step)) if step else None, "counts": None}
    if band and step and out["eval_loss"] is not None:  # a band only at a step
        dev = abs(eval_at(rec, step) - band["mean"])
        out.update(counts=dev <= band["range"], loss_dev_from_seed_mean=rnd(dev), seed_range=rnd(band["range"]),
                   seed_mean=rnd(band["mean"]), seeds_at_step=band["n"])
    return out
