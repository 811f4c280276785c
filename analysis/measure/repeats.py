"""Repeated runs: how a run was measured (the harness), where it stood in an interleaved set, and the spread of a
figure over runs. The decisions that rest on these (which runs count, which recipe is sooner) are
analysis.judge.answer.recommend's and analysis.judge.answer.pairs'.

- harness: "plain" (the printed command alone: run.json `harness`, or a runner's key without launcher options),
  "launcher" (experiments/launch/launcher.py, harness 2 or later, no profiler in the run), "profiled" (a profiler ran
  inside the timed epoch), "launcher v1" (made before harness 2: a profiler at steps 10-12 and a host-GPU sync per
  step, which made the fast recipe's epoch 34 % longer than the printed command's), "imported" (a user's log).
- a set's place: run.json `round` (experiments/run/rounds.py), None for a run made alone.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from analysis.core.viewfield import col, hidden
from analysis.parse.record import RunRecord
from experiments.base.runfolder import Env, Host, Launcher, Probe, Round, Run, RunKey

PLAIN, LAUNCHER, PROFILED, LAUNCHER_V1, IMPORTED = "plain", "launcher", "profiled", "launcher v1", "imported"


def harness(rec: RunRecord) -> str:
    """How REC was measured (the module's list)."""
    status = rec.run_status
    if status.get(Run.IMPORTED):
        return IMPORTED
    if status.get(Run.HARNESS) == PLAIN or (status.get(Run.KEY) and RunKey.LAUNCHER not in rec.key):
        return PLAIN
    if rec.launcher.get(Launcher.PROFILE_STEPS):
        return PROFILED
    return LAUNCHER if (rec.harness or 0) >= 2 else LAUNCHER_V1


def timed(rec: RunRecord) -> bool:
    """A run whose epoch is the command's own: plain, or through a launcher that adds nothing to the step."""
    return harness(rec) in (PLAIN, LAUNCHER)


@dataclass(frozen=True)
class Place:
    """A run's place in an interleaved set."""

    set: str
    round: int
    of: int | None
    slot: int | None


def place(rec: RunRecord) -> Place | None:
    r = rec.run_status.get(Run.ROUND)
    if not isinstance(r, dict) or not r.get(Round.SET) or not isinstance(r.get(Round.ROUND), int):
        return None
    return Place(str(r[Round.SET]), int(r[Round.ROUND]), r.get(Round.OF), r.get(Round.SLOT))


@dataclass(frozen=True)
class Spread:
    """N values: their median, lowest and highest (a single value is one run: all three equal)."""

    n: int
    median: float
    low: float
    high: float


def spread(values) -> Spread | None:
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return None
    return Spread(len(vals), statistics.median(vals), min(vals), max(vals))


@dataclass(frozen=True)
class ProbePair:
    """The host probe's pure-Python loop (ns/iter; higher: a slower host) before a run (env.json) and right after it
    (run.json `probe_after`)."""

    loop_before: float | None
    loop_after: float | None


def _value(probe: object, part: str) -> float | None:
    if not isinstance(probe, dict):
        return None
    v = (probe.get(part) or {}).get(Probe.VALUE) if isinstance(probe.get(part), dict) else None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def probes(rec: RunRecord) -> ProbePair:
    before = (rec.env.get(Env.HOST) or {}).get(Host.PROBE)
    after = rec.run_status.get(Run.PROBE_AFTER)
    return ProbePair(_value(before, Probe.PYTHON_LOOP), _value(after, Probe.PYTHON_LOOP))


@dataclass(frozen=True)
class HarnessPair:
    """One round's launcher run and plain twin of one recipe on one host (experiments/run/rounds.py): their
    epochs (train_runtime) and the launcher's / the plain one's."""

    experiment: str
    hw: str
    host: str
    set: str
    round: int
    launcher_run: str
    plain_run: str
    launcher_s: float
    plain_s: float
    cold: str | None = None  # "launcher" / "plain": that arm was the host's first run of the recipe (cold caches)

    @property
    def ratio(self) -> float:
        return self.launcher_s / self.plain_s


def harness_pairs(records: list[RunRecord]) -> list[HarnessPair]:
    """Every (set, round, recipe, host) holding a full epoch through the launcher (harness 2) and one of the plain
    twin: what the harness adds to the epoch the pasted command takes."""
    from analysis.measure import jobtime

    slots: dict[tuple, dict[str, RunRecord]] = {}
    for r in records:
        pl = place(r)
        kind = harness(r)
        if pl is None or kind not in (PLAIN, LAUNCHER) or not jobtime.job_time(r).full_epoch:
            continue
        slots.setdefault((r.experiment, r.hw, r.host_id, pl.set, pl.round), {})[kind] = r
    first: dict[tuple, str] = {}  # (recipe, host) -> its first run there, any harness: the one that met cold caches
    for r in records:
        k = (r.experiment, r.host_id)
        if r.host_id and (k not in first or r.run < first[k]):
            first[k] = r.run
    out = []
    for (exp, hw, host, set_name, rnd), got in sorted(slots.items(), key=lambda kv: tuple(map(str, kv[0]))):
        if PLAIN in got and LAUNCHER in got:
            a, b = got[LAUNCHER], got[PLAIN]
            cold = next((kind for kind, r in ((LAUNCHER, a), (PLAIN, b)) if first.get((exp, host)) == r.run), None)
            out.append(HarnessPair(str(exp), str(hw), str(host), set_name, rnd, a.run, b.run,
                                   jobtime.job_time(a).epoch_s, jobtime.job_time(b).epoch_s, cold))
    return out


def overhead(pairs: list[HarnessPair]) -> Spread | None:
    """The launcher's epoch / the plain command's, minus one, over PAIRS (0.05: the harness adds 5 %)."""
    return spread(p.ratio - 1 for p in pairs)


@dataclass(frozen=True)
class RecipeRuns:
    """One recipe's runs on one host by one harness: how many, their epochs (full ones), steady steps (s), start-ups
    (s: the run's wall time outside train_runtime), the run names, and the host probe's spread over them."""

    hw: str
    experiment: str
    host: str
    harness: str
    runs: tuple[str, ...]
    epoch: Spread | None
    steady: Spread | None
    load: Spread | None
    probe_loop: Spread | None


def recipe_runs(records: list[RunRecord]) -> list[RecipeRuns]:
    """The single-GPU matrix runs grouped by (hw, recipe, host, harness), each group's spreads."""
    from analysis.measure import jobtime, steps

    groups: dict[tuple[str, str, str, str], list[RunRecord]] = {}
    for r in records:
        if not r.ok or (r.world_size or 1) != 1 or not r.host_id or r.hw is None or r.experiment is None:
            continue
        groups.setdefault((r.hw, r.experiment, r.host_id, harness(r)), []).append(r)
    out = []
    for (hw, exp, host, kind), runs in sorted(groups.items()):
        runs = sorted(runs, key=lambda r: r.run)
        jts = [jobtime.job_time(r) for r in runs]
        probe_vals = [v for r in runs for v in (probes(r).loop_before, probes(r).loop_after) if v is not None]
        out.append(RecipeRuns(hw, exp, host, kind, tuple(r.run for r in runs),
                              spread(j.epoch_s for j in jts if j.full_epoch),
                              spread(steps.step_time(r).median for r in runs),
                              spread(j.load_s for j in jts if j.full_epoch), spread(probe_vals)))
    return out


# ------------------------------------------------------------------------------------------------ typed views
# The two tables of these figures (`swiftbench tables`, the report's spread section), one row each, rendered by
# analysis.present.view_render (issue 46: no frame or column words assembled in present/).


def _ms(x: float | None) -> float | None:
    return None if x is None else x * 1000


@dataclass(frozen=True)
class RepeatRow:
    """One recipe's runs on one host through one harness (RecipeRuns): count, median and range of the epoch's
    train_runtime, the steady step and the start-up, and the host probe's loop."""

    hw: str = col("GPU class")
    experiment: str = col("recipe")
    host: str = col("host id")
    harness: str = col("harness")
    runs: int = col("runs", "", "{:d}", default=0)
    epoch_s: float | None = col("epoch (median)", "s", "{:.1f}", band=("epoch_low_s", "epoch_high_s"))
    epoch_low_s: float | None = col("epoch low", "s", "{:.1f}")
    epoch_high_s: float | None = col("epoch high", "s", "{:.1f}")
    steady_ms: float | None = col("steady step", "ms", "{:.0f}", band=("steady_low_ms", "steady_high_ms"))
    steady_low_ms: float | None = col("steady step low", "ms", "{:.0f}")
    steady_high_ms: float | None = col("steady step high", "ms", "{:.0f}")
    load_s: float | None = col("start-up", "s", "{:.1f}", band=("load_low_s", "load_high_s"))
    load_low_s: float | None = col("start-up low", "s", "{:.1f}")
    load_high_s: float | None = col("start-up high", "s", "{:.1f}")
    probe_loop_ns_low: float | None = col("host probe loop low", "ns/iter", "{:.0f}")
    probe_loop_ns_high: float | None = col("host probe loop high", "ns/iter", "{:.0f}")
    run_names: str = hidden("run folders", default="")


def repeat_rows(groups: list[RecipeRuns]) -> tuple[RepeatRow, ...]:
    """Each RecipeRuns as a RepeatRow."""
    out = []
    for g in groups:
        e, st, ld, pr = g.epoch, g.steady, g.load, g.probe_loop
        out.append(RepeatRow(
            hw=g.hw, experiment=g.experiment, host=g.host, harness=g.harness, runs=len(g.runs),
            epoch_s=e.median if e else None, epoch_low_s=e.low if e else None, epoch_high_s=e.high if e else None,
            steady_ms=_ms(st.median) if st else None, steady_low_ms=_ms(st.low) if st else None,
            steady_high_ms=_ms(st.high) if st else None, load_s=ld.median if ld else None,
            load_low_s=ld.low if ld else None, load_high_s=ld.high if ld else None,
            probe_loop_ns_low=pr.low if pr else None, probe_loop_ns_high=pr.high if pr else None,
            run_names=", ".join(g.runs)))
    return tuple(out)


@dataclass(frozen=True)
class HarnessRow:
    """One paired round (HarnessPair): the recipe's epoch through the launcher and as the plain command."""

    experiment: str = col("recipe")
    hw: str = col("GPU class")
    host: str = col("host id")
    set: str = col("set")
    round: int = col("round", "", "{:d}", default=0)
    launcher_run: str = col("launcher run", default="")
    plain_run: str = col("plain run", default="")
    launcher_s: float = col("launcher epoch", "s", "{:.2f}", default=0.0)
    plain_s: float = col("plain epoch", "s", "{:.2f}", default=0.0)
    launcher_x_plain: float = col("launcher / plain", "", "{:.3f}", default=0.0)


def harness_rows(pairs: list[HarnessPair]) -> tuple[HarnessRow, ...]:
    """Each HarnessPair as a HarnessRow."""
    return tuple(HarnessRow(experiment=p.experiment, hw=p.hw, host=p.host, set=p.set, round=p.round,
                            launcher_run=p.launcher_run, plain_run=p.plain_run, launcher_s=p.launcher_s,
                            plain_s=p.plain_s, launcher_x_plain=p.ratio) for p in pairs)
