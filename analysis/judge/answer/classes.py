"""Which recipe on each GPU class the user named (hardware.yaml's `shown`), how long its epoch takes there, what it
costs: the one owner of that choice. The times are analysis.estimate.epoch's, the order of recipes on the measured
class analysis.judge.answer.recommend's; this module decides and present/ only formats.

- Fit is measured: a recipe fits a class when one of its full epochs trained with a logged peak (ms-swift's
  max_memory_reserved) within the class's capacity in GiB (22.35 for a 24 GB card), uncapped or under an allocator cap
  at or below that capacity. A peak above it says nothing about a smaller card, so that recipe is "not shown to fit".
- Time: analysis.estimate.epoch's (the one estimator `plan` asks too): measured on a class holding full epochs of
  the recipe (the median over every host, the band their range), else its profiled full epoch carried there by the
  time model, with the model's band. On the class the runs were made on, the recommended recipe is the class's; on
  another, the recipe with the shortest modelled epoch, and where another's band overlaps it the answer names that
  too (not settled).
- Cost: the job's GPU-hours (start-up + epoch) x the price table's rate (data/prices.yaml unless the user gives one).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from analysis.estimate import epoch, planner
from analysis.estimate.prices import DEFAULT_PRICES, cost, price_currency, read_prices
from analysis.judge.answer.recommend import Recommendation, recommend
from analysis.parse.record import RunRecord
from analysis.parse.results import is_matrix
from experiments.base import hardware
from experiments.recipes import recipes


@dataclass(frozen=True)
class Option:
    """One recipe on one class: whether it is shown to fit, and its epoch there."""

    experiment: str
    fits: bool
    peak_gib: float | None
    fit_basis: str
    epoch_s: float | None
    low_s: float | None
    high_s: float | None
    measured: bool
    basis: str
    run: str | None
    estimate: epoch.EpochEstimate | None = None  # the estimator's figure (start-up and job time with it)

    @property
    def startup_s(self) -> float | None:
        return self.estimate.startup_s if self.estimate else None

    @property
    def job_s(self) -> float | None:
        return self.estimate.job_s if self.estimate else self.epoch_s


@dataclass(frozen=True)
class ClassAnswer:
    """A GPU class's recipe (None: no matrix recipe is shown to fit), its epoch, GPU-hours and cost."""

    hw: str
    name: str
    capacity_gib: float
    choice: Option | None
    options: tuple[Option, ...]
    close: tuple[str, ...]
    price_per_gpu_hour: float | None
    currency: str | None
    command: str | None = None  # the class's recipe as a command to paste (recipes.copyable), ms-swift's spelling

    @property
    def gpu_hours(self) -> float | None:
        """The job's GPU-hours (start-up + epoch: what a user pays for)."""
        return self.choice.job_s / 3600 if self.choice and self.choice.job_s is not None else None

    @property
    def cost(self) -> float | None:
        return cost(self.gpu_hours, self.price_per_gpu_hour)

    @property
    def cost_range(self) -> tuple[float, float] | None:
        c = self.choice
        if not c or c.low_s is None or c.high_s is None or self.price_per_gpu_hour is None:
            return None
        start = c.startup_s or 0.0
        return (c.low_s + start) / 3600 * self.price_per_gpu_hour, (c.high_s + start) / 3600 * self.price_per_gpu_hour


def _option(exp: str, hw: str, capacity: float, runs: list[RunRecord]) -> Option:
    """EXP on class HW: fit and time from analysis.estimate.epoch over RUNS (its runs), the one estimator `plan`
    asks too."""
    f = epoch.measured_fit(runs, capacity)
    fits, peak, fit_basis = bool(f.fits), f.peak_gib, f.basis
    if not fits:
        return Option(exp, False, peak, fit_basis, None, None, None, False, fit_basis, None)
    est, why = epoch.try_epoch_on(runs, hw)
    if est is None:
        return Option(exp, True, peak, fit_basis, None, None, None, False, why or "not modelled", None)
    return Option(exp, True, peak, fit_basis, est.epoch_s, est.low_s, est.high_s, est.measured, est.basis, est.run,
                  est)


def class_answers(rec: Recommendation, records: list[RunRecord], classes: list[str] | None = None,
                  prices: str | Path | None = DEFAULT_PRICES) -> list[ClassAnswer]:
    """One ClassAnswer per class of CLASSES (default hardware.shown()) for the candidates REC rests on."""
    matrix = [r for r in records if is_matrix(r)]
    names = sorted({r.experiment for r in rec.rows if r.in_band or r.experiment == rec.experiment})
    table = read_prices(prices) if prices else {}
    currency = price_currency(prices) if prices else None
    out = []
    for hw in classes or hardware.shown():
        spec = hardware.require(hw)
        capacity = planner.capacity_gib(spec)
        options = [_option(n, hw, capacity, [r for r in matrix if r.experiment == n]) for n in names]
        timed = [o for o in options if o.fits and o.epoch_s is not None]
        if hw == rec.hw and rec.experiment:
            choice = next((o for o in timed if o.experiment == rec.experiment), None)
        else:
            choice = min(timed, key=lambda o: o.epoch_s or 0.0, default=None)
        close = tuple(o.experiment for o in timed if choice and o is not choice and o.low_s is not None
                      and choice.high_s is not None and hw != rec.hw and o.low_s <= choice.high_s)
        command = recipes.copyable(choice.experiment, rec.swift_version) \
            if choice is not None and rec.swift_version else None
        out.append(ClassAnswer(hw=hw, name=spec.name, capacity_gib=capacity, choice=choice,
                               options=tuple(options), close=close, price_per_gpu_hour=table.get(hw),
                               currency=currency, command=command))
    return out


@dataclass(frozen=True)
class Comparison:
    """Across the classes: which finishes the job soonest, which costs least, and which classes' modelled times are
    within reach of the soonest (their band reaches its upper end: the order between them is not settled)."""

    timed: tuple[ClassAnswer, ...]
    untimed: tuple[ClassAnswer, ...]
    soonest: ClassAnswer | None
    cheapest: ClassAnswer | None
    within_reach: tuple[ClassAnswer, ...]


def compare_classes(classes: list[ClassAnswer] | tuple[ClassAnswer, ...]) -> Comparison:
    timed = tuple(c for c in classes if c.choice is not None and c.choice.epoch_s is not None)
    untimed = tuple(c for c in classes if c not in timed)

    def epoch(c: ClassAnswer) -> float:
        return c.choice.epoch_s if c.choice is not None and c.choice.epoch_s is not None else float("inf")

    soon = min(timed, key=epoch, default=None)
    top = soon.choice.high_s if soon is not None and soon.choice is not None else None
    reach = tuple(c for c in timed if c is not soon and c.choice is not None and c.choice.low_s is not None
                  and top is not None and c.choice.low_s <= top)
    priced = [c for c in timed if c.cost is not None]
    cheap = min(priced, key=lambda c: c.cost if c.cost is not None else float("inf"), default=None)
    return Comparison(timed, untimed, soon, cheap, reach)


@dataclass(frozen=True)
class Answer:
    """The whole answer: the recommended recipe (analysis.judge.answer.recommend) and each GPU class's
    (class_answers)."""

    recommendation: Recommendation
    classes: tuple[ClassAnswer, ...]


def answer(records: list[RunRecord], prices: str | Path | None = DEFAULT_PRICES,
           classes: list[str] | None = None) -> Answer:
    """The recommendation over RECORDS and, where there is one, every shown class's recipe at the price table."""
    rec = recommend(records)
    return Answer(rec, tuple(class_answers(rec, records, classes, prices)) if rec.experiment else ())
