"""The report's per-run tables and figure data as typed views (issue 46): one frozen row per run, interval, group
or loss point, each field's column words in its metadata (analysis.core.viewfield.col), built here from the
measures and rendered by analysis.present.view_render (its frames feed the report's HTML tables, CSV files and
figures). Every number is a measure's: steps (step time, intervals), throughput, compare (a time speed-up), jobtime
(the epoch), repeats (harness, place, probes), the run's own logged peak and losses.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from analysis.core.viewfield import col
from analysis.measure import compare, jobtime, repeats, steps, throughput
from analysis.parse.record import RunRecord
from experiments.base.runfolder import Env, GpuCheck


def _ms(seconds: float | None) -> float | None:
    return seconds * 1000 if seconds is not None else None


@dataclass(frozen=True)
class RunRow:
    """One matrix run (picked for the tables or not): its step time with the 95 % range, throughput and peak."""

    hw: str | None = col("GPU class")
    experiment: str | None = col("recipe")
    run: str = col("run", default="")
    status: str | None = col("status")
    labels: str = col("labels", default="")
    in_tables: bool = col("in the tables", default=False)
    steps: int | None = col("steps", "", "{:.0f}")
    complete: bool | None = col("complete")
    ms_per_step: float | None = col("optimizer step", "ms", "{:.1f}")
    ms_ci95_low: float | None = col("optimizer step 95 % low", "ms", "{:.1f}")
    ms_ci95_high: float | None = col("optimizer step 95 % high", "ms", "{:.1f}")
    steady_intervals: int | None = col("steady intervals", "", "{:.0f}")
    ms_per_micro_step: float | None = col("micro-step", "ms", "{:.1f}")
    tokens_per_s: float | None = col("throughput", "tokens/s", "{:,.0f}")
    peak_gib: float | None = col("peak", "GiB", "{:.2f}")


def run_rows(records: list[RunRecord], in_tables: Callable[[RunRecord], bool]) -> tuple[RunRow, ...]:
    """Each of RECORDS as a RunRow; IN_TABLES: whether the tables use the run (analysis.judge.answer.run_use)."""
    out = []
    for r in records:
        st = steps.step_time(r)
        out.append(RunRow(
            hw=r.hw, experiment=r.experiment, run=r.run, status=r.status, labels="; ".join(r.labels),
            in_tables=in_tables(r), steps=r.global_steps, complete=r.complete, ms_per_step=_ms(st.median),
            ms_ci95_low=_ms(st.ci95_low), ms_ci95_high=_ms(st.ci95_high), steady_intervals=st.n_intervals,
            ms_per_micro_step=steps.micro_step_ms(r), tokens_per_s=throughput.throughput(r).tokens_per_s,
            peak_gib=r.peak_mem_gib))
    return tuple(out)


@dataclass(frozen=True)
class SpreadRow:
    """The runs of one hardware, experiment and GPU layout: each run's median ms per step, the fastest and slowest,
    and how much faster the fastest is (compare.time_speedup(slowest, fastest).pct)."""

    hw: str | None = col("GPU class")
    experiment: str | None = col("recipe")
    gpus: str = col("GPUs", default="")
    runs: int = col("runs", "", "{:d}", default=0)
    ms_per_step_of_each_run: str = col("each run's optimizer step", "ms", default="")
    min: float = col("fastest run's optimizer step", "ms", "{:.1f}", default=0.0)
    max: float = col("slowest run's optimizer step", "ms", "{:.1f}", default=0.0)
    spread_pct: float | None = col("fastest over slowest", "%", "{:.1f} %")
    same_steps: bool = col("same steps", default=False)


def spread_rows(records: list[RunRecord]) -> tuple[SpreadRow, ...]:
    """Per hardware, experiment and GPU layout (GPU count and parallel mode: a 2-GPU step is another quantity, and
    mixing the two made the seed's spread 120 %) with two runs or more."""
    groups: dict[tuple, list[tuple[RunRecord, float]]] = {}
    for r in records:
        median = steps.step_time(r).median
        if median:
            groups.setdefault((r.hw, r.experiment, r.layout), []).append((r, median * 1000))
    out = []
    for (hw, exp, _), runs in groups.items():
        if len(runs) < 2:
            continue
        slowest, fastest = max(runs, key=lambda x: x[1]), min(runs, key=lambda x: x[1])
        gpus = runs[0][0].gpus
        out.append(SpreadRow(
            hw=hw, experiment=exp, gpus=f"{gpus:g}" + (f" ({runs[0][0].parallel})" if gpus > 1 else ""),
            runs=len(runs), ms_per_step_of_each_run=", ".join(f"{ms:.1f} ({r.run})" for r, ms in runs),
            min=fastest[1], max=slowest[1], spread_pct=compare.time_speedup(slowest[1], fastest[1]).pct,
            same_steps=len({r.global_steps for r, _ in runs}) == 1))
    return tuple(out)


@dataclass(frozen=True)
class IntervalRow:
    """One logged interval of a run: its steps, step time and whether it is steady (kept) or why not."""

    name: str = col("run name", default="")
    hw: str | None = col("GPU class")
    experiment: str | None = col("recipe")
    run: str = col("run", default="")
    from_step: int = col("from step", "", "{:d}", default=0)
    to_step: int = col("to step", "", "{:d}", default=0)
    step_time_ms: float = col("step", "ms", "{:.1f}", default=0.0)
    interval: str = col("interval", default="kept")


def interval_rows(records: list[RunRecord]) -> tuple[IntervalRow, ...]:
    return tuple(IntervalRow(name=r.name, hw=r.hw, experiment=r.experiment, run=r.run, from_step=iv.from_step,
                             to_step=iv.to_step, step_time_ms=iv.step_time_s * 1000, interval=iv.excluded or "kept")
                 for r in records for iv in steps.intervals(r))


@dataclass(frozen=True)
class RepeatPoint:
    """One full-epoch single-GPU run of harness 2 or plain: its recipe and harness, host, round, epoch
    (train_runtime) and host probe (the strip plot's points)."""

    recipe: str = col("recipe (harness)", default="")
    host: str = col("host", default="")
    run: str = col("run", default="")
    round: int | None = col("round", "", "{:d}")
    epoch_s: float | None = col("epoch", "s", "{:.1f}")
    probe_before: float | None = col("host probe before", "ns/iter", "{:.1f}")
    probe_after: float | None = col("host probe after", "ns/iter", "{:.1f}")


def repeat_points(records: list[RunRecord]) -> tuple[RepeatPoint, ...]:
    out = []
    for r in records:
        kind = repeats.harness(r)
        jt = jobtime.job_time(r)
        if kind not in (repeats.LAUNCHER, repeats.PLAIN) or not jt.full_epoch or not r.host_id:
            continue
        pl, pr = repeats.place(r), repeats.probes(r)
        out.append(RepeatPoint(recipe=f"{r.experiment} ({kind})", host=r.host_id[:8], run=r.run,
                               round=pl.round if pl else None, epoch_s=jt.epoch_s, probe_before=pr.loop_before,
                               probe_after=pr.loop_after))
    return tuple(out)


@dataclass(frozen=True)
class LossPoint:
    """One logged loss of a run: train or eval, at an optimizer step."""

    experiment: str | None = col("recipe")
    name: str = col("run name", default="")
    hw: str | None = col("GPU class")
    run: str = col("run", default="")
    split: str = col("split", default="train")
    step: int = col("step", "", "{:d}", default=0)
    loss: float = col("loss", "", "{:.4f}", default=0.0)


def loss_points(records: list[RunRecord]) -> tuple[LossPoint, ...]:
    return tuple(LossPoint(experiment=r.experiment, name=r.name, hw=r.hw, run=r.run, split=split, step=step,
                           loss=value)
                 for r in records for split, curve in (("train", r.train_loss), ("eval", r.eval_loss))
                 for step, value in curve)


@dataclass(frozen=True)
class MemoryRow:
    """One run's peak reserved memory (ms-swift's memory(GiB)) and the settings that set it."""

    name: str = col("run name", default="")
    hw: str | None = col("GPU class")
    experiment: str | None = col("recipe")
    run: str = col("run", default="")
    labels: str = col("labels", default="")
    per_device_batch: int | None = col("per-device batch", "", "{:d}")
    grad_accum: int | None = col("gradient accumulation", "", "{:d}")
    max_length: int | None = col("max length", "", "{:d}")
    gradient_checkpointing: bool | None = col("gradient checkpointing")
    peak_gib: float | None = col("peak", "GiB", "{:.2f}")


def memory_rows(records: list[RunRecord]) -> tuple[MemoryRow, ...]:
    return tuple(MemoryRow(name=r.name, hw=r.hw, experiment=r.experiment, run=r.run, labels="; ".join(r.labels),
                           per_device_batch=r.per_device_batch, grad_accum=r.grad_accum, max_length=r.max_length,
                           gradient_checkpointing=r.gradient_checkpointing, peak_gib=r.peak_mem_gib)
                 for r in records)


# env.json's items as the report's environment table words them: (label, env.json key)
ENVIRONMENT = (("GPU", Env.GPU_NAME), ("GPUs", Env.GPU_COUNT), ("GPU memory (MiB)", Env.GPU_MEMORY_MIB),
               ("driver", Env.DRIVER), ("CUDA (driver)", Env.CUDA_DRIVER), ("CUDA (torch build)", Env.CUDA_TORCH),
               ("CPU", Env.CPU_MODEL), ("CPU cores", Env.CPU_COUNT), ("RAM (GiB)", Env.RAM_GIB), ("Python", Env.PYTHON),
               ("platform", Env.PLATFORM))
CLASS_RUNS = ("run", "experiment", "status", "labels", "steps", "ms_per_step", "peak_gib")  # a class's runs (report)


def environment(rec: RunRecord) -> dict[str, object]:
    """A run's environment, by label: env.json's ENVIRONMENT items, its host id and probe, the GPU check and every
    package's version (one column of the report's environment table: its keys are the run's own)."""
    out: dict[str, object] = {label: rec.env.get(key) for label, key in ENVIRONMENT}
    out["host id"] = rec.host_id
    probe = rec.host_probe
    if probe.measured():
        out["host probe (Python ns/iter, dispatch us/op, LoRA ms)"] = (
            f"{probe.python_ns}, {probe.dispatch_us}, {probe.lora_ms}")
    check = rec.env.get(Env.GPU_CHECK) or {}
    if check:
        out["GPU check"] = f"matched {check.get(GpuCheck.MATCHED_HW)}" + (
            " (FORCED)" if check.get(GpuCheck.FORCED) else "")
    for pkg, v in (rec.env.get(Env.PACKAGES) or {}).items():
        out[pkg] = v
    return out


def environment_record(rec: RunRecord, hw: str) -> dict[str, object]:
    """A run's env.json flat (environment.csv's row: its keys are the run's own), with its host probe and packages."""
    return {"hw": hw, "experiment": rec.experiment, "run": rec.run,
            **{k: v for k, v in rec.env.items()
               if k not in (Env.TOPOLOGY, Env.GPUS, Env.PACKAGES, Env.GPU_CHECK, Env.HOST)},
            "host_id": rec.host_id, **{f"host_probe:{k}": v for k, v in vars(rec.host_probe).items()},
            **{f"pkg:{k}": v for k, v in (rec.env.get(Env.PACKAGES) or {}).items()}}
