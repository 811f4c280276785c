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


def latest_band(runs: Runs, names: list[str], step: int) -> dict | None:
    """The seed band at STEP, else at the latest step before it where 2+ seeds were evaluated (the spread seeds of
    the claims audit stop at their own, shorter, schedule): its `step` says which."""
    band = seed_band(runs, names, step)
    if band:
        return band
    picked = [rec for rec in (pick(runs, n) for n in names) if rec is not None]
    steps = sorted({int(s) for rec in picked for s, _ in rec.eval_loss if int(s) < step}, reverse=True)
    return next((b for b in (seed_band(runs, names, s) for s in steps) if b), None)


def loss_against(rec: RunRecord, ref: RunRecord, spread: list[str], runs: Runs) -> dict:
    """Does REC's eval loss equal REF's (the seed recipe's run on the same schedule) within the seed band's range?
    Both at REC's last eval step; the range is the SPREAD seeds' there, else at their latest eval step before it
    (latest_band; `band_step` says which). {'eval_step', 'eval_loss', 'ref_eval_loss', 'loss_dev', 'seed_range',
    'band_step', 'counts' (None without both losses and a band)}."""
    step = rec.last_eval_step
    mine, theirs = (eval_at(rec, step), eval_at(ref, step)) if step else (None, None)
    band = latest_band(runs, spread, step) if step else None
    out: dict[str, Any] = {"eval_step": step, "eval_loss": rnd(mine), "ref_eval_loss": rnd(theirs), "loss_dev": None,
                           "seed_range": rnd(band["range"]) if band else None,
                           "band_step": band["step"] if band else None, "counts": None}
    if mine is not None and theirs is not None:
        out["loss_dev"] = rnd(abs(mine - theirs))
        if band:
            out["counts"] = abs(mine - theirs) <= band["range"]
    return out
