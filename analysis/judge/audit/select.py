"""Which runs a verdict may use: records made from a claims experiment's current definition, newest first.

A run made before its experiment's definition changed (other overrides, launcher options) is not used; a run stopped
by a time limit (the device call's deadline, the runner's timeout) says nothing about its recipe and is kept aside
(`Runs.cut_short`), to be named by the verdicts that would have used it. `pick` takes an experiment's newest run
that trained (or OOMed, where an OOM is an answer); `seed_baseline` finds the seed recipe's run that speed-ups are
held against; `hw_choice` the hardware class a table is made for.
"""
from __future__ import annotations

from collections.abc import Sequence

from analysis.judge.band import Runs, pick
from analysis.measure.profile import busy_fraction
from analysis.parse.record import RunRecord
from experiments.recipes import catalog


def hw_choice(records: list[RunRecord]) -> str | None:
    """The hardware class with the most claims runs."""
    names = set(catalog.load()["experiments"])
    counts: dict[str, int] = {}
    for rec in records:
        if rec.experiment in names and rec.hw:
            counts[rec.hw] = counts.get(rec.hw, 0) + 1
    return max(counts, key=lambda h: counts[h]) if counts else None


def pick_paired(runs: Runs, name: str, seed_names: Sequence[str], allow_oom: bool = False) -> RunRecord | None:
    """NAME's newest run that has a seed run of SEED_NAMES on its own host (a ratio of host-bound runs is a ratio of
    recipes only on one host), else its newest run (pick): a newer run on a host without a seed run must not push a
    paired one out of a speed claim."""
    for rec in runs.get(name):
        if rec.ok and rec.host_id:
            seed = seed_baseline(seed_names, runs, host_id=rec.host_id)
            if seed is not None and seed.host_id == rec.host_id:
                return rec
    return pick(runs, name, allow_oom=allow_oom)


def profiled(runs: Runs, name: str) -> tuple[RunRecord | None, bool]:
    """(run, cut short?): NAME's complete run, else one cut short by a time limit after its profiled step(s), which
    it still measured."""
    rec = pick(runs, name)
    if rec is not None:
        return rec, False
    rec = next((r for r in runs.cut_short.get(name, []) if busy_fraction(r) is not None), None)
    return rec, rec is not None


def seed_baseline(names: Sequence[str], runs: Runs, host_id: str | None = None) -> RunRecord | None:
    """The seed recipe's run to hold a speed-up against: the first of NAMES that has one. A recipes.yaml experiment
    (the matrix's `seed`) means its longest complete run among all records for runs.hw; a claims experiment its newest
    run. With HOST_ID (the run to be compared), a run made on that host comes first (the same-host rule: a ratio of
    two host-bound runs is only a ratio of recipes on one host), from any of NAMES; only then another host's."""
    claims_experiments = catalog.load()["experiments"]
    candidates: list[RunRecord] = []
    for name in names:
        if name in claims_experiments:
            ok = [r for r in runs.get(name) if r.ok]  # newest first
        else:
            ok = sorted((r for r in runs.records if r.experiment == name and r.ok
                         and (runs.hw is None or r.hw == runs.hw) and (r.global_steps or 0) > 0),
                        key=lambda r: (r.global_steps or 0, r.run or ""), reverse=True)
        candidates.extend(ok)
    if host_id:
        same = [r for r in candidates if r.host_id == host_id]
        if same:
            return same[0]
    return candidates[0] if candidates else None
