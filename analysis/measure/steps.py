"""Step time: the log's intervals between training lines, which of them are steady, and their summary.

An interval is left out of the steady state when it is the first, starts in the warm-up (the first 10 % of the full
epoch's optimizer steps, at most 10 steps: the same absolute steps for a full run and for any run cut from it, so runs
of one schedule are judged over the same steps; 9.4 for the recipe's 94-step epoch), holds an eval or a checkpoint
save, holds a step the profiler watched (profiling slows it), or takes over 10x the median step time (a broken
line's speed). Every step time, tokens/s and energy figure of the suite is taken over these steady intervals.
"""
from __future__ import annotations

import bisect
import math
import statistics
from dataclasses import dataclass
from typing import NamedTuple, TypedDict
from weakref import WeakKeyDictionary

from analysis.measure import stats
from analysis.parse.logs import gc_paused
from analysis.parse.record import RunRecord

WARMUP_FRACTION = 0.10  # intervals that start before this share of the full epoch's steps are warm-up ...
WARMUP_MAX_STEPS = 10   # ... or before this step, whichever comes first (a long epoch's warm-up takes as long)
CI_LEVEL = 0.95
OUTLIER_FACTOR = 10.0   # a steady interval this many times the median step time is a broken log line, not a step


class IntervalRow(TypedDict):
    """An Interval as `swiftbench parse --json` prints it (run_summary's step_intervals)."""

    from_step: int
    to_step: int
    seconds: float
    step_time_s: float
    excluded: str | None


class Interval(NamedTuple):
    """One interval between successive training lines (a tuple: a 200 MB log has ~750,000 of them)."""

    from_step: int
    to_step: int
    seconds: float
    excluded: str | None  # why it is not steady; None when it is

    @property
    def steps(self) -> int:
        return self.to_step - self.from_step

    @property
    def step_time_s(self) -> float:
        return self.seconds / self.steps

    def as_row(self) -> IntervalRow:
        return {"from_step": self.from_step, "to_step": self.to_step, "seconds": self.seconds,
                "step_time_s": self.step_time_s, "excluded": self.excluded}


def epoch_steps(rec: RunRecord) -> int | None:
    """Optimizer steps of the full epoch the run's schedule comes from: ceil(training samples x epochs / samples per
    step) where the log's summary gives the training set's size, else the log's max_steps (a run killed before its
    summary line; a --max_steps cut run that was killed counts from its own, shorter, schedule)."""
    epochs = (rec.args or {}).get("num_train_epochs") or 1
    if rec.train_samples and rec.samples_per_step and isinstance(epochs, (int, float)) and epochs > 0:
        return math.ceil(rec.train_samples * epochs / rec.samples_per_step)
    return rec.max_steps


@dataclass
class _Measured:
    """What this module measured of one record, each filled the first time it is asked for."""

    intervals: list[Interval] | None = None
    steady: list[Interval] | None = None
    step_time: StepTime | None = None


_MEMO: WeakKeyDictionary[RunRecord, _Measured] = WeakKeyDictionary()


def _memo(rec: RunRecord) -> _Measured:
    """What this module measured of REC, computed once per record (a record is frozen, so nothing its intervals are
    computed from changes; a long log makes each pass cost, and the step time is asked for several times per run)."""
    memo = _MEMO.get(rec)
    if memo is None:
        memo = _MEMO[rec] = _Measured()
    return memo


def intervals(rec: RunRecord) -> list[Interval]:
    """Every interval between successive training lines, with why it is kept out of the steady state."""
    memo = _memo(rec)
    if memo.intervals is None:
        with gc_paused():
            memo.intervals = _intervals(rec)
    return list(memo.intervals)


def _intervals(rec: RunRecord) -> list[Interval]:
    points = rec.elapsed
    if len(points) < 2:
        return []
    warmup = min(WARMUP_FRACTION * (epoch_steps(rec) or points[-1][0]), WARMUP_MAX_STEPS)
    profiled = sorted(rec.profiled_steps)
    events = sorted(rec.event_steps)
    out: list[Interval] = []
    append = out.append
    ei = pi = 0  # the steps rise from line to line: the first event >= a and profiled step > a move forward only
    ne, npr = len(events), len(profiled)
    last_a = None
    for i, ((a, ta), (b, tb)) in enumerate(zip(points, points[1:])):
        if b <= a:
            continue
        if last_a is not None and a < last_a:  # steps out of order (a record built by hand): search from scratch
            ei = pi = 0
        last_a = a
        while ei < ne and events[ei] < a:
            ei += 1
        while pi < npr and profiled[pi] <= a:
            pi += 1
        reason = None
        if i == 0:
            reason = "first interval"
        elif a < warmup:
            reason = "warm-up"
        elif ei < ne and events[ei] < b:  # an event at e with a <= e < b
            reason = "eval/save"
        elif pi < npr and profiled[pi] <= b:  # a profiled step p with a < p <= b
            reason = "profiled"
        append(Interval(a, b, tb - ta, reason))
    return _outliers(out)


def _outliers(out: list[Interval]) -> list[Interval]:
    """Steady intervals whose step time is over OUTLIER_FACTOR x the steady median are no steady state: one line's
    cumulative s/it x10 (the last line's, which no later line contradicts) would make tokens/s a twentieth of the
    run's while the median stays right. Needs three steady intervals (the median of two is their mean)."""
    times = [iv.seconds / iv.steps for iv in out if iv.excluded is None]
    if len(times) < 3:
        return out
    limit = OUTLIER_FACTOR * statistics.median(times)
    if max(times) <= limit:
        return out
    why = f"outlier (over {OUTLIER_FACTOR:g}x the median step time)"
    return [iv._replace(excluded=why) if iv.excluded is None and iv.seconds / iv.steps > limit else iv for iv in out]


def any_in(sorted_values: list[int], low: int, high: int) -> bool:
    """Is some value v with low <= v < high in SORTED_VALUES (a binary search: parsing stays linear in the log)."""
    i = bisect.bisect_left(sorted_values, low)
    return i < len(sorted_values) and sorted_values[i] < high


def steady_intervals(rec: RunRecord) -> list[Interval]:
    memo = _memo(rec)
    if memo.steady is None:
        memo.steady = [iv for iv in intervals(rec) if iv.excluded is None]
    return list(memo.steady)


def steady_steps(rec: RunRecord) -> list[int]:
    """The optimizer steps of the steady intervals, in order (each interval holds steps from_step+1 .. to_step)."""
    return [s for iv in steady_intervals(rec) for s in range(iv.from_step + 1, iv.to_step + 1)]


@dataclass(frozen=True)
class StepTime:
    """Seconds per optimizer step over the steady intervals: median, mean, Student-t 95 % interval of the mean, and
    how many intervals (None: no steady interval)."""

    median: float | None
    mean: float | None
    ci95_low: float | None
    ci95_high: float | None
    n_intervals: int


def summarize(values: list[float]) -> StepTime:
    """Median, mean and a Student-t 95 % interval of the mean."""
    n = len(values)
    if n == 0:
        return StepTime(None, None, None, None, 0)
    mean = statistics.fmean(values)
    low: float | None
    high: float | None
    if n > 1:
        # statistics.stdev is exact (fractions) and slow; past 10,000 values a float sum gives the same digits
        sd = statistics.stdev(values) if n <= 10_000 else math.sqrt(math.fsum((x - mean) ** 2 for x in values)
                                                                     / (n - 1))
        half = stats.t_halfwidth(sd, n, CI_LEVEL)
        # a time is never below zero: where the interval of the mean reaches below it, zero bounds it (the true mean
        # is >= 0, so the cut interval covers it as often)
        low, high = max(mean - half, 0.0), mean + half
    else:
        low = high = None
    return StepTime(statistics.median(values), mean, low, high, n)


def step_time(rec: RunRecord) -> StepTime:
    """Seconds per optimizer step over the steady intervals (StepTime)."""
    memo = _memo(rec)
    if memo.step_time is None:
        memo.step_time = summarize([iv.seconds / (iv.to_step - iv.from_step) for iv in steady_intervals(rec)])
    return memo.step_time


def micro_step_ms(rec: RunRecord) -> float | None:
    """Milliseconds per micro-step (one forward-backward of one per-device batch) = median step time / grad-accum."""
    median = step_time(rec).median
    return median / rec.grad_accum * 1000 if median and rec.grad_accum else None


@dataclass(frozen=True)
class SampleTime:
    """Milliseconds per training sample: the step time's median and 95 % interval / samples per step x 1000 (None
    where a part is unknown)."""

    median: float | None
    ci95_low: float | None
    ci95_high: float | None


def sample_time_ms(rec: RunRecord) -> SampleTime:
    """Milliseconds per training sample = optimizer-step time / samples per optimizer step x 1000: the unit the seed
    article's "ms per step" is in (its step is one sample's forward-backward pass), comparable across batch sizes."""
    st, n = step_time(rec), rec.samples_per_step

    def per_sample(x: float | None) -> float | None:
        return x / n * 1000 if n and x else None

    return SampleTime(per_sample(st.median), per_sample(st.ci95_low), per_sample(st.ci95_high))


def sample_ms(rec: RunRecord) -> float | None:
    """Median milliseconds per training sample (sample_time_ms)."""
    return sample_time_ms(rec).median


@dataclass(frozen=True)
class EpochTime:
    """The full epoch at the steady median step: its steps (epoch_steps), seconds = median step x steps, and GPU-hours
    = seconds / 3600 x GPUs (None where a part is unknown)."""

    steps: int | None
    seconds: float | None
    gpu_hours: float | None


def epoch_time(rec: RunRecord) -> EpochTime:
    """Time to finish the full epoch the run's schedule comes from at its steady median step. A cut run's steady steps
    stand for the epoch's (warm-up, evals and checkpoint saves left out, so a real epoch takes a little longer)."""
    median, n = step_time(rec).median, epoch_steps(rec)
    seconds = median * n if median and n else None
    return EpochTime(n, seconds, seconds / 3600 * (rec.world_size or 1) if seconds is not None else None)
