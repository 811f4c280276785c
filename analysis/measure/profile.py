"""The GPU's share of a step: from the launcher's torch.profiler window (profile.json: busy time and top operators, two
steps) and from NVML's GPM counters read at every step's end (gpm.jsonl: every steady step, no tracer)."""
from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from analysis.measure.steps import steady_steps, step_time
from analysis.parse.record import RunRecord
from analysis.parse.runfile_rows import GpmRow, HostStacks, ProfiledStep, ProfileJson, ProfileWindow, ShareRow
from experiments.base.runfolder import GcSummary, Gpm, Profile, TaskCpu
from experiments.base.runfolder import GpuOp as Op
from experiments.base.runfolder import HostStacks as HS
from experiments.base.runfolder import ProfileWindow as W
from experiments.base.runfolder import StackShare as Share
from experiments.base.runfolder import StackThread as Thread


def measured_windows(rec: RunRecord) -> list[ProfileWindow]:
    """REC's profile.json windows less the warm-up ones (profile_windows)."""
    return profile_windows(rec.profile or {})


def profile_windows(profile: ProfileJson) -> list[ProfileWindow]:
    """profile.json's windows less the warm-up ones (the launcher's --profile-warmup: they absorb the first window's
    one-time cost and count in no figure)."""
    return [s for s in profile.get(Profile.STEPS, []) if not s.get(W.WARMUP)]


def busy_fraction(rec: RunRecord) -> float | None:
    """Median over the profiled steps of GPU busy time (union of kernels and copies) / the step's wall time."""
    fr = [s[W.GPU_BUSY_FRAC] for s in measured_windows(rec) if s.get(W.GPU_BUSY_FRAC) is not None]
    return statistics.median(fr) if fr else None


def profiled_steps(rec: RunRecord) -> list[ProfiledStep]:
    """The measured profiled steps with a GPU busy time: step, wall_s, gpu_busy_s, gpu_busy_frac, host_s,
    top_gpu_ops."""
    out: list[ProfiledStep] = []
    for st in measured_windows(rec):
        if st.get(W.GPU_BUSY_S) is None:
            continue
        out.append({**st, "host_s": st[W.WALL_S] - st[W.GPU_BUSY_S]})
    return out


# A step is host-bound when the GPU is busy less than half of it (it waits for the host more than it computes),
# GPU-bound from 85 % busy, mixed between (the thresholds the claims audit's `bound` rule uses too).
HOST_BELOW = 0.5
GPU_FROM = 0.85


def bound_label(busy_frac: float | None, host_below: float = HOST_BELOW, gpu_from: float = GPU_FROM) -> str | None:
    if busy_frac is None:
        return None
    return "host" if busy_frac < host_below else "gpu" if busy_frac >= gpu_from else "mixed"


@dataclass(frozen=True)
class StepShare:
    """The GPU's share of a step, from the profiled steps (medians): GPU-busy ms, host ms (= profiled wall - GPU busy:
    time the GPU waited for Python, kernel launches and data), their sum (the profiled wall), busy fraction, the
    bound label, how many profiled steps, the profiled wall over the steady median step time (how well the profiled
    steps stand for the run: 1 when they are typical steps and the profiler costs nothing), and the NCCL kernels' ms
    on GPU 0 (launcher runs from 2026-12-01; None before) and their share of the step."""

    gpu_busy_ms: float | None = None
    host_ms: float | None = None
    profiled_ms: float | None = None
    gpu_busy_frac: float | None = None
    bound: str | None = None
    profiled: int = 0
    profiled_over_steady: float | None = None
    comm_ms: float | None = None
    comm_frac: float | None = None


def step_share(rec: RunRecord) -> StepShare:
    """The GPU's share of a step of REC, from its profiled steps (StepShare)."""
    steps = profiled_steps(rec)
    if not steps:
        return StepShare()
    busy = statistics.median(s[W.GPU_BUSY_S] for s in steps) * 1000
    comm_s = [s[W.GPU_COMM_S] for s in steps if s.get(W.GPU_COMM_S) is not None]
    comm = statistics.median(comm_s) * 1000 if comm_s else None
    host = statistics.median(s["host_s"] for s in steps) * 1000
    wall = statistics.median(s[W.WALL_S] for s in steps) * 1000
    frac = busy_fraction(rec)
    median = step_time(rec).median
    return StepShare(busy, host, wall, frac, bound_label(frac), len(steps),
                     wall / (median * 1000) if median else None,
                     comm, comm / wall if comm is not None and wall else None)


def _gpm_busy_s(row: GpmRow) -> float:
    return row[Gpm.WALL_S] * row[Gpm.GRAPHICS_UTIL] / 100


@dataclass(frozen=True)
class GpmStep:
    """One step of gpm.jsonl: its wall seconds, busy_s (= wall x graphics_util), host_s (= wall - busy), sm_util and
    tensor_util (%, None where NVML gave none), and whether the step is steady (in steady_intervals) or profiled."""

    step: int
    wall_s: float
    busy_s: float
    host_s: float
    sm_util: float | None
    tensor_util: float | None
    steady: bool
    profiled: bool


def gpm_step_rows(rec: RunRecord) -> list[GpmStep]:
    """Every step of gpm.jsonl ([] without GPM): the one place a step's GPM busy time is computed."""
    by_step = rec.gpm_by_step or {}
    steady = set(steady_steps(rec))
    profiled = rec.profiled_steps
    return [GpmStep(s, r[Gpm.WALL_S], _gpm_busy_s(r), r[Gpm.WALL_S] - _gpm_busy_s(r), r.get(Gpm.SM_UTIL),
                    r.get(Gpm.TENSOR_UTIL), s in steady, s in profiled) for s, r in sorted(by_step.items())]


@dataclass(frozen=True)
class SteadyShare:
    """The GPU's share of the run's steady steps from GPM (steady_share): busy, host and step ms (means), the busy
    fraction and bound label, how many steps, the SM and tensor utilisation (wall-weighted %), and GPM's busy over
    the profiler's on the profiled steps."""

    gpm_busy_ms: float | None = None
    gpm_host_ms: float | None = None
    gpm_step_ms: float | None = None
    gpm_busy_frac: float | None = None
    gpm_bound: str | None = None
    gpm_steps: int = 0
    gpm_sm_util_pct: float | None = None
    gpm_tensor_util_pct: float | None = None
    gpm_over_profiler: float | None = None


def steady_share(rec: RunRecord) -> SteadyShare:
    """The GPU's share of the run's steady steps from gpm.jsonl (experiments/record/gpm.py), next to step_share's
    profiled two. GPM reads hardware counters at each step's end, so these are the unprofiled steps themselves, with no
    tracer's cost in their host time (a traced seed-recipe step runs 1.1-1.3x). Over the optimizer steps
    of steady_intervals: busy = wall x graphics_util (time a context was active on the GPU), host = wall - busy,
    means (the counter windows join end to end: work queued past a step's end lands in the next step, so sums and
    means hold where single steps do not). gpm_over_profiler: GPM's busy seconds over the profiled steps / the
    profiler's kernel union of the same steps (median); GPM read over the profiler's exact window where profile.json
    has it (`gpm`, launcher runs from 2026-12-02), else the step's gpm.jsonl window, which also holds the profiler's
    stop and summary with the GPU idle. GPM also counts the engine's time between back-to-back kernels, so a
    launch-bound step's tiny kernels read higher. Rank 0's GPU only (experiments/record/gpm.py)."""
    rows = [r for r in gpm_step_rows(rec) if r.steady]
    if not rows:
        return SteadyShare()
    by_step = rec.gpm_by_step or {}  # not None: rows came from it
    wall = sum(r.wall_s for r in rows)
    busy = sum(r.busy_s for r in rows)

    def weighted(values: list[tuple[float | None, float]]) -> float | None:
        have = [(v, w) for v, w in values if v is not None]
        return sum(v * w for v, w in have) / sum(w for _, w in have) if have else None

    ratios = []
    for p in profiled_steps(rec):
        own = p.get(W.GPM) if isinstance(p.get(W.GPM), dict) else None
        window = own if own and own.get(Gpm.GRAPHICS_UTIL) is not None and own.get(Gpm.WALL_S) \
            else by_step.get(p[W.STEP])
        if window and p[W.GPU_BUSY_S]:
            ratios.append(_gpm_busy_s(window) / p[W.GPU_BUSY_S])
    frac = busy / wall
    return SteadyShare(busy / len(rows) * 1000, (wall - busy) / len(rows) * 1000, wall / len(rows) * 1000, frac,
                       bound_label(frac), len(rows), weighted([(r.sm_util, r.wall_s) for r in rows]),
                       weighted([(r.tensor_util, r.wall_s) for r in rows]),
                       statistics.median(ratios) if ratios else None)


def _mean_shares(rows_per_window: Sequence[Sequence[Mapping[str, Any]]], key: str, value: str,
                 top: int) -> list[tuple[str, float]]:
    """Mean of VALUE by KEY over windows (a name missing from a window counts 0 there), largest first: (KEY's
    value, the mean rounded to 4 places)."""
    total: dict[str, float] = {}
    for rows in rows_per_window:
        for r in rows:
            total[r[key]] = total.get(r[key], 0.0) + (r.get(value) or 0.0)
    n = max(len(rows_per_window), 1)
    out = [(k, round(v / n, 4)) for k, v in total.items()]
    out.sort(key=lambda r: -r[1])
    return out[:top]


def _stack_windows(rec: RunRecord) -> list[ProfileWindow]:
    """The measured profiled steps that sampled host stacks (--profile-host-stacks)."""
    return [s for s in measured_windows(rec) if s.get(W.HOST_STACKS)]


def _main_rows(stacks: HostStacks, field: Literal["owner", "package"]) -> list[ShareRow]:
    """FIELD's rows of a window's main thread ([] when it had no busy sample)."""
    main = next((t for t in stacks[HS.THREADS] if t[Thread.THREAD] == "main"), None)
    return [] if main is None else main[field]


@dataclass(frozen=True)
class ThreadShare:
    thread: str
    busy_share: float


@dataclass(frozen=True)
class FrameShare:
    frame: str
    share: float


@dataclass(frozen=True)
class TaskShare:
    task: str
    cpu_share: float


@dataclass(frozen=True)
class GcOnly:
    """A run profiled without host stacks whose windows timed Python's garbage collections."""

    steps: list[int]
    gc_seconds_per_step: float


@dataclass(frozen=True)
class HostBreakdown:
    """Where the host time of the measured profiled steps went (means over those steps): the sampling rate, each
    Python thread's busy share of the step, the main thread's owners (the library frames that asked for the work) and
    packages, the OS's CPU time by thread, and Python's garbage collections per step."""

    steps: list[int]
    rate_hz: float
    threads: list[ThreadShare]
    main_owner: list[FrameShare]
    main_package: list[FrameShare]
    cpu: list[TaskShare] | None
    gc_seconds_per_step: float | None


def host_breakdown(rec: RunRecord, top: int = 8) -> HostBreakdown | GcOnly | None:
    """Where the host time of the measured profiled steps went (the launcher's --profile-host-stacks): each Python
    thread's busy share of the step and, for the main thread, the library frames that asked for the work (`owner`)
    and the packages it was in; the OS's CPU time by thread (threads without Python too, such as the autograd
    engine's); Python's garbage collections. A run profiled without host stacks gives only the garbage collections
    (GcOnly) where its windows timed them, else None."""
    windows = _stack_windows(rec)
    if not windows:
        gc = [s[W.GC] for s in measured_windows(rec) if s.get(W.GC)]
        return None if not gc else GcOnly([], statistics.mean(g[GcSummary.SECONDS] for g in gc))
    stacks = [s[W.HOST_STACKS] for s in windows]
    cpu = [h[HS.CPU] for h in stacks if h.get(HS.CPU) is not None]
    gc = [s[W.GC] for s in windows if s.get(W.GC)]
    return HostBreakdown(
        steps=[s[W.STEP] for s in windows],
        rate_hz=statistics.mean(h[HS.RATE_HZ] for h in stacks if h.get(HS.RATE_HZ)),
        threads=[ThreadShare(*r) for r in _mean_shares([h[HS.THREADS] for h in stacks], Thread.THREAD,
                                                       Thread.BUSY_SHARE, top)],
        main_owner=[FrameShare(*r) for r in _mean_shares([_main_rows(h, Thread.OWNER) for h in stacks], Share.FRAME,
                                                         Share.SHARE, top)],
        main_package=[FrameShare(*r) for r in _mean_shares([_main_rows(h, Thread.PACKAGE) for h in stacks],
                                                           Share.FRAME, Share.SHARE, top)],
        cpu=[TaskShare(*r) for r in _mean_shares(cpu, TaskCpu.TASK, TaskCpu.CPU_SHARE, top)] if cpu else None,
        gc_seconds_per_step=statistics.mean(g[GcSummary.SECONDS] for g in gc) if gc else None)


@dataclass(frozen=True)
class GpuOp:
    """A GPU kernel's mean milliseconds and calls per measured profiled step."""

    op: str
    gpu_ms: float
    calls: float | None


def gpu_ops_per_step(rec: RunRecord, top: int = 8) -> list[GpuOp]:
    """The GPU kernels with the most time per measured profiled step (means over the steps), with calls per step."""
    steps = [s for s in measured_windows(rec) if s.get(W.TOP_GPU_OPS)]
    if not steps:
        return []
    ms = _mean_shares([s[W.TOP_GPU_OPS] for s in steps], Op.OP, Op.GPU_MS, top)
    per = dict(_mean_shares([s[W.TOP_GPU_OPS] for s in steps], Op.OP, Op.CALLS, 10**6))
    return [GpuOp(op, gpu_ms, per.get(op)) for op, gpu_ms in ms]


# The main thread's host time in a few groups, by the library frame that asked torch for the work (host_breakdown's
# `owner`): first matching rule wins, the rest is "other". A share is of the profiled step's wall time.
HOST_GROUPS = (
    # the main thread waits in loss.backward() while the autograd engine's thread runs the backward
    ("backward (autograd engine)", ("accelerate/accelerator.py:backward",)),
    ("attention", ("sdpa_attention", "flex_attention", "repeat_kv")),
    # peft's LoRA layers and ms-swift's wrapper of their forward (swift/tuners/peft.py keep_device_forward); runs
    # installed with pip --target before 2026-12-02 name them lora/... and tuners/...
    ("LoRA layers (peft, ms-swift's wrapper)", ("lora/layer.py", "tuners/")),
    ("inductor's compiled code", ("<inductor>",)),
    ("dynamo guards", ("<string>:guard",)),
    ("Liger / Triton kernels", ("ops/", "triton/")),
    ("model code", ("transformers/models/",)),
)


@dataclass(frozen=True)
class HostGroups:
    """The main thread's share of the profiled step by HOST_GROUPS, with the profiled wall and GPU-busy ms."""

    steps: list[int]
    wall_ms: float
    gpu_busy_ms: float | None
    shares: dict[str, float]


def host_groups(rec: RunRecord) -> HostGroups | None:
    """The main thread's share of the profiled step by HOST_GROUPS (means over the measured steps, from the owners
    the sampler kept, its top 12; the rest of the thread's busy samples count as "other"), with step_share's
    profiled wall and GPU-busy milliseconds; None without host stacks or without a GPU-busy figure (a CPU run)."""
    windows = _stack_windows(rec)
    if not windows:
        return None
    shares: dict[str, float] = {name: 0.0 for name, _ in HOST_GROUPS}
    shares["other"] = 0.0
    for s in windows:
        main = next((t for t in s[W.HOST_STACKS][HS.THREADS] if t[Thread.THREAD] == "main"), None)
        owners = main[Thread.OWNER] if main else []
        listed = 0.0
        for row in owners:
            group = next((name for name, marks in HOST_GROUPS if any(m in row[Share.FRAME] for m in marks)), "other")
            shares[group] += row[Share.SHARE] / len(windows)
            listed += row[Share.SHARE]
        if main:  # owners past the sampler's top list, and busy samples it could not name
            shares["other"] += max(main[Thread.BUSY_SHARE] - listed, 0.0) / len(windows)
    share = step_share(rec)  # the profiled wall and GPU-busy figures have one producer
    if share.profiled_ms is None:
        return None
    return HostGroups([s[W.STEP] for s in windows], share.profiled_ms, share.gpu_busy_ms,
                      {k: round(v, 4) for k, v in shares.items()})
