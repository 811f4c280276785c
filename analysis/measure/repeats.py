"""Repeated runs: how a run was measured (the harness), where it stood in an interleaved set, and the spread of a
figure over runs. The decisions that rest on these (which runs count, which recipe is sooner) are
analysis.judge.recommend's and analysis.judge.pairs'.

- harness: "plain" (the printed command alone: run.json `harness`, or a runner's key without launcher options),
  "launcher" (experiments/launch/launcher.py, harness 2 or later, no profiler in the run), "profiled" (a profiler ran
  inside the timed epoch), "launcher v1" (made before harness 2: a profiler at steps 10-12 and a host-GPU sync per
  step, which made the fast recipe's epoch 34 % longer than the printed command's), "imported" (a user's log).
- a set's place: run.json `round` (experiments/run/rounds.py), None for a run made alone.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from analysis.parse.record import RunRecord

PLAIN, LAUNCHER, PROFILED, LAUNCHER_V1, IMPORTED = "plain", "launcher", "profiled", "launcher v1", "imported"


def harness(rec: RunRecord) -> str:
    """How REC was measured (the module's list)."""
    status = rec.run_status
    if status.get("imported"):
        return IMPORTED
    if status.get("harness") == PLAIN or (status.get("key") and "launcher" not in rec.key):
        return PLAIN
    if rec.launcher.get("profile_steps"):
        return PROFILED
    return LAUNCHER if (rec.harness or 0) >= 2 else LAUNCHER_V1


def timed(rec: RunRecord) -> bool:
    """A run whose epoch is the command's own: plain, or through a launcher that adds nothing to the step."""
    return harness(rec) in (PLAIN, LAUNCHER)


@dataclass(frozen=True)
class Place:
    """A run's place in an interleaved set."""

    set: str
    round: int
    of: int | None
    slot: int | None


def place(rec: RunRecord) -> Place | None:
    r = rec.run_status.get("round")
    if not isinstance(r, dict) or not r.get("set") or not isinstance(r.get("round"), int):
        return None
    return Place(str(r["set"]), int(r["round"]), r.get("of"), r.get("slot"))


@dataclass(frozen=True)
class Spread:
    """N values: their median, lowest and highest (a single value is one run: all three equal)."""

    n: int
    median: float
    low: float
    high: float

    @property
    def rel_range(self) -> float:
        """(high - low) / median: the spread as a share of the middle value."""
        return (self.high - self.low) / self.median if self.median else 0.0


def spread(values) -> Spread | None:
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return None
    return Spread(len(vals), statistics.median(vals), min(vals), max(vals))


@dataclass(frozen=True)
class ProbePair:
    """The host probe before a run (env.json) and right after it (run.json `probe_after`): a pure-Python loop in
    ns/iter and eager dispatch in us/op (higher: a slower host)."""

    loop_before: float | None
    loop_after: float | None
    dispatch_before: float | None
    dispatch_after: float | None


def _value(probe: object, part: str) -> float | None:
    if not isinstance(probe, dict):
        return None
    v = (probe.get(part) or {}).get("value") if isinstance(probe.get(part), dict) else None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def probes(rec: RunRecord) -> ProbePair:
    before = (rec.env.get("host") or {}).get("probe")
    after = rec.run_status.get("probe_after")
    return ProbePair(_value(before, "python_loop"), _value(after, "python_loop"), _value(before, "dispatch"),
                     _value(after, "dispatch"))
