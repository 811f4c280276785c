"""The GPU's share of a step, from the launcher's torch.profiler window (profile.json): busy time and top operators."""
from __future__ import annotations

import statistics

from analysis.parse.record import RunRecord


def busy_fraction(rec: RunRecord) -> float | None:
    """Median over the profiled steps of GPU busy time (union of kernels and copies) / the step's wall time."""
    fr = [s["gpu_busy_frac"] for s in (rec.profile or {}).get("steps", []) if s.get("gpu_busy_frac") is not None]
    return statistics.median(fr) if fr else None


def profiled_steps(rec: RunRecord) -> list[dict]:
    """The profiled steps with a GPU busy time: step, wall_s, gpu_busy_s, gpu_busy_frac, host_s, top_gpu_ops."""
    out = []
    for st in (rec.profile or {}).get("steps", []):
        if st.get("gpu_busy_s") is None:
            continue
        out.append({**st, "host_s": st["wall_s"] - st["gpu_busy_s"]})
    return out
