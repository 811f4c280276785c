"""Which row of a speed table the speed-ups are relative to: a decision, so the judge's (tables and report show it).

The asked class's row where it has a time per sample (and, measured, a tokens/s: the speed-up is a ratio of
throughputs or paired step times); else the slowest such row, among measured rows with at least
MIN_BASELINE_STEADY_STEPS steady steps where there are any: a 20-step run has one 5-step steady interval, too few to
pair step by step with anything, and its tokens/s over those few batches (fewer tokens than most) would skew every
tokens/s ratio against it.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

MIN_BASELINE_STEADY_STEPS = 10  # a measured baseline row's steady steps, where any row of the group has that many


@dataclass(frozen=True)
class Candidate:
    """What the choice reads of one row of one experiment and source (measured | published)."""

    hw: str
    source: str
    ms_per_sample: float | None
    tokens_per_s: float | None = None
    steady_steps: int | None = None


def pick_baseline(rows: Sequence[Candidate], baseline: str) -> int | None:
    """The index in ROWS of the row speed-ups are relative to (see the module docstring); None where no row has a
    time per sample."""
    usable = [i for i, r in enumerate(rows) if r.ms_per_sample is not None
              and (r.source != "measured" or r.tokens_per_s is not None)]
    hit = [i for i in usable if rows[i].hw == baseline]
    if hit:
        return hit[0]
    long_enough = [i for i in usable if rows[i].source != "measured"
                   or (rows[i].steady_steps or 0) >= MIN_BASELINE_STEADY_STEPS]
    usable = long_enough or usable
    return max(usable, key=lambda i: rows[i].ms_per_sample or 0.0) if usable else None
