"""Does a run show that a recipe fits a card? The card's capacity in GiB, the allocator cap a run ran under (its
launch.json), and what a trained or OOMed run says about a card of that capacity.

Cards are sold in GB (10^9 bytes, hardware.yaml's memory_gb) and the allocator counts GiB (2^30 bytes): a 24 GB card
holds 22.35 GiB, so a 24 GiB cap (25.8 GB) is a bigger card than the claim's. A run is evidence for a card when

- it ran under a cap at or below the card's capacity: trained means it fits, OOM means it does not;
- it OOMed under a cap at or above the capacity: less memory does not help, it does not fit either;
- it trained under a bigger cap (or none) with ms-swift's logged peak below the capacity. That peak is the caching
  allocator's reserved memory (torch.cuda.max_memory_reserved), the most it ever held: below the capacity, a cap at
  the capacity would never have acted, and the run would have been the same run. An allocated-memory peak would not
  say so, nor would a peak at or above the capacity (the allocator may have hit the cap and released its cache).
"""
from __future__ import annotations

from dataclasses import dataclass

from analysis.parse.record import RunRecord
from experiments.base.runfolder import MemCap

GIB = 2**30
ROUNDING_GIB = 0.005  # ms-swift logs memory(GiB) rounded to 2 decimals: a logged 22.35 may be 22.354


def card_gib(card_gb: float) -> float:
    """The capacity in GiB of a card sold as CARD_GB GB (24 -> 22.35)."""
    return float(card_gb) * 1e9 / GIB


def gib(x: float) -> str:
    """A GiB figure as the verdicts print it: 22.35, 24."""
    return f"{round(x, 2):g}"


def run_cap_gib(rec: RunRecord) -> float | None:
    """The allocator cap REC ran under, in GiB, as its launch.json recorded it (cap_bytes where applied); None when
    no cap was applied or recorded."""
    cap = rec.mem_cap
    if not cap or not cap.get(MemCap.APPLIED):
        return None
    return cap[MemCap.CAP_BYTES] / GIB if cap.get(MemCap.CAP_BYTES) else cap[MemCap.REQUESTED_GIB]


@dataclass
class Fit:
    """What one run says about a card: fits (True), does not fit (False) or nothing (None), and why in words."""

    fits: bool | None
    why: str
    cap_gib: float | None
    peak_gib: float | None


def at_capacity(rec: RunRecord, capacity_gib: float) -> Fit:
    """What REC (a run that trained or OOMed) says about a card of CAPACITY_GIB (see the module's rules)."""
    cap, peak = run_cap_gib(rec), rec.peak_mem_gib
    under = f"under a {gib(cap)} GiB cap" if cap is not None else "uncapped"
    card = f"the card's {gib(capacity_gib)} GiB"
    if rec.is_oom:
        if cap is not None and cap >= capacity_gib:
            return Fit(False, f"OOMed {under}, >= {card}", cap, peak)
        return Fit(None, f"OOMed {under}: says nothing about {card}", cap, peak)
    if not rec.ok:
        return Fit(None, f"failed: {rec.failure}", cap, peak)
    if cap is not None and cap <= capacity_gib:
        return Fit(True, f"trained {under}, <= {card}, peak {peak} GiB", cap, peak)
    if peak is not None and peak + ROUNDING_GIB < capacity_gib:
        never = " that never acted below it" if cap is not None else ""
        return Fit(True, f"trained {under}{never}, reserved peak {peak} GiB < {card}", cap, peak)
    return Fit(None, f"trained {under}, reserved peak {peak} GiB >= {card}: says nothing, a run capped there would "
                     "tell", cap, peak)
