"""The claims audit's tables for the report: throughput recipes, where a step's time goes, the capacity probes.

Which runs each table shows is data (claims.yaml `figures`); every number is analysis.measure's: tokens/s from
measure.throughput, the x-seed multiple from measure.compare.speedup (unpaired), step times from measure.steps,
profiled steps and busy shares from measure.profile, eval losses through the seed band (analysis.judge.band).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from analysis.core.viewfield import col
from analysis.judge.audit import config
from analysis.judge.audit.select import hw_choice, profiled, seed_baseline
from analysis.judge.band import Runs, loss_check, pick, records_of, rnd, runs_by_experiment
from analysis.measure.compare import CROSS_HOST, host_relation, speedup
from analysis.measure.jobtime import break_even, job_time
from analysis.measure.profile import busy_fraction, profiled_steps
from analysis.measure.steps import step_time
from analysis.measure.throughput import throughput
from analysis.parse.record import RunRecord
from experiments.base.paths import relative
from experiments.base.runfolder import GpuOp, Launcher
from experiments.base.runfolder import ProfileWindow as W
from experiments.recipes import catalog


def _runs(results_dir, hw: str | None, records: list[RunRecord] | None) -> Runs:
    recs = records_of(results_dir, records)
    return runs_by_experiment(results_dir, hw or hw_choice(recs), recs)


@dataclass(frozen=True)
class RecipeClaimRow:
    """One throughput recipe's run (claims.yaml figures.recipes.runs): tokens/s with its 95 % range and the multiple
    of the seed recipe's, peak, the time it took, where compiling pays, the eval loss against the seed band; PATH: its
    folder relative to the checkout, RUN: the folder's name (the report's table; the recipes frame's `run` is PATH)."""

    recipe: str = col("recipe", default="")
    label: str = col("bar", default="")
    flags: str = col("flags", default="")
    cap_gib: float | None = col("allocator cap", "GiB", "{:g}")
    tokens_per_s: float | None = col("throughput", "tokens/s", "{:,.1f}", band=("low", "high"))
    low: float | None = col("throughput low", "tokens/s", "{:,.1f}")
    high: float | None = col("throughput high", "tokens/s", "{:,.1f}")
    steady_x_seed: float | None = col("x seed", "", "{:.2f}")
    steady_x_seed_hosts: str | None = col("x seed hosts")
    steady_steps: int | None = col("steady steps", "", "{:d}")
    tokens_source: str | None = col("tokens counted from")
    peak_gib: float | None = col("peak", "GiB", "{:.2f}")
    steps: int | None = col("optimizer steps", "", "{:d}")
    train_runtime_s: float | None = col("train_runtime", "s", "{:.1f}")
    load_s: float | None = col("start-up", "s", "{:.1f}")
    compile_s: float | None = col("compile", "s", "{:.0f}")
    break_even_vs: str | None = col("break-even against")
    break_even_steps: float | None = col("break-even after", "steps", "{:,.0f}")
    eval_step: int | None = col("eval step", "", "{:d}")
    eval_loss: float | None = col("eval loss", "", "{:.4f}")
    loss_counts: bool | None = col("eval loss in the seed band")
    gpu_busy_frac: float | None = col("GPU busy share (profiled)", "", "{:.0%}")
    host: str | None = col("host")
    labels: str = col("labels", show=False, default="")
    path: str = col("run folder", show=False, default="")
    run: str = col("run", default="")




@dataclass(frozen=True)
class SeedRecipe:
    """The seed recipe's run the throughput recipes are held against: its tokens/s, folder and host."""

    tokens_per_s: float | None = None
    run: str | None = None
    host: str | None = None


def recipe_claim_rows(results_dir, hw: str | None = None, records: list[RunRecord] | None = None
                      ) -> tuple[tuple[RecipeClaimRow, ...], SeedRecipe]:
    """One row per throughput recipe that has a run (claims.yaml figures.recipes.runs): measured tokens/s with its
    95 % range, the multiple of the seed recipe's tokens/s, peak memory, the eval loss at its last eval step and
    whether it stays in the seed band; the time it took (train_runtime over its steps, start-up beside it) and, for a
    compiled recipe with an eager one named in figures.recipes.eager_of, the step count where compiling pays
    (measure.jobtime.break_even); and the seed recipe's run they are held against."""
    fig = config.recipes_figure()
    runs = _runs(results_dir, hw, records)
    seed = seed_baseline(fig.seed_runs, runs)
    seed_tps = throughput(seed).tokens_per_s if seed else None
    base = pick(runs, fig.baseline)
    hidden = set(fig.hide_flags)
    eager_of = fig.eager_of if isinstance(fig.eager_of, dict) else {}
    table = []
    for name in fig.runs:
        rec = pick(runs, name)
        if rec is None:
            continue
        t = throughput(rec)
        xs = speedup(seed, rec, pair=False) if seed and seed_tps and t.tokens_per_s else None
        lc = loss_check(rec, fig.spread, runs)
        flags = {k: v for k, v in rec.overrides.items() if k not in hidden}
        cap = rec.cap_gib
        label = (f"{name} ({fig.baseline_label})" if name == fig.baseline else name) \
            + (f" ({cap:g} GiB cap)" if cap else "")
        if base is not None and host_relation(rec, base) == CROSS_HOST:  # host-bound steps: the host is in the result
            label += " (other host)"
        jt = job_time(rec)
        eager = pick(runs, eager_of[name]) if name in eager_of else None
        be = break_even(rec, eager) if eager is not None else None
        path = relative(rec.path)
        table.append(RecipeClaimRow(
            recipe=name, label=label,
            flags=", ".join(f"{k}={v}" for k, v in flags.items()) or f"({fig.baseline_label})",
            cap_gib=cap, tokens_per_s=rnd(t.tokens_per_s, 1), low=rnd(t.low, 1), high=rnd(t.high, 1),
            steady_x_seed=rnd(xs.factor if xs else None, 2), steady_x_seed_hosts=xs.hosts if xs else None,
            steady_steps=t.steady_steps, tokens_source=t.source, peak_gib=rec.peak_mem_gib, steps=jt.steps,
            train_runtime_s=jt.train_runtime_s, load_s=rnd(jt.load_s, 1),
            compile_s=rnd(be.compile_s if be else None, 1),
            break_even_vs=eager_of.get(name) if eager is not None else None,
            break_even_steps=rnd(be.break_even_steps if be else None, 0), eval_step=lc.eval_step,
            eval_loss=lc.eval_loss, loss_counts=lc.counts, gpu_busy_frac=rnd(busy_fraction(rec), 3), host=rec.host,
            labels="; ".join(rec.labels), path=path, run=path.rsplit("/", 1)[-1]))
    return tuple(table), SeedRecipe(seed_tps, relative(seed.path) if seed else None, seed.host if seed else None)


def recipes_frame(results_dir, hw: str | None = None, records: list[RunRecord] | None = None):
    """recipe_claim_rows as a frame (recipe_frame_of). attrs: seed_tokens_per_s, seed_run, seed_host."""
    return recipe_frame_of(*recipe_claim_rows(results_dir, hw, records))


def recipe_frame_of(rows: tuple[RecipeClaimRow, ...], seed: SeedRecipe):
    """ROWS as the recipes frame (claims_recipes.csv): every field, `run` the folder relative to the checkout."""
    import pandas as pd

    df = pd.DataFrame([{**{k: v for k, v in asdict(r).items() if k not in ("path", "run")}, "run": r.path}
                       for r in rows])
    df.attrs["seed_tokens_per_s"] = seed.tokens_per_s
    df.attrs["seed_run"] = seed.run
    df.attrs["seed_host"] = seed.host
    return df


@dataclass(frozen=True)
class TimeBreakdownRow:
    """One profiled step of a claims.yaml figures.time_breakdown run: wall time, GPU busy time (the union of kernels
    and copies), its share, the host's seconds, the run's unprofiled median step and the operator with the most GPU
    time; PATH: the run's folder (the CSV)."""

    run: str = col("run", default="")
    step: int = col("step", "", "{:d}", default=0)
    wall_s: float | None = col("wall", "s", "{:.4f}")
    gpu_busy_s: float = col("GPU busy", "s", "{:.4f}", default=0.0)
    gpu_busy_frac: float | None = col("GPU busy share", "", "{:.0%}")
    host_s: float | None = col("host", "s", "{:.4f}")
    median_unprofiled_step_s: float | None = col("unprofiled step (median)", "s", "{:.4f}")
    top_op: str | None = col("top GPU operator")
    note: str = col("note", default="")
    path: str = col("run folder", show=False, default="")


def time_breakdown_rows(results_dir, hw: str | None = None, records: list[RunRecord] | None = None
                        ) -> tuple[TimeBreakdownRow, ...]:
    """Where a step's time goes, from the profiled steps of claims.yaml figures.time_breakdown.runs. Runs cut short
    after profiling are included (marked)."""
    runs = _runs(results_dir, hw, records)
    table = []
    for name in config.time_breakdown_figure().runs:
        rec, cut = profiled(runs, name)
        if rec is None:
            continue
        median = rnd(step_time(rec).median, 4)
        for st in profiled_steps(rec):
            ops = st.get(W.TOP_GPU_OPS) or []
            table.append(TimeBreakdownRow(
                run=name, step=st[W.STEP], wall_s=st.get(W.WALL_S), gpu_busy_s=st[W.GPU_BUSY_S],
                gpu_busy_frac=st.get(W.GPU_BUSY_FRAC), host_s=rnd(st["host_s"], 4), median_unprofiled_step_s=median,
                top_op=f"{ops[0][GpuOp.OP]} {ops[0][GpuOp.GPU_MS]:.0f} ms" if ops else None,
                note=f"run cut short afterwards ({rec.failure})" if cut else "", path=relative(rec.path)))
    return tuple(table)


def time_breakdown(results_dir, hw: str | None = None, records: list[RunRecord] | None = None):
    """time_breakdown_rows as a frame."""
    import pandas as pd

    return pd.DataFrame([asdict(r) for r in time_breakdown_rows(results_dir, hw, records)])


def host_time_frame(results_dir, hw: str | None = None, records: list[RunRecord] | None = None):
    """Where the host time of a profiled step goes, for every run profiled with host stacks (the launcher's
    --profile-host-stacks): per run and group of HOST_GROUPS, the main thread's milliseconds per step (its share of
    the profiled wall time), with the wall and GPU-busy milliseconds beside them."""
    import pandas as pd

    from analysis.measure.profile import host_groups

    table = []
    for rec in sorted(records_of(results_dir, records), key=lambda r: str(r.path)):
        g = host_groups(rec) if hw is None or rec.hw == hw else None
        if g is None:
            continue
        for group, share in g.shares.items():
            table.append({"run": f"{rec.experiment} · {rec.run}", "experiment": rec.experiment, "group": group,
                          "ms": round(share * g.wall_ms, 1), "share": share, "wall_ms": round(g.wall_ms, 1),
                          "gpu_busy_ms": None if g.gpu_busy_ms is None else round(g.gpu_busy_ms, 1),
                          "steps": ",".join(map(str, g.steps)), "host": rec.host_id, "path": relative(rec.path)})
    return pd.DataFrame(table)


def capacity_frame(results_dir, hw: str | None = None, records: list[RunRecord] | None = None):
    """Every capacity probe of experiments/recipes/claims/searches.yaml: cap, per-device batch, trained or OOM, peak."""
    import pandas as pd

    runs = _runs(results_dir, hw, records)
    table = []
    for name, srch in catalog.load()["searches"].items():
        cap = srch["launcher"][Launcher.MEM_CAP_GIB]
        # one row of the figure per search: the cap, and what else differs from the seed recipe's shape
        what = [f"{cap:g} GiB cap"]
        if srch["overrides"].get("quant_bits") == 4:
            what.append("QLoRA 4-bit")
        if srch["launcher"].get(Launcher.PAD_TO):
            what.append(f"rows padded to {srch['launcher'][Launcher.PAD_TO]}")
        for b in srch["ladder"]:
            rec = pick(runs, catalog.probe_name(name, b), allow_oom=True)
            if rec is None:
                continue
            table.append({"search": name, "setting": ", ".join(what), "cap_gib": cap, "batch": b,
                          "outcome": "trained" if rec.ok else "OOM",
                          "peak_gib": rec.peak_mem_gib, "path": relative(rec.path)})
    return pd.DataFrame(table)


__all__ = ["recipes_frame", "time_breakdown", "capacity_frame"]
