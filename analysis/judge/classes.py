"""Which recipe on each GPU class the user named (hardware.yaml's `shown`), how long its epoch takes there, what it
costs: the one owner of that choice. The times are analysis.estimate.transfer's, the order of recipes on the measured
class analysis.judge.recommend's; this module decides and present/ only formats.

- Fit is measured: a recipe fits a class when one of its full epochs trained with a logged peak (ms-swift's
  max_memory_reserved) within the class's capacity in GiB (22.35 for a 24 GB card), uncapped or under an allocator cap
  at or below that capacity. A peak above it says nothing about a smaller card, so that recipe is "not shown to fit".
- Time: on the class the runs were made on, the recommended order and its measured first full epoch; on another
  class, each fitting recipe's full epoch carried there by the time model (transfer.runtime_on: the steady steps by
  the profile's kernels, the rest as measured on the H200's host), with its band. The recipe with the shortest
  modelled epoch is the class's; where another's band overlaps it, the answer names that too (not settled).
- Cost: GPU-hours x the price table's rate (data/prices.yaml unless the user gives one).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from analysis.estimate import planner, transfer
from analysis.estimate.prices import DEFAULT_PRICES, cost, price_currency, read_prices
from analysis.judge.recommend import HostEpochs, Recommendation, recommend
from analysis.measure import jobtime
from analysis.parse.record import RunRecord
from experiments.base import hardware
from experiments.base.errors import InputError


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

    @property
    def gpu_hours(self) -> float | None:
        return self.choice.epoch_s / 3600 if self.choice and self.choice.epoch_s is not None else None

    @property
    def cost(self) -> float | None:
        return cost(self.gpu_hours, self.price_per_gpu_hour)

    @property
    def cost_range(self) -> tuple[float, float] | None:
        c = self.choice
        if not c or c.low_s is None or c.high_s is None or self.price_per_gpu_hour is None:
            return None
        return c.low_s / 3600 * self.price_per_gpu_hour, c.high_s / 3600 * self.price_per_gpu_hour


def _fit(rows: list[HostEpochs], capacity: float) -> tuple[bool, float | None, str]:
    """Is a recipe shown to fit CAPACITY GiB by one of its full epochs (ROWS)? (fits, the peak, how it was shown)."""
    capped = [r for r in rows if r.cap_gib is not None and r.cap_gib <= capacity + 1e-9 and r.peak_gib is not None]
    if capped:
        r = min(capped, key=lambda r: r.peak_gib or 0)
        return True, r.peak_gib, f"trained under a {r.cap_gib:g} GiB allocator cap (peak {r.peak_gib:.2f} GiB)"
    peaks = [r.peak_gib for r in rows if r.peak_gib is not None]
    if not peaks:
        return False, None, "no logged peak"
    peak = min(peaks)
    if peak <= capacity:
        return True, peak, f"peak {peak:.2f} GiB of {capacity:.2f}"
    return False, peak, f"not shown to fit: peak {peak:.2f} GiB > {capacity:.2f}"


def _transfer_run(rows: list[HostEpochs], records: dict[str, RunRecord], deciding_host: str | None) -> RunRecord | None:
    """The full epoch of a recipe whose profile is carried to other classes: its first on the deciding host, else
    its newest with a kernel-level profile; where none of its timed runs was profiled (harness 2 profiles only runs
    that ask), the newest profiled full epoch of the recipe on the same class."""
    ordered = sorted(rows, key=lambda r: (r.host != deciding_host, r.run), reverse=False)
    for r in ordered:
        rec = records.get(r.path)
        if rec is not None and transfer.transferable(rec):
            return rec
    if not rows:
        return None
    same = [r for r in records.values() if r.experiment == rows[0].experiment and r.hw == rows[0].hw
            and jobtime.job_time(r).full_epoch and transfer.transferable(r)]
    return max(same, key=lambda r: r.run, default=None)


def _runs_text(row: HostEpochs) -> str:
    n = len(row.epochs) or 1
    return "one full epoch" if n == 1 else f"median of {n} full epochs"


def _option(exp: str, rows: list[HostEpochs], hw: str, capacity: float, rec: Recommendation,
            records: dict[str, RunRecord]) -> Option:
    fits, peak, fit_basis = _fit(rows, capacity)
    if not fits:
        return Option(exp, False, peak, fit_basis, None, None, None, False, fit_basis, None)
    deciding = next((r for r in rows if rec.deciding is not None and r.host == rec.deciding.host), None)
    if hw == rec.hw:
        row = deciding or min(rows, key=lambda r: r.epoch_s)
        return Option(exp, True, peak, fit_basis, row.epoch_s, row.epoch_s, row.epoch_s, True,
                      f"measured: {_runs_text(row)} on host {row.host[:8]}", row.run)
    run = _transfer_run(rows, records, rec.deciding.host if rec.deciding else None)
    if run is None:
        return Option(exp, True, peak, fit_basis, None, None, None, False, "no kernel-level profile to carry over",
                      None)
    try:
        p = transfer.runtime_on(run, hw)
    except InputError as exc:
        return Option(exp, True, peak, fit_basis, None, None, None, False, f"not modelled: {exc}", run.run)
    return Option(exp, True, peak, fit_basis, p.runtime_s, p.low_s, p.high_s, p.measured, p.basis, run.run)


def class_answers(rec: Recommendation, records: list[RunRecord], classes: list[str] | None = None,
                  prices: str | Path | None = DEFAULT_PRICES) -> list[ClassAnswer]:
    """One ClassAnswer per class of CLASSES (default hardware.shown()) for the candidates REC rests on."""
    by_path = {str(r.path): r for r in records}
    names = sorted({r.experiment for r in rec.rows if r.in_band or r.experiment == rec.experiment})
    table = read_prices(prices) if prices else {}
    currency = price_currency(prices) if prices else None
    out = []
    for hw in classes or hardware.shown():
        spec = hardware.require(hw)
        capacity = planner.capacity_gib(spec)
        options = [_option(n, rec.of(n), hw, capacity, rec, by_path) for n in names]
        timed = [o for o in options if o.fits and o.epoch_s is not None]
        if hw == rec.hw and rec.experiment:
            choice = next((o for o in timed if o.experiment == rec.experiment), None)
        else:
            choice = min(timed, key=lambda o: o.epoch_s or 0.0, default=None)
        close = tuple(o.experiment for o in timed if choice and o is not choice and o.low_s is not None
                      and choice.high_s is not None and hw != rec.hw and o.low_s <= choice.high_s)
        out.append(ClassAnswer(hw=hw, name=spec["name"], capacity_gib=capacity, choice=choice,
                               options=tuple(options), close=close, price_per_gpu_hour=table.get(hw),
                               currency=currency))
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
    """The whole answer: the recommended recipe (analysis.judge.recommend) and each GPU class's (class_answers)."""

    recommendation: Recommendation
    classes: tuple[ClassAnswer, ...]


def answer(records: list[RunRecord], prices: str | Path | None = DEFAULT_PRICES,
           classes: list[str] | None = None) -> Answer:
    """The recommendation over RECORDS and, where there is one, every shown class's recipe at the price table."""
    rec = recommend(records)
    return Answer(rec, tuple(class_answers(rec, records, classes, prices)) if rec.experiment else ())
