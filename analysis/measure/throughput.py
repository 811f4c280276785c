"""Throughput: tokens and samples per second of one run over its steady intervals: the one producer of tokens/s.

tokens/s = (tokens of the steady steps) / (their wall time), a ratio of sums, with a 95 % bootstrap range that
resamples the steady intervals. Tokens are the launcher's counted real (unpadded) tokens per optimizer step
(tokens.jsonl) where the run has them, else the data's mean tokens per sample x samples per step: `source` says which.
"""
from __future__ import annotations

from dataclasses import dataclass

from analysis.measure.stats import N_BOOT, ratio_of_sums, ratio_of_two
from analysis.measure.steps import Interval, steady_intervals, step_time
from analysis.parse.record import RunRecord
from experiments.base import runfiles

SOURCE_COUNTED = runfiles.TOKENS
SOURCE_MEAN = "mean length x samples per step"


@dataclass(frozen=True)
class Throughput:
    tokens_per_s: float | None
    low: float | None
    high: float | None
    n_intervals: int
    source: str
    tokens_per_step: float | None = None
    steady_steps: int | None = None


@dataclass(frozen=True)
class Ratio:
    """A ratio of two runs' figures with its 95 % bootstrap range (None: not measurable)."""

    ratio: float | None
    low: float | None
    high: float | None


def throughput_ratio(test: RunRecord, base: RunRecord, n_boot: int = N_BOOT) -> Ratio:
    """TEST's steady tokens/s over BASE's (ratio_of_two over their steady intervals): the unpaired speed-up."""
    kt, _ = steady_tokens(test)
    kb, _ = steady_tokens(base)
    if not kt or not kb or sum(iv.seconds for iv, _ in kt) <= 0 or sum(iv.seconds for iv, _ in kb) <= 0:
        return Ratio(None, None, None)
    return Ratio(*ratio_of_two([t for _, t in kt], [iv.seconds for iv, _ in kt],
                               [t for _, t in kb], [iv.seconds for iv, _ in kb], n_boot))


def steady_tokens(rec: RunRecord) -> tuple[list[tuple[Interval, float]], str]:
    """Each steady interval whose tokens are known, with its tokens, and where the tokens come from."""
    by_step = rec.tokens_by_step
    out = []
    steady = steady_intervals(rec)
    if by_step is not None:
        for iv in steady:
            steps = range(iv.from_step + 1, iv.to_step + 1)
            if all(s in by_step for s in steps):
                out.append((iv, float(sum(by_step[s] for s in steps))))
    elif rec.train_tokens_mean and rec.samples_per_step:
        per_step = rec.train_tokens_mean * rec.samples_per_step
        out = [(iv, per_step * (iv.to_step - iv.from_step)) for iv in steady]
    return out, SOURCE_COUNTED if by_step is not None else SOURCE_MEAN


def throughput(rec: RunRecord, n_boot: int = N_BOOT) -> Throughput:
    """Steady-state tokens/s of a run with its 95 % bootstrap range (see the module docstring)."""
    kept, source = steady_tokens(rec)
    toks, secs, nsteps = [t for _, t in kept], [iv.seconds for iv, _ in kept], [iv.steps for iv, _ in kept]
    if not secs or sum(secs) <= 0:
        return Throughput(None, None, None, 0, source)
    point, low, high = ratio_of_sums(toks, secs, n_boot)
    return Throughput(point, low, high, len(secs), source, float(sum(toks) / sum(nsteps)), int(sum(nsteps)))


def samples_per_s(rec: RunRecord) -> float | None:
    """Samples per second = samples per optimizer step / median steady step time."""
    median = step_time(rec).median
    return rec.samples_per_step / median if rec.samples_per_step and median else None
