"""A quick run's estimate (analysis.estimate.quick) against the full run made after it on the same host, and
`swiftbench quick`: the error, split into the parts that add up to it, and how the full run repeated the quick run's
very same steady steps (what one run cannot know about the next). Formulas: docs/metrics.md, "Quick-run estimate".
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from analysis.estimate.quick import EventCosts, QuickEstimate, estimate, events, line_elapsed, measured_event_costs
from analysis.measure import steps as measure_steps
from analysis.parse.record import RunRecord
from analysis.parse.runfile_rows import ScheduleStep
from experiments.base.runfolder import Tokens as T

MIN_SAME_INTERVALS = 3  # same_steps: a ratio rests on at least this many steady intervals both runs have


@dataclass(frozen=True)
class ScheduleCheck:
    """The schedule's per-step token counts against a run's tokens.jsonl: steps compared, those that differ, the
    steps recorded and scheduled."""

    compared: int
    differ: list[int]
    recorded: int
    scheduled: int


def schedule_vs_tokens(schedule: list[ScheduleStep], full: RunRecord) -> ScheduleCheck:
    """The predicted per-step token counts against those FULL's tokens.jsonl recorded, step by step."""
    rec_tokens, rec_padded = full.tokens_by_step or {}, full.padded_by_step or {}
    diff = [s[T.STEP] for s in schedule if s[T.STEP] in rec_tokens and (
        rec_tokens[s[T.STEP]] != s[T.TOKENS] or rec_padded.get(s[T.STEP], s[T.PADDED_TOKENS]) != s[T.PADDED_TOKENS])]
    return ScheduleCheck(sum(1 for s in schedule if s[T.STEP] in rec_tokens), diff, len(rec_tokens), len(schedule))


@dataclass(frozen=True)
class SameStepRow:
    """One steady interval two runs both have: its steps, each run's seconds and, where gpm.jsonl covers its steps in
    both runs, each run's GPU-active and host seconds (analysis.measure.profile.gpm_step_rows), else None."""

    from_step: int
    to_step: int
    first_s: float
    second_s: float
    first_busy_s: float | None
    first_host_s: float | None
    second_busy_s: float | None
    second_host_s: float | None


def same_step_rows(first: RunRecord, second: RunRecord) -> list[SameStepRow]:
    """The steady intervals both runs have (the same from and to steps: the same batches; analysis.measure.steps).
    Intervals match on their exact steps, so two runs logged at different logging_steps share none."""
    from analysis.measure.profile import gpm_step_rows

    a = {(iv.from_step, iv.to_step): iv.seconds for iv in measure_steps.steady_intervals(first)}
    b = {(iv.from_step, iv.to_step): iv.seconds for iv in measure_steps.steady_intervals(second)}
    ga = {r.step: r for r in gpm_step_rows(first)}
    gb = {r.step: r for r in gpm_step_rows(second)}
    rows = []
    for f, t in sorted(set(a) & set(b)):
        steps = range(f + 1, t + 1)
        if all(s in ga and s in gb for s in steps):
            rows.append(SameStepRow(f, t, a[(f, t)], b[(f, t)], sum(ga[s].busy_s for s in steps),
                                    sum(ga[s].host_s for s in steps), sum(gb[s].busy_s for s in steps),
                                    sum(gb[s].host_s for s in steps)))
        else:
            rows.append(SameStepRow(f, t, a[(f, t)], b[(f, t)], None, None, None, None))
    return rows


@dataclass(frozen=True)
class SameSteps:
    """How a run repeats another over their common steady intervals: how many and their steps, the second's seconds
    over the first's, and the same ratio of the GPU-active and of the host seconds (None under MIN_SAME_INTERVALS
    common intervals, or without gpm.jsonl in both)."""

    intervals: int
    steps: int
    ratio: float | None = None
    busy_ratio: float | None = None
    host_ratio: float | None = None


def same_steps(first: RunRecord, second: RunRecord) -> SameSteps:
    """How SECOND, a run of the same schedule, repeats FIRST over the very same batches (same_step_rows): what no
    estimate from FIRST can know (on the committed H200 pairs the GPU-active part repeats, the host part does not)."""
    rows = same_step_rows(first, second)
    out = SameSteps(len(rows), sum(r.to_step - r.from_step for r in rows))
    if len(rows) < MIN_SAME_INTERVALS:
        return out
    ratio = sum(r.second_s for r in rows) / sum(r.first_s for r in rows)

    def part_ratio(first_s: list[float | None], second_s: list[float | None]) -> float | None:
        den = sum(x or 0.0 for x in first_s)
        return sum(x or 0.0 for x in second_s) / den if den > 0 else None

    if not all(r.first_busy_s is not None for r in rows):
        return SameSteps(out.intervals, out.steps, ratio)
    return SameSteps(out.intervals, out.steps, ratio,
                     part_ratio([r.first_busy_s for r in rows], [r.second_busy_s for r in rows]),
                     part_ratio([r.first_host_s for r in rows], [r.second_host_s for r in rows]))


@dataclass(frozen=True)
class ErrorParts:
    """The estimate's error in seconds, in three parts that add up to it (error_parts)."""

    to_anchor_s: float
    steps_s: float
    events_s: float


def error_parts(est: QuickEstimate, schedule: list[ScheduleStep], full: RunRecord) -> ErrorParts | None:
    """Where the estimate's error (predicted - measured training time, seconds) comes from, in three parts that add
    up to it: `to_anchor` (the quick run's measured time to its anchor step a, less the warm-up and one-time excess,
    against the full run's time to the same step), `steps` (the model against the full run's intervals after a that
    hold no evaluation or save) and `events` (the charged evaluations, saves and end, against the full run's
    intervals that hold them, less their modelled steps, and its time after the last training line). An interval
    holds an event at e when from_step <= e < to_step (analysis.measure.steps' rule), whatever else it is labelled;
    with logging_steps > 1 the model's error on the other steps of such an interval lands in `events`. None where
    the full run did not log step a and its last step (SCHEDULE: the quick run's, which the estimate priced)."""
    if est.train_s is None or full.train_runtime_s is None or est.model is None:
        return None
    model = est.model
    line = line_elapsed(full)
    a, last = est.anchor_step, len(schedule)
    if a not in line or last not in line:
        return None

    def model_s(f: int, t: int) -> float:
        return sum(model.step_s(schedule[s - 1]) for s in range(f + 1, t + 1))

    events_at = sorted(full.event_steps)
    with_events: list[measure_steps.Interval] = []
    plain: list[measure_steps.Interval] = []
    for iv in measure_steps.intervals(full):
        if iv.from_step >= a:  # an event at e with from_step <= e < to_step: the interval holds it
            (with_events if measure_steps.any_in(events_at, iv.from_step, iv.to_step) else plain).append(iv)
    to_anchor = (est.parts["measured_to_anchor_s"] - est.parts["warmup_excess_s"]
                 - est.parts.get("one_time_excess_s", 0.0) - line[a])
    steps = sum(model_s(iv.from_step, iv.to_step) - iv.seconds for iv in plain)
    charged = est.parts["evals_s"] + est.parts["saves_s"]
    evs = charged + sum(model_s(iv.from_step, iv.to_step) - iv.seconds for iv in with_events) \
        - (full.train_runtime_s - line[last])
    return ErrorParts(to_anchor, steps, evs)


def full_event_costs(est: QuickEstimate, schedule: list[ScheduleStep], full: RunRecord) -> EventCosts | None:
    """The full run's own evaluations, saves and end, measured as the estimate measured the quick run's
    (measured_event_costs, its steps priced by the quick run's model): what its events cost beside what they were
    charged (`parts`: eval_costs_measured, save_costs_measured, end_cost_measured)."""
    if est.model is None or not schedule:
        return None
    return measured_event_costs(full, est.model, schedule, events(full.args or {}, len(schedule), False)[1])


def first_on_host(rec: RunRecord, records: list[RunRecord]) -> bool | None:
    """Is REC the first run of RECORDS on its host (host ids hold the boot id: a machine's first run after its start)?
    None without a host id."""
    if not rec.host_id:
        return None
    return not any(r.host_id == rec.host_id and r.run < rec.run for r in records if r is not rec)


@dataclass(frozen=True)
class Unpaired:
    """A quick run's estimate where no full run was made beside it: its steps, form, predicted training time and
    steady tokens/s with their 95 % ranges, its wall time, notes, whether it was its host's first run, and what the
    prediction is made of (`model`: the fitted coefficients and every form's held-out error; `parts`: the measured
    prefix, the excess left out, the modelled steps, the events)."""

    experiment: str | None
    hw: str | None
    quick_run: str
    full_run: None
    quick_steps: int | None
    fit_steps: int | None
    form: str | None
    predicted_train_s: float | None
    low: float | None
    high: float | None
    predicted_tokens_per_s: float | None
    tokens_per_s_low: float | None
    tokens_per_s_high: float | None
    quick_wall_s: float | None
    notes: str
    first_on_host: bool | None
    model: dict[str, Any] | None
    parts: dict


@dataclass(frozen=True)
class Paired:
    """A quick run's estimate against the full run it predicts (compare)."""

    experiment: str | None
    hw: str | None
    quick_run: str
    full_run: str
    same_host: bool
    full_first: bool               # the full run was made before the quick run (the last one before it)
    quick_steps: int | None
    fit_steps: int | None
    full_steps: int | None
    form: str | None
    predicted_train_s: float | None
    low: float | None
    high: float | None
    measured_train_s: float | None
    error_pct: float | None
    inside: bool | None
    predicted_tokens_per_s: float | None
    tokens_per_s_low: float | None
    tokens_per_s_high: float | None
    measured_tokens_per_s: float | None
    tokens_per_s_error_pct: float | None
    quick_wall_s: float | None
    notes: str
    same_steps: SameSteps
    error_parts: ErrorParts | None
    full_event_costs: EventCosts | None
    model: dict[str, Any] | None
    parts: dict
    tokens_compared: int | None = None
    tokens_differ: int | None = None
    first_on_host: bool | None = None


def compare(quick_rec: RunRecord, full: RunRecord, est: QuickEstimate | None = None,
            records: list[RunRecord] | None = None) -> Paired:
    """A quick run's estimate against the full run it predicts: training time (train_runtime) and steady tokens/s
    (analysis.measure.throughput), the error and whether the measured value lies in the 95 % range, and the schedule
    against the full run's tokens.jsonl. RECORDS: the runs its host's first is looked for in."""
    from analysis.measure import throughput

    est = est or estimate(quick_rec)
    measured = full.train_runtime_s
    tp = throughput.throughput(full).tokens_per_s
    error = inside = tokens_error = None
    if est.train_s is not None and measured:
        error = (est.train_s - measured) / measured * 100
        if est.train_s_low is not None and est.train_s_high is not None:  # set together
            inside = est.train_s_low <= measured <= est.train_s_high
    if est.tokens_per_s is not None and tp:
        tokens_error = (est.tokens_per_s - tp) / tp * 100
    check = schedule_vs_tokens(quick_rec.schedule, full) if quick_rec.schedule else None
    return Paired(
        quick_rec.experiment, quick_rec.hw, quick_rec.run, full.run,
        bool(quick_rec.host_id and quick_rec.host_id == full.host_id), full.run < quick_rec.run,
        est.steps_run, est.fit_steps, full.global_steps, est.model.form if est.model else None,
        est.train_s, est.train_s_low, est.train_s_high, measured, error, inside,
        est.tokens_per_s, est.tokens_per_s_low, est.tokens_per_s_high, tp, tokens_error,
        (quick_rec.run_status or {}).get("wall_s"), "; ".join(est.notes), same_steps(quick_rec, full),
        error_parts(est, quick_rec.schedule or [], full), full_event_costs(est, quick_rec.schedule or [], full),
        est.model.summary() if est.model else None, est.parts,
        check.compared if check else None, len(check.differ) if check else None,
        first_on_host(quick_rec, records) if records is not None else None)


def pairs(records: list[RunRecord]) -> list[tuple[RunRecord, RunRecord | None]]:
    """Each quick run with the full run it predicts: the same hardware, experiment and host, complete with every step
    of the schedule, not a quick run, the first made after it; where none was, the last made before it (a quick run
    on a machine that had already run the recipe to the end: compare's full_first); None where there is neither."""
    out = []
    for q in sorted((r for r in records if r.quick and r.ok), key=lambda r: r.run):
        full = [r for r in records if r.ok and not r.quick and (r.hw, r.experiment) == (q.hw, q.experiment)
                and r.host_id == q.host_id and r.run != q.run and q.schedule
                and r.global_steps == len(q.schedule)]
        after = [r for r in full if r.run > q.run]
        out.append((q, min(after, key=lambda r: r.run) if after else max(full, key=lambda r: r.run, default=None)))
    return out


def comparison_table(results_dir=None, records: list[RunRecord] | None = None) -> list[Paired | Unpaired]:
    """One row per quick run under RESULTS_DIR (or of RECORDS, already read): its estimate and, where a full run
    followed it, the comparison."""
    if records is None:
        from analysis.parse.results import collect

        records = collect(results_dir)
    rows: list[Paired | Unpaired] = []
    for q, full in pairs(records):
        est = estimate(q)
        if full is not None:
            rows.append(compare(q, full, est, records))
        else:
            rows.append(Unpaired(q.experiment, q.hw, q.run, None, est.steps_run, est.fit_steps,
                                 est.model.form if est.model else None, est.train_s, est.train_s_low,
                                 est.train_s_high, est.tokens_per_s, est.tokens_per_s_low, est.tokens_per_s_high,
                                 (q.run_status or {}).get("wall_s"), "; ".join(est.notes),
                                 first_on_host(q, records), est.model.summary() if est.model else None, est.parts))
    return rows


@dataclass(frozen=True)
class PairError:
    """One quick/full pair as data/quick_pairs.yaml lists it: log(measured / predicted) of the training time and of
    the steady tokens/s."""

    experiment: str | None
    hw: str | None
    quick_run: str
    full_run: str
    train_s: float
    tokens_per_s: float


def pair_errors(rows: list[Paired | Unpaired]) -> list[PairError]:
    """The pairs of comparison_table's ROWS that have a full run and both figures, as quick_pairs.yaml lists them."""
    return [PairError(r.experiment, r.hw, r.quick_run, r.full_run,
                      math.log(r.measured_train_s / r.predicted_train_s),
                      math.log(r.measured_tokens_per_s / r.predicted_tokens_per_s))
            for r in rows if isinstance(r, Paired) and r.measured_train_s and r.predicted_train_s
            and r.measured_tokens_per_s and r.predicted_tokens_per_s]


def as_json(row: Paired | Unpaired) -> dict[str, Any]:
    """A row of comparison_table as `swiftbench quick --json` and the report's table take it: a pair's schedule
    check's two keys only where the quick run had a schedule, whether it was its host's first run last."""
    out = asdict(row)
    if not isinstance(row, Paired):
        return out
    on_host = out.pop("first_on_host")
    if row.tokens_compared is None:
        del out["tokens_compared"], out["tokens_differ"]
    return {**out, "first_on_host": on_host}


# ------------------------------------------------------------------------------------------------ CLI


def register(sub) -> None:
    p = sub.add_parser("quick", help="quick runs' estimates of the full run, against the full runs where made")
    p.add_argument("results_dir", help="results/ (results/<hw>/<experiment>/<run>/)")
    p.add_argument("--json", action="store_true",
                   help="print the comparison as a JSON list, one object per quick run (its estimate, the full run)")
    p.set_defaults(func=run)


def _fmt(v, spec: str = ".1f") -> str:
    return "–" if v is None else format(v, spec)


def _yes_no(v) -> str:
    return "–" if v is None else ("yes" if v else "no")


def _parts_cell(parts: ErrorParts | None) -> str:
    """`+4.8 / +2.4 / +1.9`: error_parts' seconds, which add up to the error."""
    if not parts:
        return "–"
    return " / ".join(f"{x:+.1f}" for x in (parts.to_anchor_s, parts.steps_s, parts.events_s))


def _same_steps_cell(same: SameSteps | None) -> str:
    """`0.728 over 27 steps (GPU 1.00, host 0.61)`; – where the runs share too few steady intervals."""
    if not same or same.ratio is None:
        return "–"
    split = (f" (GPU {same.busy_ratio:.2f}, host {same.host_ratio:.2f})"
             if same.busy_ratio is not None and same.host_ratio is not None else "")
    return f"{same.ratio:.3f} over {same.steps} steps{split}"


def run(args) -> int:
    import json

    rows = comparison_table(args.results_dir)
    if args.json:
        print(json.dumps([as_json(r) for r in rows], indent=2, default=str))
        return 0
    if not rows:
        print("no quick runs (make run-all ... QUICK=1)")
        return 0
    print("| hw | experiment | quick run (wall s) | first on host | steps run / fitted | form "
          "| predicted train s (95 %) | measured s | error | inside | error s: to anchor / steps / events "
          "| same steps: full / quick (GPU, host) | tokens/s predicted (95 %) / measured | schedule = tokens.jsonl |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        p = r if isinstance(r, Paired) else None
        tok = "–" if p is None or p.tokens_compared is None else (
            f"{p.tokens_compared - (p.tokens_differ or 0)}/{p.tokens_compared} steps")
        after = "; after its full run" if p and p.full_first else ""
        print(f"| {r.hw} | {r.experiment} | {r.quick_run} ({_fmt(r.quick_wall_s, '.0f')}{after}) "
              f"| {_yes_no(r.first_on_host)} "
              f"| {r.quick_steps} / {r.fit_steps} | {r.form} "
              f"| {_fmt(r.predicted_train_s)} ({_fmt(r.low)}-{_fmt(r.high)}) "
              f"| {_fmt(p.measured_train_s if p else None)} | {_fmt(p.error_pct if p else None, '+.2f')} % "
              f"| {'–' if p is None or p.inside is None else ('yes' if p.inside else 'NO')} "
              f"| {_parts_cell(p.error_parts if p else None)} | {_same_steps_cell(p.same_steps if p else None)} "
              f"| {_fmt(r.predicted_tokens_per_s, '.0f')} ({_fmt(r.tokens_per_s_low, '.0f')}-"
              f"{_fmt(r.tokens_per_s_high, '.0f')}) / {_fmt(p.measured_tokens_per_s if p else None, '.0f')} "
              f"| {tok} |")
    print("\nThe 95 % range holds the quick run's own step noise and what the committed quick/full pairs were off by "
          "(data/quick_pairs.yaml); where a step is host-bound, compare the same-steps host ratio "
          "(docs/quick-runs.md).")
    return 0
