"""The interconnect between the GPUs of one host, from all-reduce sweeps (analysis.parse.bench).

busbw at the largest message (nccl-tests' bus bandwidth, measured by experiments/record/allreduce.py), and the effect of
a set
of NCCL variables: for every message size both sweeps timed, gain % = (time without / time with - 1) x 100 (positive:
the variables made the all-reduce faster; the 1 MiB all-reduce is the latency end, 1 GiB the bandwidth end).
"""
from __future__ import annotations

from dataclasses import dataclass

from analysis.parse.bench import Sweep, SweepSize


def busbw_at(sweep: Sweep, mib: float | None = None) -> SweepSize | None:
    """The size row of SWEEP at MIB (default: its largest message)."""
    sizes = sweep.sizes
    if not sizes:
        return None
    if mib is None:
        return max(sizes, key=lambda s: s.bytes)
    return next((s for s in sizes if abs(s.mib - mib) < 1e-9), None)


def pairs(sweeps: list[Sweep], without: str = "plain", with_: str = "seed000-env") -> list[tuple[Sweep, Sweep]]:
    """(sweep without the variables, sweep with them) made on one host with the same rank count, newest pair last."""
    out = []
    for w in sweeps:
        if w.label != with_:
            continue
        base = [p for p in sweeps if p.label == without and p.ranks == w.ranks and p.host_id and p.host_id == w.host_id]
        if base:
            out.append((base[-1], w))
    return out


@dataclass(frozen=True)
class SizeEffect:
    """One message size both sweeps timed: the two times and bus bandwidths, and the variables' gain in %."""

    mib: float
    time_us_without: float
    time_us_with: float
    busbw_without: float
    busbw_with: float
    gain_pct: float


@dataclass(frozen=True)
class EnvEffect:
    """What a set of NCCL variables did to the all-reduce: per message size, the smallest and largest sizes' gains
    and the largest; the variables set, those NCCL read and those it ignored; the ranks, host and NCCL version."""

    sizes: list[SizeEffect]
    gain_pct_small: float | None
    gain_pct_large: float | None
    max_gain_pct: float | None
    set: dict[str, str]
    read: dict[str, str]
    ignored: list[str]
    ranks: int
    host_id: str | None
    nccl_version: str | None


def env_effect(without: Sweep, with_: Sweep) -> EnvEffect:
    """Per message size: the two times and the gain % of the variables; the smallest and largest sizes' gains; the
    variables set and those NCCL said it read (set but not read: NCCL ignored them)."""
    t0 = {s.bytes: s for s in without.sizes}
    rows = [SizeEffect(s.mib, b.time_us, s.time_us, b.busbw_gbs, s.busbw_gbs, (b.time_us / s.time_us - 1) * 100)
            for s in with_.sizes if (b := t0.get(s.bytes)) is not None and s.time_us > 0]
    set_vars = {k: v for k, v in with_.nccl_env.items() if k not in without.nccl_env}
    read = with_.read_vars
    return EnvEffect(rows, rows[0].gain_pct if rows else None, rows[-1].gain_pct if rows else None,
                     max((r.gain_pct for r in rows), default=None), set_vars,
                     {k: read[k] for k in set_vars if k in read}, sorted(k for k in set_vars if k not in read),
                     with_.ranks, with_.host_id, with_.nccl_version)
