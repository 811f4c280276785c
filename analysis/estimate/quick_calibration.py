"""What the committed quick/full pairs support: how wide a quick estimate's 95 % range must be.

The bootstrap range of analysis.estimate.quick holds the quick run's own step noise; the full run made after it on
the same host differs by more (the host part of a step does not repeat: docs/quick-runs.md), and 5 of the 10
committed pairs fell outside it. So every estimate's range is widened to hold, at least, the 95 % prediction interval
of the committed pairs' errors (data/quick_pairs.yaml: log(measured / predicted) of each pair): mean +- t
(n - 1 degrees of freedom) x sd x sqrt(1 + 1/n), on the log scale. Without MIN_PAIRS pairs there is no range to give,
and no estimate.
"""
from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass
from pathlib import Path

from experiments.base import paths
from experiments.base.datafiles import read_yaml

PAIRS_FILE = paths.DATA / "quick_pairs.yaml"
KINDS = ("train_s", "tokens_per_s")
MIN_PAIRS = 3


@dataclass(frozen=True)
class CommittedErrors:
    """The committed pairs' log(measured / predicted) of quick_pairs.yaml, per kind (KINDS: the training time and the
    steady tokens/s)."""

    train_s: tuple[float, ...]
    tokens_per_s: tuple[float, ...]


@functools.lru_cache(maxsize=None)
def committed_errors(path: str | Path = PAIRS_FILE) -> CommittedErrors:
    pairs = (read_yaml(path) or {}).get("pairs") or []

    def of(kind: str) -> tuple[float, ...]:
        return tuple(float(p[kind]) for p in pairs if p.get(kind) is not None)

    return CommittedErrors(of("train_s"), of("tokens_per_s"))


def band(kind: str, path: str | Path | None = None) -> tuple[float, float] | None:
    """(low, high) of log(measured / predicted) that a new pair falls in 95 % of the time, by the committed pairs of
    KIND (PATH: default PAIRS_FILE); None under MIN_PAIRS of them."""
    from scipy.stats import t

    errors: tuple[float, ...] = getattr(committed_errors(path or PAIRS_FILE), kind)
    n = len(errors)
    if n < MIN_PAIRS:
        return None
    half = float(t.ppf(0.975, n - 1)) * statistics.stdev(errors) * math.sqrt(1 + 1 / n)
    mean = statistics.fmean(errors)
    return mean - half, mean + half


def widen(predicted: float, low: float | None, high: float | None, kind: str,
          path: str | Path | None = None) -> tuple[float, float] | None:
    """The range of an estimate PREDICTED whose bootstrap range is LOW-HIGH (None: not computed), widened to the
    committed pairs' band; None where they support no range."""
    b = band(kind, path)
    if b is None:
        return None
    lo, hi = predicted * math.exp(b[0]), predicted * math.exp(b[1])
    return min(lo, low if low is not None else lo), max(hi, high if high is not None else hi)
