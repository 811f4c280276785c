"""The measurements a verdict quotes, as numbers: speed-ups and x-seed multiples from analysis.measure.compare.

Nothing is computed here: `speedup_numbers` and `seed_multiple` format the Speedup of measure.compare.speedup (with
each run's tokens/s from measure.throughput and median step time from measure.steps) into a verdict's numbers, and
`paired_note` / `host_note` say how a speed-up was measured and whether the runs came from different hosts.
"""
from __future__ import annotations

from analysis.judge.result import rnd
from analysis.measure.compare import other_host, speedup
from analysis.measure.steps import step_time
from analysis.parse.record import RunRecord


def host_note(test: RunRecord, base: RunRecord, whose: str) -> str | None:
    """"TEST's host vs WHOSE BASE's host" when both are known and differ (host-bound steps depend on it), else None."""
    return other_host(test, base, whose)


def speedup_numbers(base: RunRecord, test: RunRecord) -> dict:
    """Speed-up of TEST over BASE in % (measure.compare.speedup: paired step by step where both trained the same
    batches, else the tokens/s ratio), with its 95 % range, each run's tokens/s and median step time, for a verdict.
    Keys: base_step_s, test_step_s, base_tokens_per_s, test_tokens_per_s, base_n, test_n, paired_steps, other_host,
    speedup_pct, and speedup_pct_low / speedup_pct_high where there is a range."""
    sp = speedup(base, test)
    assert sp.base is not None and sp.test is not None  # speedup() measures both runs
    out = {"base_step_s": rnd(step_time(base).median), "test_step_s": rnd(step_time(test).median),
           "base_tokens_per_s": rnd(sp.base.tokens_per_s, 1), "test_tokens_per_s": rnd(sp.test.tokens_per_s, 1),
           "base_n": sp.base.n_intervals, "test_n": sp.test.n_intervals, "paired_steps": sp.paired_steps,
           "other_host": host_note(test, base, "the baseline's")}
    if sp.factor is None:
        return {**out, "speedup_pct": None}
    out["speedup_pct"] = rnd(sp.pct, 2)
    if sp.low is not None:
        out["speedup_pct_low"] = rnd(sp.pct_low, 2)
        out["speedup_pct_high"] = rnd(sp.pct_high, 2)
    return out


def seed_multiple(test: RunRecord, seed: RunRecord, paired: bool = False) -> dict:
    """TEST's speed as a multiple of SEED's (measure.compare.speedup): unpaired by default (tokens/s ratio, range from
    the two runs' bootstrap ranges); PAIRED: step by step where both trained the same batches. Keys: tokens_per_s,
    seed_tokens_per_s, tokens_source, seed_tokens_source, hosts, how, paired_steps, and ratio / ratio_low /
    ratio_high where measured."""
    sp = speedup(seed, test, pair=paired)
    assert sp.base is not None and sp.test is not None  # speedup() measures both runs
    out = {"tokens_per_s": rnd(sp.test.tokens_per_s, 1), "seed_tokens_per_s": rnd(sp.base.tokens_per_s, 1),
           "tokens_source": sp.test.source, "seed_tokens_source": sp.base.source}
    if paired:
        out.update(hosts=sp.hosts, how=sp.how, paired_steps=sp.paired_steps)
    if sp.factor is not None:
        out["ratio"] = rnd(sp.factor, 2)
        if sp.low is not None:
            out["ratio_low"], out["ratio_high"] = rnd(sp.low, 2), rnd(sp.high, 2)
    return out


def paired_note(nums: dict) -> str:
    """How a speed-up of speedup_numbers was measured, for its sentence: paired steps, another host."""
    n = nums.get("paired_steps")
    note = f", paired over the {n} steps both timed on the same batches" if n else ""
    if nums.get("other_host"):
        note += f"; made on another host ({nums['other_host']}): host-bound steps may differ for that alone"
    return note
