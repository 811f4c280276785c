"""Which run folders the tables use, and why each other one is not used: one decision, read by the report's header
(and any table that counts folders)."""
from __future__ import annotations

from dataclasses import dataclass, field, fields

from analysis.parse.record import RunRecord
from analysis.parse.results import latest_per_group


@dataclass(frozen=True)
class RunUse:
    """Every run folder once: used (the run the tables pick), or not used and why (each reason a field, in the order
    the report lists them)."""

    used: list[RunRecord] = field(default_factory=list)
    OOM: list[RunRecord] = field(default_factory=list)            # ran out of GPU memory
    interrupted: list[RunRecord] = field(default_factory=list)    # killed or timed out before the end
    failed: list[RunRecord] = field(default_factory=list)         # crashed before training
    superseded: list[RunRecord] = field(default_factory=list)     # a shorter or older run of its group

    def not_used(self) -> list[tuple[str, list[RunRecord]]]:
        """(reason, runs) for each reason, in field order."""
        return [(f.name, getattr(self, f.name)) for f in fields(self) if f.name != "used"]


def run_use(records: list[RunRecord]) -> RunUse:
    """A successful run is used unless another successful run of its experiment, GPU and host has more steps (or as
    many and is newer): the run the tables pick (parse.results.latest_per_group)."""
    picked = set(latest_per_group([r for r in records if r.ok]))  # a record is equal only to itself
    use = RunUse()
    for r in records:
        if r.ok:
            (use.used if r in picked else use.superseded).append(r)
        elif r.is_oom:
            use.OOM.append(r)
        elif r.cut_short:
            use.interrupted.append(r)
        else:
            use.failed.append(r)
    return use
