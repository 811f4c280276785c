"""Time to finish the job: a run's whole-epoch train_runtime (ms-swift's own clock, every step, eval and save of the
epoch) with the start-up outside it, and where compiling the model pays for its compile time.

Steady tokens/s ranks recipes by their step; the job is done when the epoch is, and a compiled recipe pays its compile
seconds first, so for a short epoch the eager recipe can finish first although its steady step is slower. The
tables and the report format these numbers; nothing else computes them (tests/test_one_producer.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from analysis.measure.steps import epoch_steps, steady_steps, step_time
from analysis.parse.record import RunRecord
from experiments.base.runfolder import Gpm


def _num(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
        else None


@dataclass(frozen=True)
class JobTime:
    """A run's job: ms-swift's train_runtime_s (None where the log has no summary), load_s (the run's wall time,
    run.json wall_s, outside train_runtime: model load and data preparation before the first step plus the final
    save), the steps it trained and its epoch's (epoch_steps), and full_epoch: it trained its whole epoch and
    finished (only then is train_runtime the time to finish the job)."""

    train_runtime_s: float | None
    load_s: float | None
    steps: int | None
    epoch_steps: int | None
    full_epoch: bool

    @property
    def epoch_s(self) -> float:
        """train_runtime_s of a full epoch: the job's time (asked of a run that is none, an error)."""
        if not self.full_epoch or self.train_runtime_s is None:
            raise ValueError("not a full epoch: its train_runtime is not the job's")
        return self.train_runtime_s


def job_time(rec: RunRecord) -> JobTime:
    """The run's job time (JobTime)."""
    runtime = _num(rec.train_runtime_s)
    wall = _num((rec.run_status or {}).get("wall_s"))
    n = epoch_steps(rec)
    full = bool(rec.ok and rec.complete and runtime and n and (rec.global_steps or 0) >= n)
    load = wall - runtime if wall is not None and runtime is not None and wall >= runtime else None
    return JobTime(runtime, load, rec.global_steps, n, full)


def compile_s(rec: RunRecord) -> float | None:
    """One-time seconds before a run's steady pace: the first logged step's seconds since training began less that
    many steady median steps (for a compiled run: the compile; for an eager one: its first-step warm-up)."""
    median = step_time(rec).median
    if not rec.elapsed or not median:
        return None
    step, seconds = rec.elapsed[0]
    return max(seconds - step * median, 0.0)


def break_even_steps(compiled_step_s: float | None, eager_step_s: float | None,
                     compile_seconds: float | None) -> float | None:
    """The optimizer-step count where a compiled and an eager run finish together: compile seconds / (eager step -
    compiled step). Longer jobs finish sooner compiled, shorter ones eager. None where a part is unknown; inf where
    the compiled step is not faster (compiling never pays)."""
    if not compiled_step_s or not eager_step_s or compile_seconds is None:
        return None
    gain = eager_step_s - compiled_step_s
    return compile_seconds / gain if gain > 0 else math.inf


@dataclass(frozen=True)
class BreakEven:
    """A compiled run against an eager one: their steady median steps, the compiled run's compile seconds (compile_s)
    and the step count where both finish together (break_even_steps)."""

    compiled_step_s: float | None
    eager_step_s: float | None
    compile_s: float | None
    break_even_steps: float | None


def break_even(compiled: RunRecord, eager: RunRecord) -> BreakEven:
    """Break-even of a compiled run against an eager one (BreakEven)."""
    c, e = step_time(compiled).median, step_time(eager).median
    cs = compile_s(compiled)
    return BreakEven(c, e, cs, break_even_steps(c, e, cs))


def epoch_ratio(base_s: float | None, test_s: float | None) -> float | None:
    """How many times sooner an epoch of TEST_S seconds finishes than one of BASE_S: the one producer of every
    "x seed (epoch)" (epoch_x_seed); the steady-step ratio is analysis.measure.compare's (steady_x_seed)."""
    if not base_s or not test_s or base_s <= 0 or test_s <= 0:
        return None
    return base_s / test_s


def job_speedup(base: RunRecord, test: RunRecord) -> float | None:
    """How many times sooner TEST finishes the job than BASE: BASE's train_runtime / TEST's, both whole epochs
    (None otherwise: a cut run's train_runtime is not the job's)."""
    b, t = job_time(base), job_time(test)
    if not (b.full_epoch and t.full_epoch):
        return None
    return epoch_ratio(b.train_runtime_s, t.train_runtime_s)


@dataclass(frozen=True)
class EpochParts:
    """Where a run's train_runtime went, by the launcher's per-step walls (gpm.jsonl, each optimizer step's wall from
    the end of the step before): step 1 (a compiled run's compile), step 2, the steady steps (steady_steps: between
    logged intervals that hold no evaluation or save), the other steps (warm-up, and the steps holding an evaluation
    or a save), and what lies outside every step (train_runtime less their sum: the final evaluation and save, the
    end of training; None without a train_runtime)."""

    first_s: float
    second_s: float | None
    steady_s: float
    steady_n: int
    other_s: float
    other_n: int
    outside_s: float | None
    runtime_s: float | None  # job_time(rec).train_runtime_s, the one producer's


def epoch_parts(rec: RunRecord) -> EpochParts | None:
    """The run's EpochParts; None without per-step walls (no gpm.jsonl: a GPU without GPM, or a CPU run)."""
    walls = {s: float(r[Gpm.WALL_S]) for s, r in (rec.gpm_by_step or {}).items() if r.get(Gpm.WALL_S) is not None}
    if 1 not in walls:
        return None
    steady = set(steady_steps(rec)) & walls.keys() - {1, 2}
    other = [s for s in walls if s not in steady and s > 2]
    runtime = job_time(rec).train_runtime_s
    return EpochParts(walls[1], walls.get(2), sum(walls[s] for s in steady), len(steady),
                      sum(walls[s] for s in other), len(other),
                      runtime - sum(walls.values()) if runtime is not None else None, runtime)
