"""A measured step carried to another GPU class kernel by kernel, from the run's own profile (profile.json).

Only H200s are measured here; a time on an A10, RTX 4090, A100 or H100 rests on this model. Public API:

    predict_epoch(rec: RunRecord, hw: str) -> EpochPrediction
        the committed run REC's epoch on class HW (a hardware.yaml key or name): steady_extrapolated_s = its steady step
        on HW x the epoch's optimizer steps (warm-up, evals and saves left out, as measure.steps.epoch_time), low_s /
        high_s (its band time_model.yaml derives from the published cross-GPU ratios: analysis.estimate.anchors),
        step_s and its parts (StepParts: gemm, attention, memory, communication and host seconds), basis (one line
        saying how),
        epoch_s (a full-epoch run only: the epoch's train_runtime, steady_extrapolated_s x its train_runtime / its
        steady steps, i.e. with the warm-up, evals and saves train_runtime counts, scaled like the step; compare it
        with a measured train_runtime). Names (issue 46): epoch_s is always one epoch's train_runtime,
        steady_extrapolated_s a steady step x steps, a job (start-up + epoch) job_s (analysis.estimate.epoch).
        On the run's own class it is the measured steady median (measured=True, no band).
    profile_step(rec) -> ProfiledStep      the run's profiled step in kernel groups, reconciled with its steady median
    step_on(step: ProfiledStep, hw) -> StepParts    one steady step on class HW
    kernel_kind(name) -> str               gemm | attention | communication | memory

A run without a kernel-level profile (made before the launcher recorded kernels only, or never profiled) is
InputError. Formulas in docs/time-model.md, constants (each with kind and source) in data/time_model.yaml.
"""
from __future__ import annotations

import functools
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from analysis.estimate.constants import Constants, read_constants
from analysis.measure.jobtime import job_time
from analysis.measure.profile import profile_windows, steady_share
from analysis.measure.steps import epoch_steps, steady_steps, step_time
from analysis.parse.record import RunRecord
from analysis.parse.runfile_rows import ProfileJson
from experiments.base import hardware
from experiments.base.errors import InputError
from experiments.base.runfolder import Args, GpuOp, Profile
from experiments.base.runfolder import ProfileWindow as W

TIME_MODEL_FILE = hardware.DATA / "time_model.yaml"
KINDS = ("gemm", "attention", "memory", "communication")
CONSTANT_KINDS = ("published", "physical", "measured", "calibrated", "assumption")
HOST_LABEL = "same host assumed"
OPERATOR_PREFIXES = ("aten::", "autograd::", "cudaLaunch", "Optimizer.", "ProfilerStep")


def _problem(name: str, entry: dict) -> str | None:
    if entry.get("kind") not in CONSTANT_KINDS or not entry.get("source"):
        return f"constant {name!r} needs a kind ({', '.join(CONSTANT_KINDS)}) and a source"
    return None


@functools.lru_cache(maxsize=4)
def model_constants(path: str | Path = TIME_MODEL_FILE) -> Constants:
    """time_model.yaml's constants (each with its value and kind); every entry must have a value, a known kind and a
    source."""
    return read_constants(path, _problem)


def profiled_class() -> str:
    """The GPU class every committed profile was made on (time_model.yaml `profiled_class`): the source of the
    time model's steps."""
    return str(model_constants()["profiled_class"])


# ------------------------------------------------------------------------------------------- kernels


def kernel_kind(name: str) -> str:
    """gemm, attention, communication or memory, by the kernel's name (time_model.yaml kernel_kinds, in order)."""
    low = name.lower()
    c = model_constants()
    for kind in ("attention", "gemm", "communication"):
        if any(p in low for p in c[f"kernel_kinds.{kind}"]):
            return kind
    return "memory"


@dataclass(frozen=True)
class KernelGroup:
    """One kernel name's calls and GPU seconds per profiled step (mean over the measured windows); `other kernels`
    is the GPU-busy time the top-15 list does not name, with the rest of the step's GPU events as its calls."""

    name: str
    kind: str
    calls: float
    seconds: float


@dataclass(frozen=True)
class ProfiledStep:
    """A run's measured step taken apart: kernel groups of the profiled steps, the token scale that carries them to
    the run's steady steps, and the host's part as the steady median leaves it.

    busy_s = sum over groups of floors + work x token_scale (the GPU part of a steady step); host_s = steady median -
    busy_s (the GPU's idle time in a step: Python, launches, data; measured on the H200's host). profile_only_s is
    the step the profile gives alone (the profiled steps' own host time + busy_s), which the tracer's cost and the two
    steps' own batches move off the median."""

    run: str
    hw: str
    groups: tuple[KernelGroup, ...]
    windows: int
    profiled_wall_s: float
    profiled_busy_s: float
    profiled_tokens: float | None
    steady_tokens: float | None
    token_scale: float
    steady_step_s: float | None
    busy_s: float
    host_s: float
    profile_only_s: float
    gpm_host_s: float | None
    world_size: int



@dataclass(frozen=True)
class StepParts:
    """Seconds of one steady optimizer step on a class, by kind; host is the H200's (same host assumed)."""

    gemm_s: float
    attention_s: float
    memory_s: float
    communication_s: float
    host_s: float

    @property
    def gpu_s(self) -> float:
        return self.gemm_s + self.attention_s + self.memory_s + self.communication_s

    @property
    def total_s(self) -> float:
        return self.gpu_s + self.host_s


@dataclass(frozen=True)
class EpochPrediction:
    """A committed run's epoch on one GPU class: measured on its own class, else carried there by the time model."""

    run: str
    hw: str
    steady_extrapolated_s: float  # the steady step x the epoch's steps (no warm-up, evaluation or save)
    low_s: float                  # its band
    high_s: float
    step_s: float
    steps: int
    parts: StepParts
    measured: bool
    basis: str
    epoch_s: float | None = None  # the whole epoch as train_runtime counts it (warm-up, evals, saves): a full run's



def split(g: KernelGroup, floor_s: float) -> tuple[float, float]:
    """(floor seconds, work seconds) of a group: each call's first FLOOR_S do not scale with the GPU."""
    if g.calls <= 0:
        return 0.0, g.seconds
    per_call = g.seconds / g.calls
    base = g.calls * min(per_call, floor_s)
    return base, g.seconds - base


def _kernel_level(profile: ProfileJson) -> bool:
    """A profile whose top list names GPU kernels only (the launcher's --profile-activities kernels, recorded with
    `activities`); older profiles list operators with nested, overlapping times."""
    if not profile.get(Profile.ACTIVITIES):
        return False
    return not any(str(op.get(GpuOp.OP, "")).startswith(OPERATOR_PREFIXES)
                   for st in profile.get(Profile.STEPS, []) for op in st.get(W.TOP_GPU_OPS) or [])


def _mean_tokens(by_step: Mapping[int, int], steps) -> float | None:
    values = [by_step[s] for s in steps if s in by_step]
    return statistics.mean(values) if values else None


def profile_step(rec: RunRecord) -> ProfiledStep:
    """REC's profiled step in kernel groups (mean over its measured windows), carried to its steady steps' tokens
    and reconciled with its steady median (the host's part). InputError without a kernel-level profile."""
    gpm = steady_share(rec)
    return step_from_profile(
        f"{rec.hw}/{rec.experiment}/{rec.run}", str(rec.hw), rec.profile or {},
        rec.padded_by_step or rec.tokens_by_step or {},  # what the GPU processed: padding included
        steady_steps(rec), step_time(rec).median, path=rec.path,
        gpm_host_s=gpm.gpm_host_ms / 1000 if gpm.gpm_host_ms is not None else None, world_size=rec.world_size or 1)


def step_from_profile(label: str, hw: str, profile: ProfileJson, tokens_by_step: Mapping[int, int],
                      steady: Sequence[int], median: float | None, *, path: str | Path | None = None,
                      gpm_host_s: float | None = None, world_size: int = 1) -> ProfiledStep:
    """profile_step for any run folder with a launcher-format profile.json (the anchor runs' too): PROFILE's measured
    windows in kernel groups, scaled from the profiled steps' tokens to the STEADY steps' (TOKENS_BY_STEP), the host
    the steady MEDIAN leaves beside them (without a median: the profiled steps' own host time)."""
    windows = [w for w in profile_windows(profile) if w.get(W.GPU_BUSY_S) is not None and w.get(W.TOP_GPU_OPS)]
    if not windows:
        raise InputError(path, f"{label}: no profiled step with GPU kernels (profile.json)")
    if not _kernel_level(profile):
        raise InputError(path, f"{label}: profile.json lists operators, not kernels only (a launcher before "
                               "--profile-activities kernels): no kernel-level time to carry over")
    n = len(windows)
    calls: dict[str, float] = {}
    seconds: dict[str, float] = {}
    rest_calls = rest_s = 0.0
    for w in windows:
        ops = w[W.TOP_GPU_OPS]
        for op in ops:
            calls[op[GpuOp.OP]] = calls.get(op[GpuOp.OP], 0.0) + float(op.get(GpuOp.CALLS) or 0)
            seconds[op[GpuOp.OP]] = seconds.get(op[GpuOp.OP], 0.0) + float(op[GpuOp.GPU_MS]) / 1000
        # busy is the union of kernel intervals; the top list sums kernel durations (overlapping streams of a 2-GPU
        # run can make the sum larger: then no rest)
        rest_s += max(float(w[W.GPU_BUSY_S]) - sum(float(op[GpuOp.GPU_MS]) / 1000 for op in ops), 0.0)
        events = w.get(W.GPU_EVENTS)
        if isinstance(events, int):
            rest_calls += max(events - sum(int(op.get(GpuOp.CALLS) or 0) for op in ops), 0)
    groups = [KernelGroup(name, kernel_kind(name), calls[name] / n, seconds[name] / n) for name in seconds]
    groups.append(KernelGroup("other kernels", "memory", rest_calls / n, rest_s / n))
    wall = statistics.mean(float(w[W.WALL_S]) for w in windows)
    busy_p = statistics.mean(float(w[W.GPU_BUSY_S]) for w in windows)
    prof_tokens = _mean_tokens(tokens_by_step, [w[W.STEP] for w in windows])
    steady_tokens = _mean_tokens(tokens_by_step, steady)
    scale = steady_tokens / prof_tokens if prof_tokens and steady_tokens else 1.0
    floor = model_constants()["kernel_floor_us"] * 1e-6
    busy = 0.0
    for g in groups:
        base, work = split(g, floor)
        busy += base + work * scale
    host = max(median - busy, 0.0) if median else wall - busy_p
    return ProfiledStep(run=label, hw=hw, groups=tuple(groups), windows=n, profiled_wall_s=wall,
                        profiled_busy_s=busy_p, profiled_tokens=prof_tokens, steady_tokens=steady_tokens,
                        token_scale=scale, steady_step_s=median, busy_s=busy, host_s=host,
                        profile_only_s=(wall - busy_p) + busy, gpm_host_s=gpm_host_s, world_size=world_size)


# ------------------------------------------------------------------------------------------- classes


def without_host(label: str) -> str:
    """hw/experiment/run with the run's time stamp only: a run folder's name ends in its host's id, which answers
    (README, report) leave out; notes keep the whole label."""
    hw_exp, _, run = label.rpartition("/")
    stamp = re.match(r"\d{8}-\d{6}", run)
    return f"{hw_exp}/{stamp.group(0)}" if stamp else label


def _arch(spec: hardware.GpuClass) -> str:
    return str(spec.arch or "").split(" ")[0].lower()


def _fraction(table: str, key: str, spec: hardware.GpuClass) -> float:
    c = model_constants()
    own = c.get(f"{table}.classes.{key}")
    if own is not None:
        return float(own)
    value = c.get(f"{table}.{_arch(spec)}")
    if value is None:
        raise InputError(TIME_MODEL_FILE, f"{table}: no value for {key!r} (architecture {spec.arch!r})")
    return float(value)


def effective_tflops(key: str, kind: str) -> float:
    """The class's dense bf16 peak (with FP32 accumulate: hardware.yaml) x the achievable fraction of KIND (gemm,
    attention)."""
    spec = hardware.require(key)
    return spec.peak_tflops * _fraction(f"{kind}_fraction", key, spec)


@dataclass(frozen=True)
class KindRatios:
    """How many times longer each kind of kernel work (KINDS) takes on one class than on another (kind_ratios)."""

    gemm: float
    attention: float
    memory: float
    communication: float

    def of(self, kind: str) -> float:
        """The ratio of KIND (one of KINDS, as kernel_kind names it)."""
        ratios = (self.gemm, self.attention, self.memory, self.communication)
        return ratios[KINDS.index(kind)]


def kind_ratios(src: str, dst: str) -> KindRatios:
    """How many times longer each kind's work takes on DST than on SRC: GEMMs and attention by effective FLOPs,
    memory-bound kernels by bandwidth, communication unchanged."""
    a, b = hardware.require(src), hardware.require(dst)
    return KindRatios(gemm=effective_tflops(src, "gemm") / effective_tflops(dst, "gemm"),
                      attention=effective_tflops(src, "attention") / effective_tflops(dst, "attention"),
                      memory=a.peak_gbs / b.peak_gbs,
                      communication=1.0)


def step_on(step: ProfiledStep, hw: str) -> StepParts:
    """One steady step of STEP's run on class HW: every kernel group's floor kept, its work (at the steady steps'
    tokens) times the class ratio of its kind, and the H200 host's idle time kept (same host assumed)."""
    key = _key(hw)
    ratios = kind_ratios(step.hw, key)
    floor = model_constants()["kernel_floor_us"] * 1e-6
    out = dict.fromkeys(KINDS, 0.0)
    for g in step.groups:
        base, work = split(g, floor)
        out[g.kind] += base + work * step.token_scale * ratios.of(g.kind)
    return StepParts(gemm_s=out["gemm"], attention_s=out["attention"], memory_s=out["memory"],
                     communication_s=out["communication"], host_s=step.host_s)


def _key(hw: str) -> str:
    key = hardware.resolve(hw)
    if key is None:
        raise InputError(hardware.HARDWARE_FILE, f"unknown hardware {hw!r} (known: {', '.join(hardware.table())})")
    spec = hardware.require(key)
    if not spec.bf16_dense_tflops or not spec.bandwidth_gbs:
        raise InputError(hardware.HARDWARE_FILE, f"{key!r} has no bf16 peak or bandwidth to carry a step to")
    return key


def family(key: str) -> str:
    """Class KEY's architecture family (hardware.yaml arch's first word, lower case: hopper, ampere, ada)."""
    return _arch(hardware.require(key))


def band(kind: str = "profiled", key: str | None = None) -> tuple[float, float]:
    """(low, high) relative error a predicted time carries (time_model.yaml): `profiled`, a committed profile carried
    to another class (the published cross-GPU ratios' errors, analysis.estimate.anchors; for class KEY its family's
    band where its family has published checks, family_band); `scaled`, a step built from the reference profiles
    (its errors on the committed H200 runs compounded with those). A predicted time T stands for T / (1 + high) ..
    T / (1 + low), widened to hold T itself."""
    c = model_constants()
    own = c.get(f"family_band.{family(key)}") if kind == "profiled" and key is not None else None
    b = own if own is not None else c["band" if kind == "profiled" else "scaled.band"]
    return float(b["low"]), float(b["high"])


def family_checked(key: str) -> bool:
    """Whether class KEY's family has a band of its own from published checks (time_model.yaml family_band)."""
    return model_constants().get(f"family_band.{family(key)}") is not None


def band_checked(key: str) -> str:
    """What the band of a time carried to class KEY rests on, in words: 'band -8.6%..+8.9% from Ampere checks on the
    A100 only (...)' / 'band -8.6%..+8.9% assumed: no published check of an Ada card' (family_band's checked_on)."""
    own = model_constants().get(f"family_band.{family(key)}")
    fam = family(key).title()
    low, high = band("profiled", key)
    if own is not None:
        return f"band {low:+.1%}..{high:+.1%} from {fam} checks on {own['checked_on']}"
    article = "an" if fam[0] in "AEIOU" else "a"
    return f"band {low:+.1%}..{high:+.1%} assumed: no published check of {article} {fam} card"


def band_range(seconds: float, kind: str = "profiled", key: str | None = None) -> tuple[float, float]:
    """(low, high) seconds of a predicted SECONDS (band; KEY: the class it is predicted on)."""
    low, high = band(kind, key)
    return seconds / (1 + max(high, 0.0)), seconds / (1 + min(low, 0.0))


def runtime_factor(rec: RunRecord) -> float | None:
    """A full-epoch run's train_runtime over its steady median x the epoch's steps: what warm-up, evaluations and
    checkpoint saves add to the steady steps (ms-swift's train_runtime counts them); None for a cut run."""
    job = job_time(rec)
    median = step_time(rec).median
    if not job.full_epoch or not median or not job.epoch_steps:
        return None
    return job.epoch_s / (median * job.epoch_steps)


def predict_epoch(rec: RunRecord, hw: str) -> EpochPrediction:
    """The committed run REC's epoch on class HW (see the module docstring)."""
    key = _key(hw)
    step = profile_step(rec)
    n = epoch_steps(rec)
    if not n:
        raise InputError(rec.path, f"{step.run}: the epoch's optimizer steps are unknown (no summary, no max_steps)")
    parts = step_on(step, key)
    factor = runtime_factor(rec)
    if key == rec.hw and step.steady_step_s:
        epoch = step.steady_step_s * n
        return EpochPrediction(run=step.run, hw=key, steady_extrapolated_s=epoch, low_s=epoch, high_s=epoch,
                               step_s=step.steady_step_s, steps=n, parts=parts, measured=True,
                               basis=f"measured: steady median step of {step.run} x {n} steps",
                               epoch_s=epoch * factor if factor else None)
    low, high = band("profiled", key)
    epoch = parts.total_s * n
    gpus = f" per GPU of {step.world_size}" if step.world_size > 1 else ""
    return EpochPrediction(
        run=step.run, hw=key, steady_extrapolated_s=epoch, low_s=epoch / (1 + max(high, 0.0)),
        high_s=epoch / (1 + min(low, 0.0)), step_s=parts.total_s, steps=n, parts=parts, measured=False,
        basis=(f"modelled from {step.run}'s profile{gpus}: GEMM/attention by effective FLOPs, memory-bound kernels by "
               f"bandwidth, host {parts.host_s:.3f} s as measured on the {step.hw} ({HOST_LABEL}); "
               f"{band_checked(key)}"),
        epoch_s=epoch * factor if factor else None)


@dataclass(frozen=True)
class RuntimePrediction:
    """A full-epoch run's train_runtime on one class: the steady steps carried there (EpochPrediction) plus what the
    run spent outside its steady steps (warm-up, compile, evaluations, saves) as measured on its own host, unscaled:
    that part is the host's (same host assumed), not the GPU's."""

    run: str
    hw: str
    epoch_s: float  # the epoch's train_runtime on HW (analysis.estimate.epoch's EpochEstimate.epoch_s rests on it)
    low_s: float
    high_s: float
    overhead_s: float
    measured: bool
    basis: str


def runtime_on(rec: RunRecord, hw: str) -> RuntimePrediction:
    """REC's train_runtime on class HW: measured on its own class, else predict_epoch's steady epoch + its overhead
    (train_runtime - steady median x steps) as measured, the band on the steady part only. REC must be a full epoch."""
    job = job_time(rec)
    if not job.full_epoch:
        raise InputError(rec.path, f"{rec.run}: not a full epoch, so no train_runtime to carry over")
    runtime = job.epoch_s
    pred = predict_epoch(rec, hw)
    measured_steady = (step_time(rec).median or 0.0) * (job.epoch_steps or 0)
    overhead = max(runtime - measured_steady, 0.0)
    if pred.measured:
        return RuntimePrediction(rec.run, pred.hw, runtime, runtime, runtime, overhead, True,
                                 f"measured: train_runtime of {rec.run}")
    return RuntimePrediction(rec.run, pred.hw, pred.steady_extrapolated_s + overhead, pred.low_s + overhead,
                             pred.high_s + overhead, overhead, False,
                             f"{pred.basis}; plus {overhead:.1f} s outside the steady steps (warm-up, evaluations, "
                             f"saves, compile) as measured on the {rec.hw} ({HOST_LABEL})")


def gemm_floor_ms(rec: RunRecord) -> tuple[float, float] | None:
    """(the matmul floor of REC's steady step in ms, the padded tokens per step it is scaled to): the frozen linears'
    forward and input-gradient GEMMs measured on this project's GPU kind for the model's shapes (time_model.yaml
    gemm_floor), scaled to REC's mean padded tokens over its steady steps. None for another class or model."""
    c = model_constants()
    model = Path(str((rec.args or {}).get(Args.MODEL) or "")).name.lower()
    if rec.hw != c["gemm_floor.hw"] or not model.startswith(c["gemm_floor.model"]):
        return None
    padded, real = rec.padded_by_step or {}, rec.tokens_by_step or {}
    steady = [t for t in (padded.get(s) or real.get(s) for s in steady_steps(rec)) if t]
    if not steady:
        return None
    tokens = statistics.fmean(steady)
    return c["gemm_floor.ms"] * tokens / c["gemm_floor.tokens"], tokens


def transferable(rec: RunRecord) -> bool:
    """Whether REC has a kernel-level profile to carry over (profile_step would not raise)."""
    try:
        profile_step(rec)
    except InputError:
        return False
    return True

