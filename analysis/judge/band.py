"""The seed band: does a run's eval loss count, i.e. stay within the seed-to-seed spread of the same recipe?

The band at a step is the mean and the range (max - min) of the seeds' eval losses there (measure.loss.eval_at); a
run counts when |its eval loss - the seeds' mean| <= the range, both at the run's last eval step.
"""
from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from analysis.judge.result import FLAG, OMIT, rnd, when
from analysis.judge.select import Runs, pick
from analysis.measure.loss import eval_at
from analysis.parse.record import RunRecord


@dataclass(frozen=True)
class Band:
    """The seeds' eval losses at STEP: their mean, range (max - min) and count."""

    mean: float
    range: float
    n: int
    step: int


def seed_band(runs: Runs, names: Sequence[str], step: int) -> Band | None:
    """Mean and range (max - min) of the seeds' eval loss at STEP; None with fewer than 2 seeds there."""
    recs = [pick(runs, n) for n in names]
    losses = [v for v in (eval_at(r, step) for r in recs if r) if v is not None]
    if len(losses) < 2:
        return None
    return Band(statistics.fmean(losses), max(losses) - min(losses), len(losses), step)


@dataclass(frozen=True)
class LossCheck:
    """A run's eval loss at its last eval step against the seed band there: counts (None without a band) and, with
    one, its deviation from the seeds' mean, their range, mean and count (rounded for a verdict)."""

    eval_step: int | None
    eval_loss: float | None
    counts: bool | None = field(default=None, metadata=OMIT)
    banded: bool = field(default=False, metadata=FLAG)
    loss_dev_from_seed_mean: float | None = field(default=None, metadata=when("banded"))
    seed_range: float | None = field(default=None, metadata=when("banded"))
    seed_mean: float | None = field(default=None, metadata=when("banded"))
    seeds_at_step: int | None = field(default=None, metadata=when("banded"))


def loss_check(rec: RunRecord, spread: Sequence[str], runs: Runs) -> LossCheck:
    """Does REC's eval loss at its last eval step stay within the band of the SPREAD seeds at that step?"""
    step = rec.last_eval_step
    band = seed_band(runs, spread, step) if step else None
    loss = rnd(eval_at(rec, step)) if step else None
    mine = eval_at(rec, step) if step else None
    if band and step and loss is not None and mine is not None:  # a band only at a step
        dev = abs(mine - band.mean)
        return LossCheck(step, loss, dev <= band.range, True, rnd(dev), rnd(band.range), rnd(band.mean), band.n)
    return LossCheck(step, loss)


def latest_band(runs: Runs, names: Sequence[str], step: int) -> Band | None:
    """The seed band at STEP, else at the latest step before it where 2+ seeds were evaluated (the spread seeds of
    the claims audit stop at their own, shorter, schedule): its `step` says which."""
    band = seed_band(runs, names, step)
    if band:
        return band
    picked = [rec for rec in (pick(runs, n) for n in names) if rec is not None]
    steps = sorted({int(s) for rec in picked for s, _ in rec.eval_loss if int(s) < step}, reverse=True)
    return next((b for b in (seed_band(runs, names, s) for s in steps) if b), None)


@dataclass(frozen=True)
class LossAgainst:
    """A run's eval loss against a reference run's at the run's last eval step, within the seed band's range
    (rounded): the deviation, the range and the step of the band it used, and whether it counts (None without both
    losses and a band)."""

    eval_step: int | None
    eval_loss: float | None
    ref_eval_loss: float | None
    loss_dev: float | None
    seed_range: float | None
    band_step: int | None
    counts: bool | None


def loss_against(rec: RunRecord, ref: RunRecord, spread: Sequence[str], runs: Runs) -> LossAgainst:
    """Does REC's eval loss equal REF's (the seed recipe's run on the same schedule) within the seed band's range?
    Both at REC's last eval step; the range is the SPREAD seeds' there, else at their latest eval step before it
    (latest_band; `band_step` says which)."""
    step = rec.last_eval_step
    mine, theirs = (eval_at(rec, step), eval_at(ref, step)) if step else (None, None)
    band = latest_band(runs, spread, step) if step else None
    dev = counts = None
    if mine is not None and theirs is not None:
        dev = rnd(abs(mine - theirs))
        if band:
            counts = abs(mine - theirs) <= band.range
    return LossAgainst(step, rnd(mine), rnd(theirs), dev, rnd(band.range) if band else None,
                       band.step if band else None, counts)
