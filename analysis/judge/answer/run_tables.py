"""`swiftbench tables`' speed, convergence, scaling and your-runs tables as typed views (issue 46): one frozen row per
run (or published figure), each field's column words in its metadata (analysis.core.viewfield.col), rendered by
analysis.present.view_render. Every number is what analysis.measure (step time, tokens/s, MFU, losses, speed-ups),
analysis.estimate.quick (a quick run's full run) or analysis.judge.answer.published (measured vs published) returns;
the baseline of the speed-up is analysis.judge.answer.baseline's. The *_COMPACT tuples: the fields `--compact` shows.

Rows come from the picked run per hardware and matrix experiment (analysis.parse.results) and the reviewed published
figures (seeds/). A field a row of its kind does not have stays None (an empty cell).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import pandas as pd

from analysis.core.viewfield import col
from analysis.estimate import quick as quick_estimate
from analysis.judge.answer import published as P
from analysis.judge.answer import your_runs
from analysis.judge.answer.baseline import Candidate, pick_baseline
from analysis.measure import compare, flops, loss, profile, steps, throughput
from analysis.parse.record import RunRecord
from experiments.base.runfolder import Quick

SEED_EXPERIMENT = P.SEED_EXPERIMENT  # the experiment that reproduces the published recipe; published rows sit beside it
PUBLISHED_RUN = "seeds/ms_swift_hw_test.yaml"


def labels_text(rec: RunRecord) -> str:
    """REC's labels in one cell, a quick run's stop and a failure said."""
    labels = list(rec.labels)
    if rec.quick and rec.quick.get(Quick.AT_STEP):  # experiments/launch/quick_stop.py's stop, from launch.json
        q = rec.quick
        labels.append(f"quick run (stopped after step {q[Quick.AT_STEP]} of {q.get(Quick.MAX_STEPS_OF_SCHEDULE)})")
    return "; ".join(labels) + (f"; failed: {rec.failure}" if rec.failure else "")


def range_text(low: float, high: float, spec: str = ".0f") -> str:
    """A range as text: '874-880', and with a bound below zero '-1126 .. 5143' (a hyphen between a negative and a
    positive number reads as one number)."""
    sep = "-" if low >= 0 and high >= 0 else " .. "
    return f"{low:{spec}}{sep}{high:{spec}}"


def _ms(seconds: float | None) -> float | None:
    return seconds * 1000 if seconds else None


# ------------------------------------------------------------------------------------------ speed


@dataclass(frozen=True)
class SpeedRow:
    """One row of the speed table: a measured run (analysis.measure) or a published figure (the seeds)."""

    hw: str | None = col("GPU class")
    experiment: str | None = col("recipe")
    source: str = col("source", default="")
    gpus: int | None = col("GPUs", "", "{:d}")
    parallel: str | None = col("parallel")
    status: str | None = col("status")
    run: str | None = col("run")
    host: str | None = col("host id")
    labels: str | None = col("labels")
    ms_per_sample: float | None = col("per sample", "ms", "{:.1f}")
    ms_per_step: float | None = col("optimizer step", "ms", "{:.1f}")
    ms_per_step_ci95: str | None = col("optimizer step 95 % range", "ms")
    ms_per_micro_step: float | None = col("micro-step", "ms", "{:.1f}")
    tokens_per_s: float | None = col("throughput", "tokens/s", "{:,.0f}")
    tokens_per_s_per_gpu: float | None = col("throughput per GPU", "tokens/s", "{:,.0f}")
    tokens_per_s_low: float | None = col("throughput low", "tokens/s", "{:,.0f}")
    tokens_per_s_high: float | None = col("throughput high", "tokens/s", "{:,.0f}")
    tokens_source: str | None = col("tokens counted from")
    samples_per_s: float | None = col("samples", "per s", "{:.2f}")
    gpu_busy_ms_per_step: float | None = col("GPU busy per profiled step", "ms", "{:.1f}")
    host_ms_per_step: float | None = col("host per profiled step", "ms", "{:.1f}")
    comm_ms_per_step: float | None = col("communication per profiled step", "ms", "{:.1f}")
    gpu_busy_frac: float | None = col("GPU busy share (profiled)", "", "{:.0%}")
    bound: str | None = col("bound")
    profiled_over_steady: float | None = col("profiled / steady step", "", "{:.2f}")
    gpm_busy_ms_per_step: float | None = col("GPU busy per steady step (GPM)", "ms", "{:.1f}")
    gpm_host_ms_per_step: float | None = col("host per steady step (GPM)", "ms", "{:.1f}")
    gpm_busy_frac: float | None = col("GPU busy share (GPM)", "", "{:.0%}")
    gpm_steps: int | None = col("GPM steps", "", "{:.0f}")
    gpm_over_profiler: float | None = col("GPM / profiler busy", "", "{:.2f}")
    peak_gib: float | None = col("peak", "GiB", "{:.2f}")
    mfu: float | None = col("MFU", "", "{:.2%}")
    speedup: float | None = col("speed-up", "", "{:.2f}")
    speedup_basis: str | None = col("speed-up from")
    speedup_hosts: str | None = col("speed-up hosts")
    baseline: str | None = col("baseline")
    published_ms_per_sample: float | None = col("published per sample", "ms", "{:.0f}")
    measured_over_published: float | None = col("measured / published", "", "{:.3f}")
    host_python_ns: float | None = col("host probe: Python loop", "ns", "{:.1f}")
    host_dispatch_us: float | None = col("host probe: dispatch", "µs", "{:.2f}")
    host_lora_ms: float | None = col("host probe: LoRA step", "ms", "{:.3f}")
    est_full_train_s: float | None = col("full run's train_runtime (quick estimate)", "s", "{:.0f}")
    est_full_train_s_low: float | None = col("full run's train_runtime low", "s", "{:.0f}")
    est_full_train_s_high: float | None = col("full run's train_runtime high", "s", "{:.0f}")
    est_full_tokens_per_s: float | None = col("full run's throughput (quick estimate)", "tokens/s", "{:.0f}")
    est_full_tokens_per_s_low: float | None = col("full run's throughput low", "tokens/s", "{:.0f}")
    est_full_tokens_per_s_high: float | None = col("full run's throughput high", "tokens/s", "{:.0f}")
    est_steps: int | None = col("steps behind the estimate", "", "{:d}")
    est_basis: str | None = col("estimate")
    steady_steps: int | None = col("steady steps", "", "{:d}")


SPEED_COMPACT = ("hw", "experiment", "source", "gpus", "host", "ms_per_sample", "ms_per_step", "tokens_per_s",
                 "gpu_busy_ms_per_step", "host_ms_per_step", "bound", "peak_gib", "mfu", "speedup", "speedup_hosts",
                 "labels")


def speed_row(rec: RunRecord) -> SpeedRow:
    """One measured row of the speed table (without the speed-up, which needs the baseline); a quick run's full run
    as analysis.estimate.quick predicts it (training time and steady tokens/s with their 95 % ranges)."""
    st = steps.step_time(rec)
    tp = throughput.throughput(rec)
    ci = None
    if st.ci95_low is not None and st.ci95_high is not None:
        ci = range_text(st.ci95_low * 1000, st.ci95_high * 1000)
    share = profile.step_share(rec)
    gpm = profile.steady_share(rec)
    probe = rec.host_probe
    row = SpeedRow(
        hw=rec.hw, experiment=rec.experiment, source="measured", gpus=rec.gpus, parallel=rec.parallel,
        status=rec.status, run=rec.run, host=rec.host_id, labels=labels_text(rec),
        ms_per_sample=steps.sample_ms(rec), ms_per_step=_ms(st.median),
        ms_per_step_ci95=ci, ms_per_micro_step=steps.micro_step_ms(rec), tokens_per_s=tp.tokens_per_s,
        tokens_per_s_per_gpu=tp.tokens_per_s / rec.gpus if tp.tokens_per_s else None, tokens_per_s_low=tp.low,
        tokens_per_s_high=tp.high, tokens_source=tp.source if tp.tokens_per_s is not None else None,
        samples_per_s=throughput.samples_per_s(rec), gpu_busy_ms_per_step=share.gpu_busy_ms,
        host_ms_per_step=share.host_ms, comm_ms_per_step=share.comm_ms, gpu_busy_frac=share.gpu_busy_frac,
        bound=share.bound, profiled_over_steady=share.profiled_over_steady, gpm_busy_ms_per_step=gpm.gpm_busy_ms,
        gpm_host_ms_per_step=gpm.gpm_host_ms, gpm_busy_frac=gpm.gpm_busy_frac, gpm_steps=gpm.gpm_steps or None,
        gpm_over_profiler=gpm.gpm_over_profiler, peak_gib=rec.peak_mem_gib,
        mfu=flops.mfu(rec, tp.tokens_per_s).mfu, host_python_ns=probe.python_ns, host_dispatch_us=probe.dispatch_us,
        host_lora_ms=probe.lora_ms, steady_steps=len(steps.steady_steps(rec)) or None)
    if not rec.ok or not rec.schedule or (rec.global_steps or 0) >= len(rec.schedule):
        return row
    est = quick_estimate.estimate(rec)
    return replace(row, est_full_train_s=est.train_s, est_full_train_s_low=est.train_s_low,
                   est_full_train_s_high=est.train_s_high, est_full_tokens_per_s=est.tokens_per_s,
                   est_full_tokens_per_s_low=est.tokens_per_s_low, est_full_tokens_per_s_high=est.tokens_per_s_high,
                   est_steps=est.fit_steps, est_basis=est.label)


def published_speed_rows(pub: pd.DataFrame) -> list[SpeedRow]:
    """The article's rows: its ms per "step" (one sample) as ms per sample, its tokens/s and peak."""
    return [SpeedRow(hw=hw, experiment=SEED_EXPERIMENT, source="published", status="published", run=PUBLISHED_RUN,
                     labels="published (ms-swift hardware article; its 'step' is one sample)",
                     ms_per_sample=P.value(pub, hw, "ms_per_step"), tokens_per_s=P.value(pub, hw, "tokens_per_s"),
                     peak_gib=P.value(pub, hw, "peak_mem_gib"))
            for hw in P.hardware_with(pub, "ms_per_step")]


def baseline_name(hw: str | None, host: str | None) -> str:
    """How the `baseline` column names a row: its hardware, and its host id where it has one."""
    return f"{hw}" + (f" ({host})" if isinstance(host, str) and host else "")


def _order(values: tuple) -> tuple:
    """A sort key that puts missing values last (as pandas' sort_values does)."""
    return tuple((v is None, v if v is not None else "") for v in values)


def speed_rows(records: list[RunRecord], pub: pd.DataFrame, baseline: str) -> tuple[SpeedRow, ...]:
    """Measured rows (one per hw x experiment x host) and published rows, speed-up versus the baseline, by
    experiment, source and hw.

    Units: the article's "ms per step" is one sample's forward-backward pass, so it sits in `ms_per_sample` beside our
    ms per sample (optimizer-step time / samples per step); `ms_per_step` (an optimizer step) is ours alone.
    speedup, measured rows: analysis.measure.compare.speedup(baseline run, this run).factor (paired step times where
    both trained the same batches, else the tokens/s ratio), `speedup_hosts` saying whether the two runs shared a host;
    published rows: time_speedup(baseline ms per sample, this row's). The baseline is BASELINE's row of the same
    experiment and source, else the slowest (analysis.judge.answer.baseline.pick_baseline). measured_over_published:
    analysis.judge.answer.published.sample_vs_published (our ms per sample / the published ms per sample, same
    hardware).
    """
    by_row: list[tuple[SpeedRow, RunRecord | None]] = [(speed_row(r), r) for r in records]
    by_row += [(row, None) for row in published_speed_rows(pub)]
    groups: dict[tuple, list[int]] = {}
    for i, (row, _) in enumerate(by_row):
        groups.setdefault((row.experiment, row.source), []).append(i)
    for (_, source), members in groups.items():
        pick = pick_baseline([Candidate(str(by_row[i][0].hw), by_row[i][0].source, by_row[i][0].ms_per_sample,
                                        by_row[i][0].tokens_per_s, by_row[i][0].steady_steps) for i in members],
                             baseline)
        if pick is None:
            continue
        base, base_rec = by_row[members[pick]]
        for i in members:
            row, rec = by_row[i]
            name = baseline_name(base.hw, base.host)
            if source == "measured":
                assert base_rec is not None and rec is not None  # measured rows carry their records
                sp = compare.speedup(base_rec, rec)
                row = replace(row, baseline=name, speedup=sp.factor, speedup_basis=sp.how, speedup_hosts=sp.hosts)
            else:
                tsp = compare.time_speedup(base.ms_per_sample, row.ms_per_sample)
                row = replace(row, baseline=name, speedup=tsp.factor, speedup_basis="ms per sample (published)")
            by_row[i] = (row, rec)
    out = []
    for row, rec in by_row:
        if rec is not None and rec.experiment == SEED_EXPERIMENT:
            vs = P.sample_vs_published(rec, pub)
            row = replace(row, published_ms_per_sample=vs.published_ms_per_sample, measured_over_published=vs.ratio)
        out.append(row)
    return tuple(sorted(out, key=lambda r: _order((r.experiment, r.source, r.hw))))


def speed_baselines(rows: tuple[SpeedRow, ...] | list[SpeedRow], records: list[RunRecord]
                    ) -> dict[tuple[str | None, str], tuple[str, float, RunRecord | None]]:
    """(experiment, source) -> (baseline, its ms per sample, its run record among RECORDS; None for published rows):
    the rows of ROWS (speed_rows) that are their experiment's baseline."""
    by_id: dict[tuple, RunRecord] = {(r.hw, r.experiment, r.run): r for r in records}
    out = {}
    for row in rows:
        if row.baseline is not None and baseline_name(row.hw, row.host) == row.baseline \
                and row.ms_per_sample is not None:
            rec = by_id.get((row.hw, row.experiment, row.run)) if row.source == "measured" else None
            out[(row.experiment, row.source)] = (row.baseline, float(row.ms_per_sample), rec)
    return out


@dataclass(frozen=True)
class SpeedPoint:
    """One bar of the speed figure: a successful run's (or a published row's) ms per sample and tokens/s with their
    95 % ranges, and its speed-up against its experiment's baseline (analysis.measure.compare.speedup)."""

    name: str = col("bar", default="")
    hw: str | None = col("GPU class")
    experiment: str | None = col("recipe")
    run: str | None = col("run")
    source: str = col("source", default="measured")
    labels: str | None = col("labels")
    in_tables: bool = col("in the tables", default=True)
    ms: float | None = col("per sample", "ms", "{:.1f}")
    ms_lo: float | None = col("per sample 95 % low", "ms", "{:.1f}")
    ms_hi: float | None = col("per sample 95 % high", "ms", "{:.1f}")
    n_intervals: int | None = col("steady intervals", "", "{:d}")
    tok: float | None = col("throughput", "tokens/s", "{:,.0f}")
    tok_lo: float | None = col("throughput low", "tokens/s", "{:,.0f}")
    tok_hi: float | None = col("throughput high", "tokens/s", "{:,.0f}")
    baseline: str | None = col("baseline")
    speedup: float | None = col("speed-up", "", "{:.2f}")
    speedup_hosts: str | None = col("speed-up hosts")


def speed_points(records: list[RunRecord], rows: tuple[SpeedRow, ...] | list[SpeedRow],
                 in_tables: Callable[[RunRecord], bool], hw_rank: Callable[[str | None], int],
                 picked: list[RunRecord]) -> tuple[SpeedPoint, ...]:
    """Each of RECORDS (successful runs) by experiment, hardware (HW_RANK) and run, then the published rows of ROWS
    (speed_rows of PICKED) by hardware; measured speed-ups against the baseline run of ROWS."""
    base = speed_baselines(rows, picked)
    out = []
    for r in sorted(records, key=lambda r: (r.experiment, hw_rank(r.hw), r.run)):
        st, tp = steps.step_time(r), throughput.throughput(r)
        b = base.get((r.experiment, "measured"))
        per_sample = steps.sample_time_ms(r)
        sp = compare.speedup(b[2], r) if b and b[2] else None
        out.append(SpeedPoint(
            name=f"{r.name} · {'host ' + r.host_id[:6] if r.host_id else 'host ?'}", hw=r.hw,
            experiment=r.experiment, run=r.run, source="measured", labels="; ".join(r.labels),
            in_tables=in_tables(r), ms=per_sample.median, ms_lo=per_sample.ci95_low, ms_hi=per_sample.ci95_high,
            n_intervals=st.n_intervals, tok=tp.tokens_per_s, tok_lo=tp.low, tok_hi=tp.high,
            baseline=b[0] if b else None, speedup=sp.factor if sp else None, speedup_hosts=sp.hosts if sp else None))
    for p in sorted((p for p in rows if p.source == "published"), key=lambda p: hw_rank(p.hw)):
        out.append(SpeedPoint(name=f"{p.hw} · published (per sample)", hw=p.hw, experiment=p.experiment, run=p.run,
                              source="published", labels=p.labels, in_tables=True, ms=p.ms_per_sample,
                              tok=p.tokens_per_s, baseline=p.baseline, speedup=p.speedup))
    return tuple(out)


# ------------------------------------------------------------------------------------------ scaling


@dataclass(frozen=True)
class ScalingRow:
    """One row of the scaling table: an N-GPU run over the 1-GPU run of its hardware, experiment and host
    (analysis.measure.compare.scaling)."""

    hw: str | None = col("GPU class")
    experiment: str | None = col("recipe")
    parallel: str | None = col("parallel")
    host: str | None = col("host id")
    gpus_from: int = col("GPUs from", "", "{:d}", default=1)
    gpus_to: int = col("GPUs to", "", "{:d}", default=1)
    speedup: float | None = col("speed-up", "", "{:.2f}")
    efficiency: float | None = col("efficiency", "", "{:.0%}", band=("efficiency_low", "efficiency_high"))
    efficiency_low: float | None = col("efficiency low", "", "{:.0%}")
    efficiency_high: float | None = col("efficiency high", "", "{:.0%}")
    basis: str | None = col("basis")
    hosts: str | None = col("hosts")
    tokens_per_s_from: float | None = col("throughput from", "tokens/s", "{:,.0f}")
    tokens_per_s_to: float | None = col("throughput to", "tokens/s", "{:,.0f}")
    comm_ms_per_step: float | None = col("communication per profiled step", "ms", "{:.1f}")
    gpu_busy_frac: float | None = col("GPU busy share (profiled)", "", "{:.0%}")
    run_from: str | None = col("run from")
    run_to: str | None = col("run to")
    labels: str | None = col("labels")


def scaling_rows(records: list[RunRecord]) -> tuple[ScalingRow, ...]:
    """Scaling efficiency of every N-GPU run over the 1-GPU run of the same hardware, experiment and host
    (analysis.measure.compare.scaling_pairs: a ratio across hosts measures the hosts, so none is made)."""
    out = []
    for one, many, sc in compare.scaling_pairs(records):
        share = profile.step_share(many)
        out.append(ScalingRow(
            hw=many.hw, experiment=many.experiment, parallel=many.parallel, host=many.host_id,
            gpus_from=sc.gpus_from, gpus_to=sc.gpus_to, speedup=sc.speedup, efficiency=sc.efficiency,
            efficiency_low=sc.efficiency_low, efficiency_high=sc.efficiency_high, basis=sc.basis, hosts=sc.hosts,
            tokens_per_s_from=throughput.throughput(one).tokens_per_s,
            tokens_per_s_to=throughput.throughput(many).tokens_per_s, comm_ms_per_step=share.comm_ms,
            gpu_busy_frac=share.gpu_busy_frac, run_from=one.run, run_to=many.run, labels=labels_text(many)))
    return tuple(out)


@dataclass(frozen=True)
class ScalingBar:
    """One bar of the scaling figure: an N-GPU run's efficiency over its 1-GPU run (a ScalingRow's), with its range."""

    name: str = col("bar", default="")
    efficiency: float | None = col("efficiency", "", "{:.0%}")
    efficiency_low: float | None = col("efficiency low", "", "{:.0%}")
    efficiency_high: float | None = col("efficiency high", "", "{:.0%}")


def scaling_bars(rows: tuple[ScalingRow, ...]) -> tuple[ScalingBar, ...]:
    """Each of ROWS (scaling_rows) as a bar named by its recipe, parallel mode, GPU counts and host."""
    return tuple(ScalingBar(name=f"{r.experiment} · {r.parallel} · {r.gpus_from}->{r.gpus_to} GPUs · host "
                                 f"{str(r.host)[:6]}", efficiency=r.efficiency, efficiency_low=r.efficiency_low,
                            efficiency_high=r.efficiency_high) for r in rows)


# ------------------------------------------------------------------------------------------ convergence


@dataclass(frozen=True)
class ConvergenceRow:
    """One row of the convergence table: a measured run's losses (analysis.measure.loss) or the article's."""

    hw: str | None = col("GPU class")
    experiment: str | None = col("recipe")
    source: str = col("source", default="")
    status: str | None = col("status")
    run: str | None = col("run")
    labels: str | None = col("labels")
    steps: int | float | None = col("steps", "", "{:.0f}")
    final_train_loss: float | None = col("final train loss", "", "{:.4f}")
    final_eval_loss: float | None = col("final eval loss", "", "{:.4f}")
    eval_token_acc: float | None = col("eval token accuracy", "", "{:.4f}")
    loss_drop_per_100_steps: float | None = col("loss drop per 100 steps", "", "{:.3f}")
    steps_to_50pct_drop: int | None = col("steps to half the drop", "", "{:.0f}")
    steps_to_90pct_drop: int | None = col("steps to 90 % of the drop", "", "{:.0f}")
    wall_time_to_last_eval_s: float | None = col("wall time to the last eval", "s", "{:.1f}")


CONVERGENCE_COMPACT = ("hw", "experiment", "source", "steps", "final_train_loss", "final_eval_loss", "eval_token_acc",
                       "steps_to_50pct_drop", "wall_time_to_last_eval_s", "labels")


def convergence_rows(records: list[RunRecord], pub: pd.DataFrame) -> tuple[ConvergenceRow, ...]:
    """Per picked run: steps, final train / eval loss, eval token accuracy, the training loss's drop
    (analysis.measure.loss), wall time to the last eval; and the article's final losses and accuracies; by
    experiment, source and hw."""
    out: list[ConvergenceRow] = []
    for r in records:
        drop = loss.loss_drop_stats(r)
        out.append(ConvergenceRow(
            hw=r.hw, experiment=r.experiment, source="measured", status=r.status, run=r.run, labels=labels_text(r),
            steps=r.global_steps, final_train_loss=loss.final_train_loss(r), final_eval_loss=loss.final_eval_loss(r),
            eval_token_acc=loss.final_eval_token_acc(r), loss_drop_per_100_steps=drop.loss_drop_per_100_steps,
            steps_to_50pct_drop=drop.steps_to_50pct_drop, steps_to_90pct_drop=drop.steps_to_90pct_drop,
            wall_time_to_last_eval_s=loss.wall_time_to_last_eval(r)))
    total_steps = P.value(pub, None, "total_steps")
    for hw in P.hardware_with(pub, "final_eval_loss", legible=False):
        acc = P.value(pub, hw, "final_eval_acc_pct")
        out.append(ConvergenceRow(
            hw=hw, experiment=SEED_EXPERIMENT, source="published", status="published", run=PUBLISHED_RUN,
            labels="published; loss text " + repr(P.text(pub, hw, "final_eval_loss") or "").replace("\\n", " "),
            steps=total_steps, final_eval_loss=P.value(pub, hw, "final_eval_loss"),
            eval_token_acc=acc / 100 if acc else None))
    return tuple(sorted(out, key=lambda r: _order((r.experiment, r.source, r.hw))))


# ------------------------------------------------------------------------------------------ your runs


@dataclass(frozen=True)
class YourRunRow:
    """One of the user's own runs (analysis.judge.answer.your_runs): its metrics as the speed table has them, the
    nearest matrix recipe and the flags that differ."""

    run: str = col("run", default="")
    hw: str | None = col("GPU class")
    experiment: str | None = col("experiment")
    host: str | None = col("host id")
    labels: str | None = col("labels")
    steps: int | None = col("steps", "", "{:d}")
    ms_per_step: float | None = col("optimizer step", "ms", "{:.1f}")
    tokens_per_s: float | None = col("throughput", "tokens/s", "{:.0f}")
    peak_gib: float | None = col("peak", "GiB", "{:.2f}")
    mfu: float | None = col("MFU", "", "{:.1%}")
    final_eval_loss: float | None = col("final eval loss", "", "{:.4f}")
    nearest: str | None = col("nearest matrix recipe")
    differs: str | None = col("flags that differ")


def your_run_rows(records: list[RunRecord]) -> tuple[YourRunRow, ...]:
    """The user's own runs (experiments that are neither the matrix's nor the claims audit's)."""
    by_path = {str(r.path): r for r in records}
    out = []
    for y in your_runs.your_runs(records):
        rec = by_path[y.path]
        sp = speed_row(rec)
        out.append(YourRunRow(run=y.run, hw=y.hw, experiment=y.experiment, host=rec.host_id, labels=labels_text(rec),
                              steps=rec.global_steps, ms_per_step=sp.ms_per_step, tokens_per_s=sp.tokens_per_s,
                              peak_gib=sp.peak_gib, mfu=sp.mfu, final_eval_loss=loss.final_eval_loss(rec),
                              nearest=y.nearest, differs="; ".join(y.differs) or None))
    return tuple(out)
