"""Comparisons of two runs: the speed-up (the one producer of every speed-up, and so of steady_x_seed, the multiple
of the seed recipe's steady tokens/s; the epoch-time multiple epoch_x_seed is analysis.measure.jobtime.epoch_ratio's)
and the host check.

speed-up factor = BASE's time / TEST's time for the same work. Two runs that trained the same batches (tokens.jsonl
equal on every common steady step) are compared step by step: factor = sum of BASE's step times / sum of TEST's over
the steps both timed, a bootstrap of steps as pairs for the range (each step is its own control). Other runs: factor
= TEST's tokens/s / BASE's tokens/s, its range from a bootstrap that resamples each run's steady intervals on its own
(analysis.measure.throughput.throughput_ratio).
A published row has only a time per step: factor = BASE's ms / TEST's ms, without a range.
Every speed-up says whether its two runs ran on one host (`hosts`): a host-bound step moves with the host (two hosts
of one H200 kind ran the seed recipe 30 % apart), so a ratio across hosts is labelled cross-host, never silent.
"""
from __future__ import annotations

from dataclasses import dataclass

from analysis.measure.stats import N_BOOT, ratio_of_sums
from analysis.measure.steps import steady_intervals
from analysis.measure.throughput import Ratio, Throughput, throughput, throughput_ratio
from analysis.parse.record import RunRecord

SAME_HOST, CROSS_HOST, UNVERIFIED = "same host", "cross-host", "host unverified"


@dataclass(frozen=True)
class Speedup:
    factor: float | None
    low: float | None = None
    high: float | None = None
    how: str = "tokens/s ratio"        # paired steps | tokens/s ratio | time per step
    paired_steps: int | None = None
    other_host: str | None = None      # 'TEST host vs BASE host' when the two are known to differ
    hosts: str = UNVERIFIED             # same host | cross-host | host unverified
    base: Throughput | None = None
    test: Throughput | None = None

    @property
    def pct(self) -> float | None:
        """The speed-up in percent: (factor - 1) x 100."""
        return None if self.factor is None else (self.factor - 1) * 100

    @property
    def pct_low(self) -> float | None:
        return None if self.low is None else (self.low - 1) * 100

    @property
    def pct_high(self) -> float | None:
        return None if self.high is None else (self.high - 1) * 100


@dataclass(frozen=True)
class PairedRatio(Ratio):
    """BASE's over TEST's summed step time over N_STEPS common steady intervals, with its bootstrap range."""

    n_steps: int = 0


def paired_ratio(base: RunRecord, test: RunRecord, n_boot: int = N_BOOT) -> PairedRatio | None:
    """BASE's / TEST's summed step time over the steady steps both timed, when both trained the same batches.
    None when they cannot be paired (no tokens.jsonl, other batches, fewer than 3 common intervals)."""
    tb, tt = base.tokens_by_step, test.tokens_by_step
    if tb is None or tt is None:
        return None
    ib = {(iv.from_step, iv.to_step): iv.seconds for iv in steady_intervals(base)}
    it = {(iv.from_step, iv.to_step): iv.seconds for iv in steady_intervals(test)}
    common = sorted(set(ib) & set(it))
    for a, b in common:
        if any(s not in tb or tb[s] != tt.get(s) for s in range(a + 1, b + 1)):
            return None
    if len(common) < 3:
        return None
    ratio, low, high = ratio_of_sums([ib[k] for k in common], [it[k] for k in common], n_boot)
    return PairedRatio(ratio, low, high, len(common))


def host_relation(a: RunRecord, b: RunRecord) -> str:
    """Whether two runs ran on one host: 'same host' (equal host ids), 'cross-host' (different ids, or machines of
    different shapes), 'host unverified' (a run without a host id, on a machine of the same shape)."""
    if a.path == b.path:  # a run against itself (a table's baseline row)
        return SAME_HOST
    if a.host_id and b.host_id:
        return SAME_HOST if a.host_id == b.host_id else CROSS_HOST
    if a.machine and b.machine and a.machine != b.machine:
        return CROSS_HOST
    return UNVERIFIED


def probe_text(rec: RunRecord) -> str:
    p = rec.host_probe
    if not p.measured():
        return "no host probe"
    fmt = lambda v, unit: "?" if v is None else f"{v:.3g} {unit}"  # noqa: E731
    return (f"Python {fmt(p.python_ns, 'ns/iter')}, dispatch {fmt(p.dispatch_us, 'us/op')}, "
            f"LoRA step {fmt(p.lora_ms, 'ms')}")


def other_host(test: RunRecord, base: RunRecord, whose: str = "") -> str | None:
    """'TEST's host vs [WHOSE] BASE's host' (with their probe figures where measured) when the two are known to
    differ: host-bound steps depend on the host, so such a ratio is a cross-host one. None for the same or an
    unverified host."""
    if host_relation(test, base) != CROSS_HOST:
        return None
    whose = f"{whose} " if whose else ""
    if test.host_id and base.host_id:
        return f"{test.host} ({probe_text(test)}) vs {whose}{base.host} ({probe_text(base)})"
    return f"{test.machine} vs {whose}{base.machine}"


def speedup(base: RunRecord, test: RunRecord, pair: bool = True) -> Speedup:
    """How much faster TEST is than BASE (see the module docstring). PAIR=False skips step-by-step pairing."""
    b, t = throughput(base), throughput(test)
    host, rel = other_host(test, base), host_relation(test, base)
    q = paired_ratio(base, test) if pair else None
    if q is not None:
        return Speedup(q.ratio, q.low, q.high, "paired steps", q.n_steps, host, rel, b, t)
    r = throughput_ratio(test, base)
    return Speedup(r.ratio, r.low, r.high, "tokens/s ratio", None, host, rel, b, t)


def time_speedup(base_ms: float | None, test_ms: float | None) -> Speedup:
    """Speed-up from times per step alone (published rows): BASE's ms / TEST's ms."""
    if not base_ms or not test_ms:
        return Speedup(None, how="time per step")
    return Speedup(base_ms / test_ms, how="time per step")


@dataclass(frozen=True)
class Scaling:
    """MANY's GPUs over ONE's: the speed-up, the efficiency (speed-up / GPU ratio) and its range, how the speed-up
    was taken, and whether the two ran on one host."""

    gpus_from: int
    gpus_to: int
    speedup: float | None
    efficiency: float | None
    efficiency_low: float | None
    efficiency_high: float | None
    basis: str
    hosts: str
    other_host: str | None


def scaling(one: RunRecord, many: RunRecord, pair: bool = True) -> Scaling:
    """Scaling efficiency of MANY (N GPUs) over ONE (fewer, usually 1) for the same global batch:
    efficiency = speed-up / (N_many / N_one), where the speed-up is speedup(ONE, MANY) (paired step times when both
    trained the same batches, else the tokens/s ratio), so 1.0 is perfect scaling. Its range is the speed-up's
    range divided the same way; `hosts` says whether the two ran on one host (a cross-host ratio is no scaling)."""
    sp = speedup(one, many, pair=pair)
    n = many.gpus / one.gpus
    div = (lambda v: None if v is None else v / n)  # noqa: E731
    return Scaling(one.gpus, many.gpus, sp.factor, div(sp.factor), div(sp.low), div(sp.high), sp.how, sp.hosts,
                   sp.other_host)


def scaling_pairs(records: list[RunRecord]) -> list[tuple[RunRecord, RunRecord, Scaling]]:
    """(1-GPU run, N-GPU run, scaling(...)) for every ok N-GPU run that has an ok 1-GPU DDP run of the same hardware
    and experiment on the same host (the one with the most steps); a ratio across hosts measures the hosts, so none is
    made. ZeRO runs are set against the 1-GPU DDP run: what the user would otherwise run."""
    ok = [r for r in records if r.ok]
    out = []
    for many in ok:
        if many.gpus <= 1:
            continue
        ones = [r for r in ok if r.gpus == 1 and r.parallel == "ddp"
                and (r.hw, r.experiment) == (many.hw, many.experiment)
                and r.host_id and r.host_id == many.host_id]
        if ones:
            one = max(ones, key=lambda r: (r.global_steps or 0, r.run))
            out.append((one, many, scaling(one, many)))
    return out
