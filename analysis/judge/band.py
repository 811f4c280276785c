"""What both of the judge's jobs read (the claims audit, analysis.judge.audit, and the answer, analysis.judge.answer):
the seed band, the runs it is made of, and the rounding and quote marks of the numbers it gives.

Why shared: the audit's recipe rules and tables ask whether a run's eval loss counts (loss_check, seed_band), and the
answer's candidates are the recipes whose eval loss equals the seed recipe's within the same band (loss_against): one
band, one rule. The band is made of the spread seeds' runs, chosen as the audit chooses every claims run (Runs,
runs_by_experiment: made from their experiment's current definition, runs cut short by a time limit aside; pick: the
newest that trained), and its seeds are the ones claims.yaml's `figures.recipes.spread` names (seed_spread: the
audit's data file, read here as data, so the answer never imports the audit). Its numbers are rounded and marked for a
verdict's quote as every verdict's are (rnd; FLAG, OMIT, when), so those live here too. This module imports neither
job's package.

The band at a step is the mean and the range (max - min) of the seeds' eval losses there (measure.loss.eval_at); a
run counts when |its eval loss - the seeds' mean| <= the range, both at the run's last eval step.
"""
from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from analysis.measure.loss import eval_at
from analysis.parse.record import RunRecord
from analysis.parse.results import collect
from experiments.base.datafiles import read_yaml
from experiments.base.errors import InputError
from experiments.base.runfolder import RunKey
from experiments.recipes import catalog

CLAIMS_FILE = Path(__file__).resolve().parent / "audit" / "claims.yaml"  # the audit's data (audit.config checks it)


@functools.lru_cache(maxsize=None)
def seed_spread(path: str | Path = CLAIMS_FILE) -> tuple[str, ...]:
    """The claims experiments whose spread is the seed band of the recipes (claims.yaml `figures.recipes.spread`;
    analysis.judge.audit.config checks the whole file)."""
    data = read_yaml(Path(path), "claims")
    spread = ((data.get("figures") or {}).get("recipes") or {}).get("spread") if isinstance(data, dict) else None
    if not isinstance(spread, list) or not all(isinstance(n, str) for n in spread):
        raise InputError(Path(path), "figures.recipes.spread: must be a list of names")
    return tuple(spread)


def rnd(x: float | None, nd: int = 4) -> float | None:
    """X rounded to ND digits for a table; None stays None, and so does a value that is not finite."""
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else round(x, nd)


FLAG = {"flag": True}  # a quote's field that says which others apply: not a number itself
OMIT = {"omit": True}  # a quote's field a verdict does not quote


def when(*flags: str) -> Mapping[str, tuple[str, ...]]:
    """A quote's field quoted only where every one of FLAGS is set (a field's metadata: a read-only Mapping to
    dataclasses)."""
    return {"when": flags}



# set by the runner for the machine, not by an experiment's definition
MACHINE_OVERRIDES = ("torch_dtype", "check_model")


@dataclass
class Runs:
    """The claims runs of one results tree for one hardware class, by experiment (newest first)."""

    by_name: dict[str, list[RunRecord]] = field(default_factory=dict)
    cut_short: dict[str, list[RunRecord]] = field(default_factory=dict)   # stopped by a time limit
    records: list[RunRecord] = field(default_factory=list)               # every record of the tree
    hw: str | None = None
    results_dir: Path | None = None                                       # the tree (benchmark folders beside runs)

    def get(self, name: str) -> list[RunRecord]:
        return self.by_name.get(name, [])

    def __contains__(self, name: str) -> bool:
        return name in self.by_name


def records_of(results_dir: str | Path | None, records: list[RunRecord] | None = None) -> list[RunRecord]:
    """The records of RESULTS_DIR (analysis.parse.results.collect), or RECORDS when the caller collected them:
    the claims table and its frames parse every run once."""
    if records is not None:
        return records
    if results_dir is None or not Path(results_dir).is_dir():
        return []
    return collect(results_dir)


def defined_as(rec: RunRecord, name: str) -> bool:
    """Was REC made from the current definition of claims experiment NAME (overrides, launcher, steps)?"""
    e = catalog.experiment(name)
    if e is None or not rec.key:
        return False
    overrides, launcher, env = catalog.recipe_of_key(rec.key)
    if e.get("combine"):  # resolved at run time: its overrides and launcher are whatever the combination was
        return all(launcher.get(k) == v for k, v in (e.get("launcher") or {}).items())
    got = {k: v for k, v in overrides.items() if k not in MACHINE_OVERRIDES}
    want_env = {k: str(v) for k, v in (e.get("env") or {}).items()}
    return (got == dict(e.get("overrides") or {}) and RunKey.LAUNCHER in rec.key and launcher == e.get("launcher")
            and env == want_env)


def runs_by_experiment(results_dir: str | Path | None, hw: str | None = None,
                       records: list[RunRecord] | None = None) -> Runs:
    """The claims runs under RESULTS_DIR (for HW, else every class) that match their experiment's current
    definition, newest first; runs cut short by a time limit aside."""
    recs = records_of(results_dir, records)
    names = set(catalog.load()["experiments"])
    out = Runs(records=recs, hw=hw, results_dir=Path(results_dir) if results_dir is not None else None)
    for rec in recs:
        if rec.experiment is None or rec.experiment not in names or (hw and rec.hw != hw):
            continue
        if not defined_as(rec, rec.experiment):
            continue
        (out.cut_short if rec.cut_short else out.by_name).setdefault(rec.experiment, []).append(rec)
    for runs in out.by_name.values():
        runs.sort(key=lambda r: r.run or "", reverse=True)
    return out


def pick(runs: Runs, name: str, allow_oom: bool = False) -> RunRecord | None:
    """NAME's newest run that trained (or, with ALLOW_OOM, ran out of memory), else None."""
    for rec in runs.get(name):
        if rec.ok or (allow_oom and rec.is_oom):
            return rec
    return None



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
