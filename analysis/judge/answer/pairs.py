"""Which of two recipes finishes sooner, from paired rounds: runs of both in one round of one interleaved set, on one
host (experiments/run/rounds.py). The rule is in docs/recommend.md:

- A pair is one round holding a run of each. Its ratio is B's epoch / A's (above 1: A sooner). A seed cut run stands
  for its epoch with a lower bound (steady step x the epoch's steps): A is sooner in that round where A's epoch is
  below the bound; where it is not, the round says nothing.
- A is sooner than B where it is sooner in every paired round and there are at least MIN_ROUNDS of them (by chance
  alone, 1 in 2**MIN_ROUNDS), or fewer but each by more than MAX_DRIFT (more than one host was seen to drift
  between two runs of one recipe: 55.1 against 37.8 s, 1.46x, within 30 minutes); or, with at least MIN_BOOTSTRAP
  rounds and no bound among them, where the bootstrap
  95 % interval of the mean log ratio excludes 0.
- Otherwise the two are "not separable on N rounds", with the runs that would settle it.
"""
from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass

MIN_ROUNDS = 3
MAX_DRIFT = 1.5  # the most one host moved one recipe's epoch between two runs, rounded up (issue 47: 55.1 / 37.8 s)
MIN_BOOTSTRAP = 5
BOOTSTRAP_RESAMPLES = 4000
BOOTSTRAP_SEED = 0  # a fixed seed: the same runs give the same verdict


@dataclass(frozen=True)
class Pair:
    """One round's runs of A and B on one host: epochs in seconds; a_full / b_full false for a cut run's bound."""

    set: str
    round: int
    host: str
    a_s: float
    b_s: float
    a_full: bool = True
    b_full: bool = True

    @property
    def ratio(self) -> float:
        """B's epoch / A's (above 1: A sooner)."""
        return self.b_s / self.a_s


def _sooner(p: Pair) -> str | None:
    """'a' or 'b' where the round settles which finished sooner; None where it does not (a tie, or the faster one
    against a bound of the other is not known to be faster: a bound is a lower bound of that recipe's epoch)."""
    if p.a_s < p.b_s and p.a_full:  # A's full epoch below B's epoch or B's lower bound: A sooner
        return "a"
    if p.b_s < p.a_s and p.b_full:
        return "b"
    return None


@dataclass(frozen=True)
class PairVerdict:
    """What the paired rounds of A and B say: FASTER ('a', 'b' or None: not separable), in words, and the bootstrap
    interval of B/A where one was computed."""

    a: str
    b: str
    pairs: tuple[Pair, ...]
    faster: str | None
    basis: str
    interval: tuple[float, float] | None = None

    @property
    def n(self) -> int:
        return len(self.pairs)

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(sorted({p.host for p in self.pairs}))

    @property
    def settle(self) -> str:
        return (f"more interleaved rounds of both on one host (run-all --experiments {self.a},{self.b} --repeats "
                f"{max(MIN_ROUNDS, MIN_BOOTSTRAP - self.n)})")


def bootstrap_interval(ratios: list[float], resamples: int = BOOTSTRAP_RESAMPLES,
                       seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """The 95 % percentile bootstrap interval of the geometric mean of RATIOS (resampling rounds)."""
    logs = [math.log(r) for r in ratios]
    rng = random.Random(seed)
    n = len(logs)
    means = sorted(sum(rng.choice(logs) for _ in range(n)) / n for _ in range(resamples))
    k = int(0.025 * resamples)  # the same rank from either end: swapping A and B mirrors the interval exactly
    lo, hi = means[k], means[resamples - 1 - k]
    return math.exp(lo), math.exp(hi)


def decide(a: str, b: str, pairs: list[Pair]) -> PairVerdict:
    """The module's rule over PAIRS (every paired round of A and B)."""
    pairs = sorted(pairs, key=lambda p: (p.set, p.round))
    n = len(pairs)
    says = [_sooner(p) for p in pairs]
    wins_a, wins_b = says.count("a"), says.count("b")
    per_host = Counter(p.host[:8] for p in pairs)
    rounds = f"{n} paired round{'s' if n != 1 else ''}"
    if len(per_host) == 1:
        where = f"{rounds} on host {next(iter(per_host))}"
    else:
        where = f"{rounds} ({', '.join(f'{k} on host {h}' for h, k in sorted(per_host.items()))})"
    if n >= MIN_ROUNDS and wins_a == n:
        return PairVerdict(a, b, tuple(pairs), "a", f"sooner in every one of {where}")
    if n >= MIN_ROUNDS and wins_b == n:
        return PairVerdict(a, b, tuple(pairs), "b", f"sooner in every one of {where}")
    if n and wins_a == n and min(p.ratio for p in pairs) > MAX_DRIFT:
        return PairVerdict(a, b, tuple(pairs), "a", f"sooner by more than a host drifts ({MAX_DRIFT:g}x) in every "
                                                    f"one of {where}")
    if n and wins_b == n and min(p.a_s / p.b_s for p in pairs) > MAX_DRIFT:
        return PairVerdict(a, b, tuple(pairs), "b", f"sooner by more than a host drifts ({MAX_DRIFT:g}x) in every "
                                                    f"one of {where}")
    interval = None
    if n >= MIN_BOOTSTRAP and all(p.a_full and p.b_full for p in pairs):
        interval = bootstrap_interval([p.ratio for p in pairs])
        if interval[0] > 1:
            return PairVerdict(a, b, tuple(pairs), "a", f"bootstrap 95 % interval of {b}/{a} "
                               f"{interval[0]:.3f}-{interval[1]:.3f} over {where}", interval)
        if interval[1] < 1:
            return PairVerdict(a, b, tuple(pairs), "b", f"bootstrap 95 % interval of {b}/{a} "
                               f"{interval[0]:.3f}-{interval[1]:.3f} over {where}", interval)
    tally = f"{a} sooner in {wins_a}, {b} in {wins_b}" + (f", {n - wins_a - wins_b} open" if n - wins_a - wins_b
                                                          else "")
    return PairVerdict(a, b, tuple(pairs), None, f"not separable on {n} round{'s' if n != 1 else ''} ({tally}"
                       + (f"; bootstrap 95 % interval of {b}/{a} {interval[0]:.3f}-{interval[1]:.3f}"
                          if interval else "") + ")", interval)
