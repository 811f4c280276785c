"""Memory section: each run's peak reserved memory against the capacity of every GPU class."""
from __future__ import annotations

import pandas as pd

from analysis.judge.answer import published as P
from analysis.measure import run_views
from analysis.present import plots, view_render
from analysis.present.report import html as H
from analysis.present.report.context import Context
from experiments.base.runfolder import Env


def memory_frame(ctx: Context, records) -> pd.DataFrame:
    """Each run's peak (analysis.measure.run_views.MemoryRow), and whether it fits each class's capacity."""
    mem = view_render.to_frame(run_views.memory_rows(records), run_views.MemoryRow)
    for gib, _ in ctx.capacities():
        mem[f"fits {gib:.1f} GiB"] = ["yes" if p < gib else "no" for p in mem["peak_gib"]]
    return mem


def memory_section(ctx: Context) -> str:
    runs = sorted([r for r in ctx.matrix if r.peak_mem_gib is not None],
                  key=lambda r: (ctx.hw_rank(r.hw), r.experiment, r.run))
    caps = ctx.capacities()
    mem = memory_frame(ctx, runs)
    labels = ctx.labels_of(runs)
    gpu_mib = next((r.env.get(Env.GPU_MEMORY_MIB) for r in ctx.matrix if r.env.get(Env.GPU_MEMORY_MIB)), None)
    enough = P.value(ctx.pub, None, "sufficient_gpu_mem_gb")
    fig = plots.memory_bars(mem, caps, "Memory: peak reserved per run against each GPU class", labels)
    peak_legible = P.hardware_with(ctx.pub, "peak_mem_gib")
    return H.join([
        H.p("Peak memory torch reserved during each run (ms-swift's <code>memory(GiB)</code>; the CUDA context "
            "and other processes come on top) against the capacity of each GPU class of "
            "data/hardware.yaml, in GiB as the answer's table has them (the planner's capacity: the "
            f"marketed GB as 10^9 bytes, {', '.join(f'{gib:.1f}' for gib, _ in caps)} GiB)"
            + (f"; NVML reported {gpu_mib / 1024:.1f} GiB for the GPU of these runs" if gpu_mib else "")
            + ". <i>fits</i> = peak below the capacity, "
            "without headroom for the context."),
        H.figure(ctx, fig, "memory.png", "Peak reserved GiB per run; dashed lines: GPU class capacities. " + labels),
        H.fold(f"peak and fits per run ({len(mem)} runs)", H.html_table(
            mem, {"peak_gib": view_render.formats(run_views.MemoryRow)["peak_gib"]}, columns=list(mem.columns[1:]))),
        H.csv(ctx, mem, "memory.csv"),
        "" if peak_legible else H.note(
            "The article's peak-memory column is illegible (seeds: legible none), so there is no published memory "
            "number to set beside these"
            + (f"; it states that {enough:g} GB is enough for 7B LoRA (all.lora_7b_sufficient_gpu_mem_gb)."
               if enough else ".")),
    ])
