"""The interconnect between the GPUs of one host, from all-reduce sweeps (analysis.parse.bench).

busbw at the largest message (nccl-tests' bus bandwidth, measured by experiments/record/allreduce.py), and the effect of
a set
of NCCL variables: for every message size both sweeps timed, gain % = (time without / time with - 1) x 100 (positive:
the variables made the all-reduce faster; the 1 MiB all-reduce is the latency end, 1 GiB the bandwidth end).
"""
from __future__ import annotations


def busbw_at(sweep: dict, mib: float | None = None) -> dict | None:
    """The size row of SWEEP at MIB (default: its largest message)."""
    sizes = sweep["sizes"]
    if not sizes:
        return None
    if mib is None:
        return max(sizes, key=lambda s: s["bytes"])
    return next((s for s in sizes if abs(s["mib"] - mib) < 1e-9), None)


def pairs(sweeps: list[dict], without: str = "plain", with_: str = "seed000-env") -> list[tuple[dict, dict]]:
    """(sweep without the variables, sweep with them) made on one host with the same rank count, newest pair last."""
    out = []
    for w in sweeps:
        if w["label"] != with_:
            continue
        base = [p for p in sweeps if p["label"] == without and p["ranks"] == w["ranks"]
                and p["host_id"] and p["host_id"] == w["host_id"]]
        if base:
            out.append((base[-1], w))
    return out


def env_effect(without: dict, with_: dict) -> dict:
    """Per message size: the two times and the gain % of the variables; the smallest and largest sizes' gains; the
    variables set and those NCCL said it read (set but not read: NCCL ignored them)."""
    t0 = {s["bytes"]: s for s in without["sizes"]}
    rows = []
    for s in with_["sizes"]:
        b = t0.get(s["bytes"])
        if b is None or s["time_us"] <= 0:
            continue
        rows.append({"mib": s["mib"], "time_us_without": b["time_us"], "time_us_with": s["time_us"],
                     "busbw_without": b["busbw_gbs"], "busbw_with": s["busbw_gbs"],
                     "gain_pct": (b["time_us"] / s["time_us"] - 1) * 100})
    set_vars = {k: v for k, v in with_["nccl_env"].items() if k not in without["nccl_env"]}
    read = with_["read_vars"]
    return {"sizes": rows, "gain_pct_small": rows[0]["gain_pct"] if rows else None,
            "gain_pct_large": rows[-1]["gain_pct"] if rows else None,
            "max_gain_pct": max((r["gain_pct"] for r in rows), default=None),
            "set": set_vars, "read": {k: read[k] for k in set_vars if k in read},
            "ignored": sorted(k for k in set_vars if k not in read), "ranks": with_["ranks"],
            "host_id": with_["host_id"], "nccl_version": with_["nccl_version"]}
