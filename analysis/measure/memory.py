"""Peak memory of a run at a step: two runs over the same batches compare at their common last step.

The peak is ms-swift's `memory(GiB)`, torch's running maximum of reserved memory, logged per training line.
"""
from __future__ import annotations

from analysis.parse.record import RunRecord


def peak_at(rec: RunRecord, step: int | None) -> float | None:
    """Peak reserved GiB over the training lines up to STEP (the whole run when STEP is None)."""
    vals = [v for s, v in rec.memory_curve if step is None or s <= step]
    return max(vals) if vals else (rec.peak_mem_gib if step is None else None)


def common_peaks(a: RunRecord, b: RunRecord) -> tuple[float | None, float | None, int | None]:
    """Peaks of A and B at the last step both reached (an OOM run: its whole log, which is all it has)."""
    steps = [s for s in (a.last_train_step, b.last_train_step) if s]
    at = min(steps) if steps else None
    return peak_at(a, at), peak_at(b, at), at
