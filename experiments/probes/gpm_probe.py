"""Does GPM's busy share mean what the suite uses it for? GPM (experiments/record/gpm.py) against windows whose GPU-busy
share is known, and against torch.profiler's kernel union on a launch-bound window. Needs CUDA and a GPU with GPM.

    python -m experiments.probes.gpm_probe [--out FILE] [--seconds S]

Prints one line per window: the known busy share (sleep kernels timed by CUDA events between host sleeps, duty 10,
50 and 90 %), or the profiler's kernel union (tiny adds), beside GPM's graphics/SM/tensor/DRAM utilisation. Call 33
(results/calls/2026-12-02-call33/gpm_probe.txt) ran it as `python -m experiments.record.gpm`, before it moved here.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from experiments.record.gpm import Gpm


def probe(seconds: float = 1.5) -> dict:
    """GPM's graphics_util against windows whose GPU-busy share is known: sleep kernels of known length between host
    sleeps (duty 10 %, 50 %, 90 %), and a launch-bound window of tiny kernels timed by torch.profiler's kernel union
    (the launcher's own reading), both instruments on the same window."""
    import torch

    from experiments.launch.profiler import _device_intervals, union_ns

    gpm, why = Gpm.open()
    out: dict = {"gpm": why, "rows": []}
    if gpm is None:
        return out
    # cycles per second of torch.cuda._sleep: time a long sleep kernel with CUDA events
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1000)
    torch.cuda.synchronize()
    e0.record()
    torch.cuda._sleep(100_000_000)
    e1.record()
    torch.cuda.synchronize()
    cycles_per_s = 100_000_000 / (e0.elapsed_time(e1) / 1000)
    out["sleep_cycles_per_s"] = round(cycles_per_s)
    for duty in (0.1, 0.5, 0.9):
        period = 0.02
        gpm.mark()
        t_end = time.perf_counter() + seconds
        kernel_s = 0.0
        while time.perf_counter() < t_end:
            e0.record()
            torch.cuda._sleep(int(duty * period * cycles_per_s))
            e1.record()
            torch.cuda.synchronize()
            kernel_s += e0.elapsed_time(e1) / 1000
            time.sleep((1 - duty) * period)
        m = gpm.mark()
        out["rows"].append({"window": f"sleep kernels, duty {duty:.0%}",
                            "known_busy_frac": round(kernel_s / m["wall_s"], 4),
                            **m})
    x = torch.zeros(1, device="cuda")
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
    for traced in (False, True):
        torch.cuda.synchronize()
        if traced:
            prof.start()
        gpm.mark()
        t_end = time.perf_counter() + seconds
        n = 0
        while time.perf_counter() < t_end:
            for _ in range(1000):
                x.add_(1)
            n += 1000
        torch.cuda.synchronize()
        m = gpm.mark()
        row = {"window": f"{n} tiny adds{' under torch.profiler' if traced else ''}", "launches": n, **m}
        if traced:
            prof.stop()
            row["profiler_busy_frac"] = round(union_ns(_device_intervals(prof)[0]) / 1e9 / m["wall_s"], 4)
        out["rows"].append(row)
    gpm.close()
    return out


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not 0.1 <= v <= 60:
        raise argparse.ArgumentTypeError(f"wants seconds between 0.1 and 60, got {text!r}")
    return v


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="GPM probe: GPU busy from hardware counters against known duty cycles")
    p.add_argument("--out", default=None, help="write the JSON here too")
    p.add_argument("--seconds", type=_seconds, default=1.5, help="length of each window (default 1.5)")
    a = p.parse_args(argv)
    res = probe(a.seconds)
    print(f"GPM: {res['gpm']}")
    for r in res["rows"]:
        print("  " + ", ".join(f"{k} {v}" for k, v in r.items()))
    if a.out:
        Path(a.out).write_text(json.dumps(res, indent=2))
    return 0 if res["gpm"] == "ok" else 1


if __name__ == "__main__":
    raise SystemExit(main())
