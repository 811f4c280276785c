"""Throughput: tokens and samples per second of one run over its steady intervals: the one producer of tokens/s.

tokens/s = (tokens of the steady steps) / (their wall time), a ratio of sums, with a 95 % bootstrap range that
resamples the steady intervals. Tokens are the launcher's counted real (unpadded) tokens per optimizer step
(tokens.jsonl) where the run has them, else the data's mean tokens per sample x samples per step: `source` says which.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from analysis.measure.steps import Interval, step_time, steady_intervals
from analysis.parse.record import RunRecord

SOURCE_COUNTED = "tokens.jsonl"
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

    def as_dict(self) -> dict:
        return asdict(self)


def ratio_of_sums(num, den, n_boot: int = 2000) -> tuple[float, float | None, float | None]:
    """sum(NUM) / sum(DEN) with a 95 % bootstrap range that resamples the (num, den) pairs together (None with fewer
    than 2 pairs). Fixed seed: the same table every time it is made."""
    import numpy as np

    a, b = np.asarray(num, float), np.asarray(den, float)
    point = float(a.sum() / b.sum())
    if len(a) < 2:
        return point, None, None
    rng = np.random.default_rng(0)
    chunk = max(1, min(n_boot, 2_000_000 // len(a)))  # resamples drawn a chunk at a time: memory stays bounded
    ratios = []
    for start in range(0, n_boot, chunk):
        idx = rng.integers(0, len(a), size=(min(chunk, n_boot - start), len(a)))
        ratios.append(a[idx].sum(axis=1) / b[idx].sum(axis=1))
    low, high = (float(x) for x in np.percentile(np.concatenate(ratios), [2.5, 97.5]))
    return point, low, high


def steady_tokens(rec: RunRecord) -> tuple[list[tuple[Interval, float]], str]:
    """Each steady interval whose tokens are known, with its tokens, and where the tokens come from."""
    by_step = rec.tokens_by_step
    out = []
    for iv in steady_intervals(rec):
        steps = range(iv.from_step + 1, iv.to_step + 1)
        if by_step is not None:
            if any(s not in by_step for s in steps):
                continue
            out.append((iv, float(sum(by_step[s] for s in steps))))
        elif rec.train_tokens_mean and rec.samples_per_step:
            out.append((iv, rec.train_tokens_mean * rec.samples_per_step * len(steps)))
    return out, SOURCE_COUNTED if by_step is not None else SOURCE_MEAN


def throughput(rec: RunRecord, n_boot: int = 2000) -> Throughput:
    """Steady-state tokens/s of a run with its 95 % bootstrap range (see the module docstring)."""
    kept, source = steady_tokens(rec)
    toks, secs, nsteps = [t for _, t in kept], [iv.seconds for iv, _ in kept], [iv.steps for iv, _ in kept]
    if not secs or sum(secs) <= 0:
        return Throughput(None, None, None, 0, source)
    point, low, high = ratio_of_sums(toks, secs, n_boot)
    return Throughput(point, low, high, len(secs), source, float(sum(toks) / sum(nsteps)), int(sum(nsteps)))


def samples_per_s(rec: RunRecord) -> float | None:
    """Samples per second = samples per optimizer step / median steady step time."""
    median = step_time(rec)["median"]
    return rec.samples_per_step / median if rec.samples_per_step and median else None
