"""What tracing costs a host-bound step: the same launch-bound work timed bare, under torch.profiler's CUDA activity
(kernels + every runtime call) and under experiments.probes.cupti_kernels (kernels, copies and memsets alone).

    python -m experiments.probes.profiler_overhead [--launches N] [--reps R] [--out FILE]

Three workloads, each rep timed in every mode in turn (modes rotate, so a drifting host hits them alike):
`add`: N single-element in-place adds (one kernel each, the pure launch cost); `lora`: forward and backward of a
28-layer stack of rank-8 LoRA adapters on a frozen 3584-wide bf16 linear at 16 tokens (the seed recipe's micro-batch
shape class); `matmul8k`: 50 bf16 8192^2 matmuls (long kernels: the tracers' durations against each other). Per
mode: median wall seconds, microseconds added per kernel over the bare run, the GPU-busy seconds the tracer saw and
its record counts. Needs CUDA; writes JSON to --out (default: stdout only).
"""
from __future__ import annotations

import argparse
import json
import statistics
import time


def main(argv=None) -> int:
    """The measurement as it ran. Stays whole: a one-off probe's loop, kept as it was measured (imported by nothing)."""
    import torch

    from experiments.launch.profiler import _device_intervals, union_ns
    from experiments.probes.cupti_kernels import KernelTracer

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--launches", type=int, default=20000)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--out", default=None)
    p.add_argument("--first-windows", type=int, default=0,
                   help="first time N torch.profiler windows of the lora workload, each after a bare run, before "
                        "anything else profiles (is the first window of a process dearer?)")
    p.add_argument("--modes", default="bare,torch-cuda,cupti-kernels",
                   help="comma-separated, from bare, torch-cuda, cupti-kernels (bare first)")
    a = p.parse_args(argv)
    dev = torch.device("cuda")
    x = torch.zeros(1, device=dev)
    width, rank, layers = 3584, 8, 28
    base = [torch.randn(width, width, device=dev, dtype=torch.bfloat16) * 0.01 for _ in range(layers)]
    lora_a = [torch.randn(rank, width, device=dev, dtype=torch.bfloat16, requires_grad=True) for _ in range(layers)]
    lora_b = [torch.zeros(width, rank, device=dev, dtype=torch.bfloat16, requires_grad=True) for _ in range(layers)]
    inp = torch.randn(16, width, device=dev, dtype=torch.bfloat16)

    def add():
        for _ in range(a.launches):
            x.add_(1)

    def lora():
        for _ in range(20):
            h = inp
            for w, la, lb in zip(base, lora_a, lora_b):
                h = torch.nn.functional.linear(h, w) + torch.nn.functional.linear(
                    torch.nn.functional.linear(h, la), lb) * 4.0
                h = torch.nn.functional.silu(h)
            h.float().pow(2).mean().backward()

    tracer = KernelTracer()
    act = torch.profiler.ProfilerActivity

    def timed(work, mode):
        torch.cuda.synchronize()
        busy, counts, dropped = None, {}, 0
        if mode == "torch-cuda":
            prof = torch.profiler.profile(activities=[act.CUDA])
            prof.start()
        elif mode == "cupti-kernels":
            tracer.start()
        t0 = time.perf_counter()
        work()
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
        if mode == "bare":
            return wall, busy, counts, dropped
        if mode == "torch-cuda":
            prof.stop()
            spans = _device_intervals(prof)[0]  # the launcher's own reading of a profile's GPU activity
            counts = {"gpu_events": len(spans)}
        else:
            spans, counts, dropped = tracer.stop()
        durs = sorted(e - s for s, e in spans)
        counts["median_kernel_ns"] = durs[len(durs) // 2] if durs else None
        return wall, union_ns(spans) / 1e9, counts, dropped

    if a.first_windows:  # the first torch.profiler windows of the process, before any warm-up: a one-time cost?
        timed(lora, "bare")
        seq = [("bare", timed(lora, "bare")[0])]
        for i in range(a.first_windows):
            seq.append((f"torch-cuda #{i + 1}", timed(lora, "torch-cuda")[0]))
            seq.append(("bare", timed(lora, "bare")[0]))
        out_first = [{"mode": m, "wall_s": round(w, 4)} for m, w in seq]
        print("first windows (lora):", json.dumps(out_first), flush=True)
    modes = a.modes.split(",")
    out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "launches": a.launches,
           "reps": a.reps, "workloads": {}}
    big_a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)

    def big():
        for _ in range(50):
            big_a @ big_a

    for name, work in (("add", add), ("lora", lora), ("matmul8k", big)):
        for m in modes:  # warm-up: allocator, kernels, CUPTI's first enable
            timed(work, m)
        rows = {m: [] for m in modes}
        for r in range(a.reps):
            order = modes[r % len(modes):] + modes[:r % len(modes)]
            for m in order:
                rows[m].append(timed(work, m))
        # kernels per run: what the CUPTI tracer counted (all records of the three kinds)
        traced = rows.get("cupti-kernels") or rows.get("torch-cuda") or []
        kernels = statistics.median(sum(v for k, v in c.items() if k != "median_kernel_ns")
                                    for _, _, c, _ in traced) if traced else None
        bare = statistics.median(w for w, *_ in rows["bare"])
        res = {"kernels_per_run": kernels, "bare_s": bare}
        for m in modes[1:]:
            wall = statistics.median(w for w, *_ in rows[m])
            res[m] = {"wall_s": wall, "over_bare": wall / bare,
                      "added_us_per_kernel": (wall - bare) / kernels * 1e6 if kernels else None,
                      "gpu_busy_s": statistics.median(b for _, b, _, _ in rows[m]),
                      "counts": rows[m][-1][2], "dropped": max(d for *_, d in rows[m])}
        out["workloads"][name] = res
        print(name, json.dumps(res), flush=True)
    if a.first_windows:
        out["first_windows_lora"] = out_first
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
