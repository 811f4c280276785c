"""The measurements a verdict quotes, as numbers: speed-ups and x-seed multiples from analysis.measure.compare.

Nothing is computed here: `speedup_numbers` and `seed_multiple` format the Speedup of measure.compare.speedup (with
each run's tokens/s from measure.throughput and median step time from measure.steps) into a verdict's numbers, and
`paired_note` / `host_note` say how a speed-up was measured and whether the runs came from different hosts.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from analysis.judge.band import FLAG, rnd, when
from analysis.measure.compare import other_host, speedup
from analysis.measure.steps import step_time
from analysis.parse.record import RunRecord


def host_note(test: RunRecord, base: RunRecord, whose: str) -> str | None:
    """"TEST's host vs WHOSE BASE's host" when both are known and differ (host-bound steps depend on it), else None."""
    return other_host(test, base, whose)


@dataclass(frozen=True)
class SpeedupQuote:
    """Speed-up of TEST over BASE as a verdict quotes it (rounded): each run's median step and tokens/s, their steady
    intervals, the paired steps, another host, and the speed-up in % with its 95 % range where there is one."""

    base_step_s: float | None
    test_step_s: float | None
    base_tokens_per_s: float | None
    test_tokens_per_s: float | None
    base_n: int
    test_n: int
    paired_steps: int | None
    other_host: str | None
    speedup_pct: float | None = None
    ranged: bool = field(default=False, metadata=FLAG)     # the speed-up has a 95 % range (the two below)
    speedup_pct_low: float | None = field(default=None, metadata=when("ranged"))
    speedup_pct_high: float | None = field(default=None, metadata=when("ranged"))


def speedup_numbers(base: RunRecord, test: RunRecord) -> SpeedupQuote:
    """Speed-up of TEST over BASE in % (measure.compare.speedup: paired step by step where both trained the same
    batches, else the tokens/s ratio), with its 95 % range, each run's tokens/s and median step time, for a verdict."""
    sp = speedup(base, test)
    assert sp.base is not None and sp.test is not None  # speedup() measures both runs
    q = SpeedupQuote(rnd(step_time(base).median), rnd(step_time(test).median), rnd(sp.base.tokens_per_s, 1),
                     rnd(sp.test.tokens_per_s, 1), sp.base.n_intervals, sp.test.n_intervals, sp.paired_steps,
                     host_note(test, base, "the baseline's"))
    if sp.factor is None:
        return q
    if sp.low is None:
        return replace(q, speedup_pct=rnd(sp.pct, 2))
    return replace(q, speedup_pct=rnd(sp.pct, 2), ranged=True, speedup_pct_low=rnd(sp.pct_low, 2),
                   speedup_pct_high=rnd(sp.pct_high, 2))


@dataclass(frozen=True)
class SeedMultiple:
    """TEST's speed as a multiple of SEED's as a verdict quotes it (rounded): each run's tokens/s and their source,
    how it was paired (PAIRED only), and the ratio with its 95 % range where measured."""

    tokens_per_s: float | None
    seed_tokens_per_s: float | None
    tokens_source: str
    seed_tokens_source: str
    paired: bool = field(default=False, metadata=FLAG)
    hosts: str | None = field(default=None, metadata=when("paired"))
    how: str | None = field(default=None, metadata=when("paired"))
    paired_steps: int | None = field(default=None, metadata=when("paired"))
    measured: bool = field(default=False, metadata=FLAG)   # a ratio, and (ranged) its range
    ranged: bool = field(default=False, metadata=FLAG)
    ratio: float | None = field(default=None, metadata=when("measured"))
    ratio_low: float | None = field(default=None, metadata=when("measured", "ranged"))
    ratio_high: float | None = field(default=None, metadata=when("measured", "ranged"))


def seed_multiple(test: RunRecord, seed: RunRecord, paired: bool = False) -> SeedMultiple:
    """TEST's speed as a multiple of SEED's (measure.compare.speedup): unpaired by default (tokens/s ratio, range from
    the two runs' bootstrap ranges); PAIRED: step by step where both trained the same batches."""
    sp = speedup(seed, test, pair=paired)
    assert sp.base is not None and sp.test is not None  # speedup() measures both runs
    out = SeedMultiple(rnd(sp.test.tokens_per_s, 1), rnd(sp.base.tokens_per_s, 1), sp.test.source, sp.base.source)
    if paired:
        out = replace(out, paired=True, hosts=sp.hosts, how=sp.how, paired_steps=sp.paired_steps)
    if sp.factor is not None:
        out = replace(out, measured=True, ratio=rnd(sp.factor, 2))
        if sp.low is not None:
            out = replace(out, ranged=True, ratio_low=rnd(sp.low, 2), ratio_high=rnd(sp.high, 2))
    return out


def paired_note(q: SpeedupQuote) -> str:
    """How a speed-up of speedup_numbers was measured, for its sentence: paired steps, another host."""
    n = q.paired_steps
    note = f", paired over the {n} steps both timed on the same batches" if n else ""
    if q.other_host:
        note += f"; made on another host ({q.other_host}): host-bound steps may differ for that alone"
    return note
