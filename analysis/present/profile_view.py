"""`swiftbench profile PATH... [--json] [--top N]`: where a run's step time goes, from its profiled steps.

Per run with a profile.json (the launcher's --profile-steps): the GPU's share of the step and the host's
(analysis.measure.profile.step_share), the kernels with the most GPU time, and, for runs profiled with
--profile-host-stacks, where the host time went (host_breakdown): each thread's busy share, the main thread's library
frames and packages, CPU time by OS thread, and Python's garbage collections. Runs without a profile are listed as
such, with their steady steps' GPU share from GPM where they have gpm.jsonl. Every figure is a mean or median over
the measured profiled steps (warm-up windows left out). Every run with the launcher's per-step walls also says where
its train_runtime went (analysis.measure.jobtime.epoch_parts; text only, not in --json).
"""
from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from analysis.estimate.transfer import gemm_floor_ms
from analysis.measure.jobtime import epoch_parts
from analysis.measure.profile import (
    GcOnly,
    GpuOp,
    HostBreakdown,
    SteadyShare,
    StepShare,
    gpu_ops_per_step,
    host_breakdown,
    measured_windows,
    steady_share,
    step_share,
)
from analysis.measure.steps import step_time
from analysis.parse.record import RunRecord
from analysis.present.parse_view import records
from experiments.base.errors import SKIPPED_EXIT
from experiments.base.paths import relative
from experiments.base.runfolder import Profile
from experiments.base.runfolder import ProfileWindow as W
from experiments.base.userfiles import shown


def register(sub) -> None:
    p = sub.add_parser("profile", help="where a run's step time goes: GPU busy, top kernels, host stacks")
    p.add_argument("path", nargs="+", help="run folders, or parents of several")
    p.add_argument("--json", action="store_true", help="print a JSON list, one object per profiled run")
    p.add_argument("--top", type=_positive, default=6, help="rows per list (default 6)")
    p.set_defaults(func=run)


def _positive(text: str) -> int:
    import argparse

    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"wants a whole number >= 1, got {text!r}")
    return n


@dataclass(frozen=True)
class ProfileSummary:
    """One run's profile figures (profile_summary): the measure stage's values, gathered for printing and --json."""

    path: str | None
    experiment: str | None
    steps: list[int]
    share: StepShare
    steady: SteadyShare
    steady_step_ms: float | None
    gemm_floor_ms: float | None
    gemm_floor_tokens: float | None
    activities: list | None
    top_gpu_ops: list[GpuOp]
    host: HostBreakdown | GcOnly | None


def profile_summary(rec: RunRecord, top: int) -> ProfileSummary | None:
    """One run's profile figures, or None when it has no measured profiled step."""
    windows = measured_windows(rec)
    if not windows:
        return None
    floor = gemm_floor_ms(rec)
    return ProfileSummary(relative(rec.path) if rec.path else None, rec.experiment, [s[W.STEP] for s in windows],
                          step_share(rec), steady_share(rec), (step_time(rec).median or 0) * 1000 or None,
                          floor[0] if floor else None, floor[1] if floor else None,
                          (rec.profile or {}).get(Profile.ACTIVITIES), gpu_ops_per_step(rec, top),
                          host_breakdown(rec, top))


def _pct(x) -> str:
    return "-" if x is None else f"{x:.0%}"


def _ms(x) -> str:
    return "-" if x is None else f"{x:,.1f}"


def _gpm_split(g: SteadyShare) -> str:
    return (f"(GPM counters, {g.gpm_steps} steps, means): GPU busy {_ms(g.gpm_busy_ms)}, host {_ms(g.gpm_host_ms)} "
            f"ms ({_pct(g.gpm_busy_frac)} busy, {g.gpm_bound or '-'}-bound)")


def _print(console, p: ProfileSummary) -> None:
    from rich.table import Table

    s = p.share
    head = (f"steps {', '.join(map(str, p.steps))} (medians): profiled {_ms(s.profiled_ms)} ms, GPU busy "
            f"{_ms(s.gpu_busy_ms)}, host {_ms(s.host_ms)} ms ({_pct(s.gpu_busy_frac)} busy, "
            f"{s.bound or '-'}-bound); profiled / steady step "
            f"{'-' if s.profiled_over_steady is None else format(s.profiled_over_steady, '.2f')}")
    console.print(f"[bold]{p.path}[/bold]\n  {head}")
    g = p.steady
    if g.gpm_steps:
        console.print(f"  steady steps, unprofiled {_gpm_split(g)}; GPM / profiler busy over the profiled steps "
                      f"{'-' if g.gpm_over_profiler is None else format(g.gpm_over_profiler, '.2f')}")
    if p.gemm_floor_ms and p.steady_step_ms:
        console.print(f"  GEMM floor (the frozen linears' forward and input-grad GEMMs alone, measured on this GPU "
                      f"kind) at this run's {p.gemm_floor_tokens:,.0f} padded tokens per step: "
                      f"{_ms(p.gemm_floor_ms)} ms; the steady step {_ms(p.steady_step_ms)} ms is "
                      f"{p.steady_step_ms / p.gemm_floor_ms:.2f}x it, "
                      f"{_ms(p.steady_step_ms - p.gemm_floor_ms)} ms above")
    if p.top_gpu_ops:
        t = Table(title="GPU kernels (ms per step)", title_justify="left")
        t.add_column("kernel")
        t.add_column("ms", justify="right")
        t.add_column("calls", justify="right")
        for r in p.top_gpu_ops:
            t.add_row(r.op[:90], _ms(r.gpu_ms), f"{r.calls:.0f}" if r.calls is not None else "-")
        console.print(t)
    h = p.host
    if not isinstance(h, HostBreakdown) or not h.steps:
        gc = h.gc_seconds_per_step if h is not None else None
        console.print("  no host stacks (profile with --profile-host-stacks)"
                      + (f"; garbage collection {gc:.3f} s per profiled step" if gc is not None else ""))
        return
    t = Table(title=f"host: share of the step (stack samples at ~{h.rate_hz:.0f}/s)", title_justify="left")
    t.add_column("what")
    t.add_column("share", justify="right")
    for th in h.threads:
        t.add_row(f"thread {th.thread} busy (frames)", _pct(th.busy_share))
    for o in h.main_owner:
        t.add_row(f"  main in {o.frame}", _pct(o.share))
    for c in h.cpu or []:
        t.add_row(f"CPU time of OS thread {c.task}", _pct(c.cpu_share))
    if h.gc_seconds_per_step is not None:
        t.add_row("garbage collection (s per step)", f"{h.gc_seconds_per_step:.3f}")
    console.print(t)


def run(args) -> int:
    skipped: list[tuple[Path, str]] = []
    recs = [rec for path in args.path for rec in records(path, skipped)]
    for folder, why in skipped:
        print(shown(f"swiftbench: skipped {relative(folder)}: {why}"), file=sys.stderr)
    done = SKIPPED_EXIT if skipped else 0
    profiles = [(rec, profile_summary(rec, args.top)) for rec in recs]
    if args.json:
        print(json.dumps([asdict(p) for _, p in profiles if p is not None], indent=2))
        return done
    from rich.console import Console

    console = Console() if sys.stdout.isatty() else Console(width=160)
    for rec, p in profiles:
        if p is None:
            console.print(f"{relative(rec.path) if rec.path else rec}: no profiled step")
            g = steady_share(rec)
            if g.gpm_steps:
                console.print(f"  steady steps {_gpm_split(g)}")
        else:
            _print(console, p)
        _print_parts(console, rec)
    return done


def _print_parts(console, rec: RunRecord) -> None:
    """Where train_runtime went, by the launcher's per-step walls (jobtime.epoch_parts), where the run has them."""
    e = epoch_parts(rec)
    if e is None:
        return
    second = "-" if e.second_s is None else f"{e.second_s:,.1f}"
    outside = "-" if e.outside_s is None else f"{e.outside_s:,.1f}"
    runtime = "-" if e.runtime_s is None else f"{e.runtime_s:,.1f}"
    console.print(f"  train_runtime {runtime} s by the per-step walls: step 1 {e.first_s:,.1f} s, step 2 {second} s, "
                  f"{e.steady_n} steady steps {e.steady_s:,.1f} s, {e.other_n} other steps (warm-up, evaluation, "
                  f"save) {e.other_s:,.1f} s, outside the steps {outside} s")
