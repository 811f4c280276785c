"""Step time: the log's intervals between training lines, which of them are steady, and their summary.

An interval is left out of the steady state when it is the first, starts in the warm-up (the first 10 % of the full
epoch's optimizer steps, at most 10 steps: the same absolute steps for a full run and for any run cut from it, so runs
of one schedule are judged over the same steps; 9.4 for the recipe's 94-step epoch), holds an eval or a checkpoint
save, or holds a step the profiler watched (profiling slows it). Every step time, tokens/s and energy figure of the suite is taken over these steady intervals.
"""
from __future__ import annotations

import bisect
import math
import statistics
from dataclasses import dataclass

from analysis.parse.record import RunRecord

WARMUP_FRACTION = 0.10  # intervals that start before this share of the full epoch's steps are warm-up ...
WARMUP_MAX_STEPS = 10   # ... or before this step, whichever comes first (a long epoch's warm-up is no longer)
CI_LEVEL = 0.95


@dataclass(frozen=True)
class Interval:
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

    def as_dict(self) -> dict:
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


def intervals(rec: RunRecord) -> list[Interval]:
    """Every interval between successive training lines, with why it is kept out of the steady state."""
    points = rec.elapsed
    if len(points) < 2:
        return []
    warmup = min(WARMUP_FRACTION * (epoch_steps(rec) or points[-1][0]), WARMUP_MAX_STEPS)
    profiled = sorted(rec.profiled_steps)
    events = sorted(rec.event_steps)
    out = []
    for i, ((a, ta), (b, tb)) in enumerate(zip(points, points[1:])):
        if b <= a:
            continue
        reason = None
        if i == 0:
            reason = "first interval"
        elif a < warmup:
            reason = "warm-up"
        elif _any_in(events, a, b):  # an event at e with a <= e < b
            reason = "eval/save"
        elif _any_in(profiled, a + 1, b + 1):  # a profiled step p with a < p <= b
            reason = "profiled"
        out.append(Interval(a, b, tb - ta, reason))
    return out


def _any_in(sorted_values: list[int], low: int, high: int) -> bool:
    """Is some value v with low <= v < high in SORTED_VALUES (a binary search: parsing stays linear in the log)."""
    i = bisect.bisect_left(sorted_values, low)
    return i < len(sorted_values) and sorted_values[i] < high


def steady_intervals(rec: RunRecord) -> list[Interval]:
    return [iv for iv in intervals(rec) if iv.excluded is None]


def summarize(values: list[float]) -> dict:
    """Median, mean and a Student-t 95 % interval of the mean."""
    n = len(values)
    if n == 0:
        return {"median": None, "mean": None, "ci95_low": None, "ci95_high": None, "n_intervals": 0}
    mean = statistics.fmean(values)
    if n > 1:
        from scipy import stats

        half = stats.t.ppf(0.5 + CI_LEVEL / 2, n - 1) * statistics.stdev(values) / math.sqrt(n)
        low, high = mean - half, mean + half
    else:
        low = high = None
    return {"median": statistics.median(values), "mean": mean, "ci95_low": low, "ci95_high": high,
            "n_intervals": n}


def step_time(rec: RunRecord) -> dict:
    """Seconds per optimizer step over the steady intervals: median, mean, 95 % interval of the mean, count."""
    return summarize([iv.step_time_s for iv in steady_intervals(rec)])


def micro_step_ms(rec: RunRecord) -> float | None:
    """Milliseconds per micro-step (one forward-backward of one per-device batch) = median step time / grad-accum."""
    median = step_time(rec)["median"]
    return median / rec.grad_accum * 1000 if median and rec.grad_accum else None


def sample_time_ms(rec: RunRecord) -> dict:
    """Milliseconds per training sample = optimizer-step time / samples per optimizer step x 1000 (median, and the
    step time's 95 % interval, scaled alike): the unit the seed article's "ms per step" is in (its step is one
    sample's forward-backward pass), comparable across batch sizes. None where a part is unknown."""
    st, n = step_time(rec), rec.samples_per_step
    return {k: st[k] / n * 1000 if n and st[k] else None for k in ("median", "ci95_low", "ci95_high")}


def sample_ms(rec: RunRecord) -> float | None:
    """Median milliseconds per training sample (sample_time_ms)."""
    return sample_time_ms(rec)["median"]
