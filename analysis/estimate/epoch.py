"""A recipe's epoch and job on one GPU class from its committed runs: the one owner of that figure. The answer's class
table (analysis.judge.answer.classes), `plan`, `plan --from-args` and `plan --optimize` all ask this module, so one
question gets one time, one band and one basis wherever it is asked (issue 43; the rule is in docs/time-model.md).

- Which runs count (of one recipe's runs: the callers pick them by experiment or by flags and data): single-GPU
  runs of a known host and class, never a plain twin (the harness's check) or an imported log (the user's word
  about its GPU: "Your runs", not a class's figure); per class, the timed
  launcher runs (harness 2) where there is a full epoch of them, else every run (made before the harness fix).
- Measured: the class holds full epochs of the recipe: the median train_runtime over all of them (every host: a
  user gets whichever host the cloud gives), the band their min-max, with the count of runs and hosts.
- Modelled: else the recipe's profiled full epoch on the profiled class (the newest with a kernel-level profile)
  carried over by analysis.estimate.transfer.runtime_on (its steady steps by the kernels, the rest of its
  train_runtime as measured, the band the model's), times the profiled class's measured median over that run's own
  epoch: two classes then compare as the model says, and both rest on the same measured runs.
- Start-up (model load and data preparation, outside train_runtime): the median over the runs the epoch rests on, or
  for a modelled class over the profiled class's runs of the recipe (same host kind assumed). The job is start-up +
  epoch, and a job's cost is what a user pays for.
"""
from __future__ import annotations

from dataclasses import dataclass

from analysis.estimate import transfer
from analysis.measure import jobtime, repeats
from analysis.parse.record import RunRecord
from experiments.base.errors import InputError
from experiments.base.runfolder import MemCap

MEASURED, PROFILED = "measured", "profiled"  # as planner.ClassTime.kind names them


@dataclass(frozen=True)
class EpochEstimate:
    """One recipe's epoch on one class (seconds, with its band), how it was obtained (KIND: measured / profiled /
    scaled / roofline, BASIS in words), what it rests on (RUN, RUNS runs on HOSTS hosts), and the start-up before
    it (None where no run says)."""

    hw: str
    epoch_s: float
    low_s: float
    high_s: float
    kind: str
    basis: str
    run: str | None
    runs: int
    hosts: int
    startup_s: float | None
    startup_basis: str

    @property
    def measured(self) -> bool:
        return self.kind == MEASURED

    @property
    def job_s(self) -> float:
        """What a user waits for and pays: start-up + epoch."""
        return self.epoch_s + (self.startup_s or 0.0)

    @property
    def rests_on(self) -> str:
        """'1 run', '3 runs, one host', '6 runs on 3 hosts': the words every command and the answer print for what a
        figure rests on (one producer)."""
        return runs_text(self.runs, self.hosts)


def runs_text(runs: int, hosts: int) -> str:
    """RUNS full epochs on HOSTS hosts in words (EpochEstimate.rests_on)."""
    if runs == 1:
        return "1 run"
    return f"{runs} runs on {hosts} hosts" if hosts > 1 else f"{runs} runs, one host"



def countable(records: list[RunRecord], timed_only: bool = True) -> list[RunRecord]:
    """The runs a recipe's figures rest on (the module's rule): RECORDS less plain twins, imported logs, multi-GPU
    runs and runs of no known host; per class, the timed launcher runs where RECORDS (one recipe's runs) hold a full
    epoch of them (TIMED_ONLY), else every run."""
    runs = [r for r in records if (r.world_size or 1) == 1 and r.hw is not None and bool(r.host_id)
            and repeats.harness(r) not in (repeats.PLAIN, repeats.IMPORTED)]
    if not timed_only:
        return runs
    timed = {r.hw for r in runs if repeats.harness(r) == repeats.LAUNCHER and jobtime.job_time(r).full_epoch}
    return [r for r in runs if r.hw not in timed or repeats.harness(r) == repeats.LAUNCHER]


def full_epochs(runs: list[RunRecord]) -> list[RunRecord]:
    return sorted((r for r in runs if jobtime.job_time(r).full_epoch), key=lambda r: r.run)


def same_job(runs: list[RunRecord], steps: int) -> list[RunRecord]:
    """RUNS whose epoch has STEPS optimizer steps: the job asked about (a job of other length or more epochs is
    the step model's, not these runs' train_runtime)."""
    return [r for r in runs if jobtime.job_time(r).epoch_steps == steps]


def _startup(runs: list[RunRecord]) -> float | None:
    sp = repeats.spread(jobtime.job_time(r).load_s for r in runs)
    return sp.median if sp else None


def measured_on(runs: list[RunRecord], hw: str) -> EpochEstimate | None:
    """The recipe's measured epoch on HW over its counted full epochs there (countable(RUNS): every host), None
    without any."""
    on = full_epochs([r for r in countable(runs) if r.hw == hw])
    if not on:
        return None
    sp = repeats.spread(jobtime.job_time(r).epoch_s for r in on)
    assert sp is not None  # ON is not empty
    hosts = len({r.host_id for r in on})
    where = f"{sp.n} full epoch{'s' if sp.n != 1 else ''} on {hosts} host{'s' if hosts != 1 else ''}"
    startup = _startup(on)
    return EpochEstimate(hw, sp.median, sp.low, sp.high, MEASURED,
                         f"measured: median train_runtime of {where}" if sp.n > 1 else f"measured: {where}",
                         on[-1].run, sp.n, hosts, startup,
                         f"median of the same runs' start-up ({where})" if startup is not None else "no run says")


def profile_run(runs: list[RunRecord]) -> RunRecord | None:
    """The recipe's full epoch whose kernel-level profile is carried to other classes: the newest on the profiled
    class among RUNS, timed or not (harness 2 profiles only runs that ask, so it may predate the timed runs)."""
    src = transfer.profiled_class()
    full = [r for r in full_epochs(countable(runs, timed_only=False)) if r.hw == src and transfer.transferable(r)]
    return full[-1] if full else None


def modelled_on(runs: list[RunRecord], hw: str, profiled: RunRecord | None = None) -> EpochEstimate | None:
    """The recipe's epoch on HW carried from its profiled full epoch (PROFILED, else profile_run(RUNS)); None without
    one or where the model cannot (the reason is the caller's to say: InputError)."""
    prof = profiled or profile_run(runs)
    if prof is None:
        return None
    p = transfer.runtime_on(prof, hw)
    src = [r for r in full_epochs(countable(runs)) if r.hw == prof.hw] or [prof]
    startup = _startup(src)
    # the model's ratio (this class / the profiled run's own epoch) applied to the profiled class's measured figure:
    # so that two classes compare as the model says, not as the profiled run's host happened to run that day
    home = measured_on(runs, str(prof.hw))
    own = jobtime.job_time(prof).epoch_s
    k = home.epoch_s / own if home is not None and own else 1.0
    basis = p.basis if k == 1.0 else (f"{p.basis}; x {k:.3f}: the {prof.hw}'s measured median "
                                      f"({home.epoch_s:.1f} s over {home.runs} full epochs) over the profiled run's "
                                      f"own {own:.1f} s" if home is not None else p.basis)
    return EpochEstimate(hw, p.epoch_s * k, p.low_s * k, p.high_s * k, MEASURED if p.measured else PROFILED, basis,
                         prof.run, 1, 1, startup,
                         f"median start-up of {len(src)} full epoch{'s' if len(src) != 1 else ''} on the {prof.hw} "
                         "(model load from local disk, same host kind assumed)" if startup is not None
                         else "no run says")


def epoch_on(runs: list[RunRecord], hw: str) -> EpochEstimate | None:
    """The recipe's epoch on HW from RUNS (its committed runs, any class and harness: the module's rule picks):
    measured there, else modelled from its profiled full epoch; None where neither exists. InputError where a
    profile exists but cannot be carried."""
    return measured_on(runs, hw) or modelled_on(runs, hw)


def try_epoch_on(runs: list[RunRecord], hw: str) -> tuple[EpochEstimate | None, str | None]:
    """epoch_on, with the reason it gives none ("no kernel-level profile", or the model's own) instead of raising."""
    try:
        est = epoch_on(runs, hw)
    except InputError as exc:
        return None, f"not modelled: {exc}"
    return est, None if est is not None else "no kernel-level profile to carry over"


def cap_gib(rec: RunRecord) -> float | None:
    """The allocator cap a run trained under (GiB), None where it had none."""
    cap = rec.mem_cap
    if isinstance(cap, dict) and cap.get(MemCap.APPLIED) and isinstance(cap.get(MemCap.REQUESTED_GIB), (int, float)):
        return float(cap[MemCap.REQUESTED_GIB])
    return None


@dataclass(frozen=True)
class MeasuredFit:
    """Whether a recipe is shown to fit CAPACITY GiB by one of its full epochs: FITS (None: no logged peak), the
    peak it rests on and how it was shown."""

    fits: bool | None
    peak_gib: float | None
    basis: str


def measured_fit(runs: list[RunRecord], capacity: float) -> MeasuredFit:
    """A recipe fits a class when one of its full epochs (RUNS, any harness) trained with a logged peak (ms-swift's
    max_memory_reserved) within CAPACITY, uncapped or under an allocator cap at or below it; a peak above it says
    nothing about a smaller card (not shown to fit)."""
    full = full_epochs(countable(runs, timed_only=False))
    capped = [r for r in full if (c := cap_gib(r)) is not None and c <= capacity + 1e-9 and r.peak_mem_gib is not None]
    if capped:
        r = min(capped, key=lambda r: r.peak_mem_gib or 0.0)
        return MeasuredFit(True, r.peak_mem_gib,
                           f"trained under a {cap_gib(r):g} GiB allocator cap (peak {r.peak_mem_gib:.2f} GiB)")
    peaks = [r.peak_mem_gib for r in full if r.peak_mem_gib is not None]
    if not peaks:
        return MeasuredFit(None, None, "no logged peak")
    peak = min(peaks)
    if peak <= capacity:
        return MeasuredFit(True, peak, f"peak {peak:.2f} GiB of {capacity:.2f}")
    return MeasuredFit(False, peak, f"not shown to fit: peak {peak:.2f} GiB > {capacity:.2f}")
