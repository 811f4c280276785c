"""Predict a full run from a short one: a step-time model fitted on the measured steps, applied to the full schedule.

A run's batches are known before it starts (schedule.jsonl, experiments/launch/schedule.py), so what a cut run leaves
open is the cost of a step, not what the steps hold. The model, t(s) = m x micro_batches(s) + r x real_tokens(s) + p x
padding_tokens(s) in four forms, is fitted on the run's steady intervals; the full run's training time is what was
measured up to the anchor step, less the warm-up and one-time excess the next run does not pay again, plus the model
over the rest of the schedule and the full run's evaluations and saves as the quick run measured them; its 95 % range is
a bootstrap of the steady intervals widened to what the committed quick/full pairs support (quick_calibration).
Every formula: docs/metrics.md, "Quick-run estimate"; what the estimates did on the committed runs:
docs/quick-runs.md and results/findings/quick-runs_*.md. The check against the full run made after it is
quick_check.py.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analysis.estimate import quick_calibration
from analysis.measure import stats
from analysis.measure import steps as measure_steps
from analysis.measure.stats import N_BOOT
from analysis.parse.record import RunRecord
from analysis.parse.runfile_rows import ScheduleStep
from experiments.base.runfolder import Args, Launcher, Quick, Tokens

# a form's columns: schedule.jsonl's counts by their names (Tokens), and pad = padded - real tokens
FORMS: dict[str, tuple[str, ...]] = {
    "fixed": (Tokens.MICRO_BATCHES,),
    "real": (Tokens.MICRO_BATCHES, Tokens.TOKENS),
    "real+pad": (Tokens.MICRO_BATCHES, Tokens.TOKENS, "pad"),
    "padded": (Tokens.MICRO_BATCHES, Tokens.PADDED_TOKENS),
}
PADDING_FORMS = ("real+pad", "padded")
COEF_NAMES = {Tokens.MICRO_BATCHES: "s_per_micro_batch", Tokens.TOKENS: "s_per_real_token",
              "pad": "s_per_padding_token", Tokens.PADDED_TOKENS: "s_per_padded_token"}
MIN_INTERVALS = 3  # a fit needs at least this many steady intervals (and more than the form's parameters + 1)
OUTLIER_MADS = 5.0    # slow_outliers: this many robust standard deviations above the model ...
OUTLIER_SHARE = 0.25  # ... and this share of the modelled time above it


# ------------------------------------------------------------------------------------------------ the fit


def features(step: Mapping[str, Any], columns: tuple[str, ...]) -> np.ndarray:
    """A schedule step's values of COLUMNS (pad = padded - real tokens)."""
    row = {Tokens.MICRO_BATCHES: step[Tokens.MICRO_BATCHES], Tokens.TOKENS: step[Tokens.TOKENS],
           Tokens.PADDED_TOKENS: step[Tokens.PADDED_TOKENS], "pad": step[Tokens.PADDED_TOKENS] - step[Tokens.TOKENS]}
    return np.array([float(row[c]) for c in columns])


def _nnls(x: np.ndarray, y: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Non-negative least squares of interval seconds Y on the features' sums X, each interval weighted 1 / its N
    steps (step noise adds up: an interval of n steps varies n times as much)."""
    from scipy.optimize import nnls

    w = 1.0 / np.sqrt(n)
    scale = np.where(np.abs(x).max(axis=0) > 0, np.abs(x).max(axis=0), 1.0)  # tokens ~1e3, micro-batches ~1e1
    coef, _ = nnls(x * w[:, None] / scale, y * w)
    return coef / scale


def fit(x: np.ndarray, y: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Coefficients of one form (see _nnls)."""
    return _nnls(np.asarray(x, float), np.asarray(y, float), np.asarray(n, float))


def held_out_error(x: np.ndarray, y: np.ndarray, n: np.ndarray) -> float:
    """Leave-one-interval-out error: sum of squared held-out errors / sum of steps (seconds^2 per step)."""
    errs = []
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        coef = fit(x[keep], y[keep], n[keep])
        errs.append((y[i] - x[i] @ coef) ** 2)
    return float(np.sum(errs) / np.sum(n))


@dataclass(frozen=True)
class StepModel:
    """A fitted step-time model: its form, coefficients (seconds per unit of each column) and held-out errors."""

    form: str
    columns: tuple[str, ...]
    coef: tuple[float, ...]
    held_out_rmse_s: float                       # per step, of the chosen form
    held_out: dict[str, float]                   # every form tried: held-out RMSE, seconds per step
    n_intervals: int
    n_steps: int

    def step_s(self, step: Mapping[str, Any]) -> float:
        return float(features(step, self.columns) @ np.array(self.coef))

    def named(self) -> dict[str, float]:
        return {COEF_NAMES[c]: v for c, v in zip(self.columns, self.coef)}

    def summary(self) -> dict[str, Any]:
        """The model as `swiftbench quick --json` gives it: its form, its coefficients by name (the form's own), every
        form's held-out error, and the intervals and steps behind it."""
        return {"form": self.form, **self.named(), "held_out_rmse_s": self.held_out_rmse_s, "held_out": self.held_out,
                "n_intervals": self.n_intervals, "n_steps": self.n_steps}


def choose(x_by_form: dict[str, np.ndarray], y: np.ndarray, n: np.ndarray) -> StepModel:
    """Fit every form of X_BY_FORM and keep the one with the smallest held-out error (fewer parameters on a tie)."""
    scores = {}
    for form, x in x_by_form.items():
        if len(y) >= max(MIN_INTERVALS, x.shape[1] + 2):
            scores[form] = held_out_error(x, y, n)
    if not scores:
        raise ValueError(f"{len(y)} steady intervals: too few to fit a step time")
    best = min(scores, key=lambda f: (round(scores[f], 12), len(FORMS[f])))
    coef = fit(x_by_form[best], y, n)
    return StepModel(best, FORMS[best], tuple(float(c) for c in coef), math.sqrt(scores[best]),
                     {f: math.sqrt(v) for f, v in scores.items()}, len(y), int(np.sum(n)))


def slow_outliers(x: np.ndarray, y: np.ndarray, n: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """Intervals far slower than the model (mask): a residual per step over OUTLIER_MADS robust standard deviations
    and over OUTLIER_SHARE of the interval's modelled time. They are single slow steps that the next run on the
    machine did not repeat (committed H200 runs: steps 21 and 27 of the best recipe's padding-free schedule, 1.9-5.4x
    the median step; one_time_excess), not what later steps cost: the 94-step bs16 epoch has none after step 50."""
    pred = x @ coef
    r = (y - pred) / np.sqrt(n)
    scale = 1.4826 * np.median(np.abs(r - np.median(r)))
    if scale <= 0:
        scale = float(np.std(r)) or 1e-12
    return (r > OUTLIER_MADS * scale) & (y - pred > OUTLIER_SHARE * pred)


def fit_intervals(intervals: list[tuple[int, int, float]], schedule: list[ScheduleStep],
                  forms: tuple[str, ...] | None = None) -> tuple[StepModel, dict]:
    """The chosen model for INTERVALS ((from_step, to_step, seconds): steps from_step+1 .. to_step) of a run whose
    steps are SCHEDULE, fitted without its slow outliers (slow_outliers of a first fit of the richest form); also the
    arrays behind it (for the bootstrap) and the outliers left out."""
    by_step = {s[Tokens.STEP]: s for s in schedule}
    padded = any(s[Tokens.PADDED_TOKENS] != s[Tokens.TOKENS] for s in schedule)
    forms = forms or tuple(f for f in FORMS if padded or f not in PADDING_FORMS)
    y = np.array([sec for _, _, sec in intervals], float)
    n = np.array([b - a for a, b, _ in intervals], float)
    x_by_form = {f: np.array([sum(features(by_step[s], FORMS[f]) for s in range(a + 1, b + 1))
                              for a, b, _ in intervals]).reshape(len(intervals), len(FORMS[f])) for f in forms}
    keep = np.ones(len(y), bool)
    if len(y) >= MIN_INTERVALS:
        richest = max(forms, key=lambda f: len(FORMS[f]))
        for _ in range(2):
            coef = fit(x_by_form[richest][keep], y[keep], n[keep])
            keep = ~slow_outliers(x_by_form[richest], y, n, coef)
    model = choose({f: x[keep] for f, x in x_by_form.items()}, y[keep], n[keep])
    x = x_by_form[model.form]
    excess = y[~keep] - x[~keep] @ np.array(model.coef)
    slow = [(intervals[i][0], intervals[i][1], float(e)) for i, e in zip(np.flatnonzero(~keep), excess)]
    return model, {"x": x[keep], "y": y[keep], "n": n[keep], "slow": slow}


def bootstrap_coefs(x: np.ndarray, y: np.ndarray, n: np.ndarray, n_boot: int = N_BOOT, seed: int = 0) -> np.ndarray:
    """N_BOOT refits on resamples of the intervals (rows: coefficient vectors). Fixed seed: the same range each time.
    (Resampling blocks of consecutive intervals instead, to keep a slow stretch together, covered the truth less
    often on synthetic runs with independent step noise (80 % instead of 93 % of 60 runs) and no more often on the
    committed H200 runs.)"""
    return stats.bootstrap_refits(lambda idx: fit(x[idx], y[idx], n[idx]), len(y), x.shape[1], n_boot, seed)


def step_residuals(model: StepModel, x: np.ndarray, y: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Per-step noise of the fit: an interval's residual / sqrt(its steps), widened for the parameters fitted."""
    r = (y - x @ np.array(model.coef)) / np.sqrt(n)
    dof = max(len(y) - len(model.coef), 1)
    return r * math.sqrt(len(y) / dof)


# ------------------------------------------------------------------------------------------------ a run


@dataclass
class QuickEstimate:
    """What a cut run says about its full run (see the module docstring); None fields where it cannot say."""

    run: str
    model: StepModel | None
    steps_run: int | None = None              # the cut run's last step
    steps_full: int | None = None             # the full schedule's steps
    anchor_step: int | None = None            # measured up to here, modelled after it
    fit_steps: int | None = None              # steady steps behind the fit
    train_s: float | None = None              # predicted training time of the full run (train_runtime)
    train_s_low: float | None = None
    train_s_high: float | None = None
    tokens_per_s: float | None = None         # predicted steady tokens/s of the full run
    tokens_per_s_low: float | None = None
    tokens_per_s_high: float | None = None
    parts: dict = field(default_factory=dict)  # measured prefix, modelled steps, evals, saves (seconds)
    schedule_checked: tuple[int, int] | None = None  # (steps whose tokens.jsonl equals the schedule, steps compared)
    notes: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """How tables name it: a quick estimate, the steps behind it."""
        if self.train_s is None or self.model is None:  # no train_s without a model
            return f"quick estimate: none ({'; '.join(self.notes) or 'no model'})"
        return (f"quick estimate from {self.steps_run} of {self.steps_full} steps ({self.fit_steps} steady steps "
                f"fitted, form {self.model.form})")



def events(args: dict, last: int, has_eval: bool) -> tuple[list[int], list[int]]:
    """(eval steps, save steps) of a full run of LAST steps with ARGS (transformers' DefaultFlowCallback: every
    eval_steps / save_steps, and both at the last step)."""
    def every(key: str, strategy_keys: tuple[str, ...]) -> list[int]:
        strategy = next((args[k] for k in strategy_keys if args.get(k) is not None), "steps")
        value = args.get(key)
        if str(strategy).lower().split(".")[-1] != "steps" or not value:
            return []
        k = int(math.ceil(value * last)) if value < 1 else int(value)
        return sorted(set(range(k, last + 1, k)) | {last})

    evals = every("eval_steps", ("eval_strategy", "evaluation_strategy")) if has_eval else []
    return evals, every("save_steps", ("save_strategy",))


def line_elapsed(rec: RunRecord) -> dict[int, float]:
    return {int(s): float(e) for s, e in rec.elapsed}


@dataclass(frozen=True)
class EventCosts:
    """Seconds of each evaluation and save a run made, (step, seconds) in order, and of its end (the last save and the
    end of training; None where the run does not say)."""

    evals: list[tuple[int, float]]
    saves: list[tuple[int, float]]
    end: float | None


def measured_event_costs(rec: RunRecord, model: StepModel, schedule: list[ScheduleStep],
                         saves: list[int]) -> EventCosts:
    """Seconds of each evaluation and save the run made, in order: an eval = its eval line's time - its step's train
    line; a save = the next step's train line - (the eval line, or the train line) - that step's modelled time; the
    last step's = train_runtime - its eval line (the save there and the end of training)."""
    by_step = {s[Tokens.STEP]: s for s in schedule}
    line = line_elapsed(rec)
    last = max(line) if line else None
    evals = [(e, rec.eval_elapsed[e] - line[e]) for e in sorted(rec.eval_elapsed) if e in line]
    save_costs, end = [], None
    for e in sorted(set(saves)):
        after_eval = rec.eval_elapsed.get(e, line.get(e))
        if e == last:
            if rec.train_runtime_s is not None and after_eval is not None:
                end = rec.train_runtime_s - after_eval
        elif e in line and e + 1 in line and after_eval is not None and e + 1 in by_step:
            save_costs.append((e, line[e + 1] - after_eval - model.step_s(by_step[e + 1])))
    if end is None and last is not None and rec.train_runtime_s is not None:  # a run that did not save at its end
        end = rec.train_runtime_s - rec.eval_elapsed.get(last, line[last])
    return EventCosts(evals, save_costs, end)


def _cost(costs: list[tuple[int, float]], k: int) -> float:
    """The k-th measured cost (0-based), the last one for k beyond them, 0 without any."""
    if not costs:
        return 0.0
    return max(costs[min(k, len(costs) - 1)][1], 0.0)


FIT_STEPS = 10  # steady steps a budget should leave to fit on (budget_advice)


def _profiled(iv, rec: RunRecord) -> bool:
    """Whether interval IV (steps from_step+1 .. to_step) holds one of REC's profiled steps, whatever
    analysis.measure.steps calls it (a profile inside the warm-up is labelled warm-up there)."""
    return any(iv.from_step < p <= iv.to_step for p in rec.profiled_steps)


def budget_advice(rec: RunRecord) -> str:
    """Why quick run REC gave too few steady steps, and the budget that would give FIT_STEPS: its steps after the
    warm-up and the profiled steps, at the median time of its unprofiled steps so far (a host-bound recipe on a slow
    host: the seed recipe on H200 host dff67541ff89 took ~7 s per step and 40-45 s per profiled step, 23-28 s of it
    the launcher's profile summary then, since removed)."""
    quick = rec.quick or {}
    ivs = measure_steps.intervals(rec)
    with_profile = [_profiled(iv, rec) for iv in ivs]
    plain = sorted(iv.seconds / (iv.to_step - iv.from_step) for iv, p in zip(ivs, with_profile) if not p)
    profiled = sum(iv.seconds for iv, p in zip(ivs, with_profile) if p)
    at = max(line_elapsed(rec) or {0: 0.0})
    budget = quick.get(Quick.BUDGET_S)
    if not plain or not budget:
        return f"stopped at step {at}"
    step_s = plain[len(plain) // 2]
    first_steady = max(measure_steps.WARMUP_MAX_STEPS, max(rec.profiled_steps or {0})) + 1
    more = max(first_steady + FIT_STEPS - at, 0)
    return (f"stopped at step {at} ({quick.get(Quick.WHY) or 'budget'}) of a {budget:g} s budget: "
            f"{step_s:.1f} s per step, {profiled:.0f} s in the profiled steps; steady steps start after step "
            f"{first_steady - 1}, so "
            f"--budget {math.ceil((budget + more * step_s) / 10) * 10:.0f} would give about {FIT_STEPS} to fit on")


def warmup_excess(rec: RunRecord, model: StepModel, schedule: list[ScheduleStep]) -> float:
    """Seconds the quick run REC spent in its warm-up beyond MODEL (module docstring), 0 when none: its first line's
    time and its "first interval" / "warm-up" intervals (analysis.measure.steps) without a profiled step, each less the
    model over its steps."""
    by_step = {s[Tokens.STEP]: s for s in schedule}
    points = sorted(line_elapsed(rec).items())
    if not points:
        return 0.0
    first, t_first = points[0]
    # a profile inside the warm-up is paid by the full run too: kept
    spans = [(0, first, t_first)] + [(iv.from_step, iv.to_step, iv.seconds) for iv in measure_steps.intervals(rec)
                                     if iv.excluded in ("first interval", "warm-up") and not _profiled(iv, rec)]
    excess = sum(sec - sum(model.step_s(by_step[s]) for s in range(a + 1, b + 1) if s in by_step)
                 for a, b, sec in spans)
    return max(float(excess), 0.0)


def one_time_slow(slow: list[tuple[int, int, float]], anchor: int) -> list[tuple[int, float]]:
    """(to_step, excess seconds) of the quick run's slow outlier intervals up to ANCHOR (fit_intervals' SLOW:
    (from_step, to_step, excess over the model)) that a later run on the same machine does not pay again (module
    docstring)."""
    return [(b, e) for _, b, e in slow if b <= anchor and e > 0]


def one_time_excess(slow: list[tuple[int, int, float]], anchor: int) -> float:
    """The seconds of one_time_slow, summed: the one-time excess."""
    return float(sum(e for _, e in one_time_slow(slow, anchor)))


def _steady_steps(rec: RunRecord, schedule: list[ScheduleStep], evals: list[int], saves: list[int]) -> list[int]:
    """Steps in the steady intervals of the full run (analysis.measure.steps on the full run's log lines: the cut
    run's logging_steps, the full schedule's events)."""
    last = len(schedule)
    every = int((rec.args or {}).get(Args.LOGGING_STEPS) or 1)
    every = every if every >= 1 else 1
    logged = sorted(set(range(every, last + 1, every)) | {1, last})
    fake = dataclasses.replace(rec, elapsed=[(s, float(s)) for s in logged], max_steps=last, global_steps=last,
                               event_steps=frozenset(evals) | frozenset(saves))
    return measure_steps.steady_steps(fake)


def estimate(rec: RunRecord, n_boot: int = N_BOOT, schedule: list[ScheduleStep] | None = None) -> QuickEstimate:
    """The full run's training time and steady tokens/s predicted from cut run REC (its schedule.jsonl, its steady
    intervals and measured events). SCHEDULE: in place of REC's own (a run made before the launcher wrote one, with
    its schedule from `python -m experiments.launch.schedule`).
    Stays whole: the estimate's parts (prefix, warm-up, one-time, modelled steps, events) and their ranges are one sum,
    read top to bottom."""
    out = QuickEstimate(run=rec.name, model=None)
    schedule = schedule or rec.schedule
    if not schedule:
        out.notes.append("no schedule.jsonl (run made before the launcher wrote one)")
        return out
    line = line_elapsed(rec)
    if not line:
        out.notes.append("no timed training line")
        return out
    out.steps_full = len(schedule)
    out.steps_run = max(line)
    if rec.tokens_by_step:
        common = [s for s in rec.tokens_by_step if s <= len(schedule) and s <= out.steps_run]
        same = sum(rec.tokens_by_step[s] == schedule[s - 1][Tokens.TOKENS] and (
            rec.padded_by_step is None or rec.padded_by_step.get(s) == schedule[s - 1][Tokens.PADDED_TOKENS])
            for s in common)
        out.schedule_checked = (same, len(common))
        if same != len(common):
            out.notes.append(f"tokens.jsonl differs from the schedule at {len(common) - same} of {len(common)} steps")
    intervals = [(iv.from_step, iv.to_step, iv.seconds) for iv in measure_steps.steady_intervals(rec)
                 if iv.to_step <= len(schedule)]
    try:
        model, arrays = fit_intervals(intervals, schedule)
    except ValueError as exc:
        out.notes.append(str(exc))
        if rec.quick:
            out.notes.append(budget_advice(rec))
        return out
    out.model, out.fit_steps = model, model.n_steps

    # measured up to the anchor, modelled after it
    decided = (rec.quick or {}).get(Quick.DECIDED_AT)
    anchor = decided if decided in line else out.steps_run
    out.anchor_step = anchor
    args = rec.args or {}
    has_eval = bool(rec.eval_elapsed) or bool(rec.val_samples)
    full_evals, full_saves = events(args, len(schedule), has_eval)
    run_saves = sorted(set(s for s in events(args, out.steps_run, False)[1] if s < out.steps_run)
                       | set((rec.quick or {}).get(Quick.EVENT_STEPS) or []))
    costs = measured_event_costs(rec, model, schedule, run_saves)
    future = schedule[anchor:]
    x_future = np.array([features(s, model.columns) for s in future]).reshape(len(future), len(model.columns))
    n_prior_evals = sum(1 for e in full_evals if e < anchor)
    n_prior_saves = sum(1 for e in full_saves if e < anchor)
    eval_s = sum(_cost(costs.evals, n_prior_evals + k) for k, e in enumerate(e for e in full_evals if e >= anchor))
    mid_saves = [e for e in full_saves if anchor <= e < len(schedule)]
    save_s = sum(_cost(costs.saves, n_prior_saves + k) if costs.saves else (costs.end or 0.0)
                 for k, _ in enumerate(mid_saves))
    end_s = costs.end or 0.0
    if not costs.saves and mid_saves:
        out.notes.append("no save measured before the end: mid-run saves charged the end's cost")
    launcher = rec.launcher
    profiled_to = int(launcher.get(Launcher.PROFILE_SKIP) or 1) + int(launcher.get(Launcher.PROFILE_STEPS) or 0)
    if launcher.get(Launcher.PROFILE_STEPS) and profiled_to > anchor:
        out.notes.append("the full run's profiled steps come after the measured part: modelled as ordinary steps")
    prefix = line[anchor]
    warm = warmup_excess(rec, model, schedule)
    once = one_time_excess(arrays["slow"], anchor)
    steps_s = float(x_future.sum(axis=0) @ np.array(model.coef))
    out.train_s = prefix - warm - once + steps_s + eval_s + save_s + end_s
    out.parts = {"measured_to_anchor_s": prefix, "warmup_excess_s": warm, "one_time_excess_s": once,
                 "one_time_steps": [b for b, _ in one_time_slow(arrays["slow"], anchor)],
                 "modelled_steps_s": steps_s, "modelled_steps": len(future),
                 "evals_s": eval_s, "evals": sum(1 for e in full_evals if e >= anchor),
                 "saves_s": save_s + end_s, "saves": len(mid_saves) + (1 if full_saves else 0),
                 "eval_costs_measured": costs.evals, "save_costs_measured": costs.saves,
                 "end_cost_measured": costs.end}

    # steady tokens/s of the full run
    steady = _steady_steps(rec, schedule, full_evals, full_saves)
    x_steady = np.array([features(schedule[s - 1], model.columns) for s in steady]).reshape(len(steady), -1)
    tok_steady = float(sum(schedule[s - 1][Tokens.TOKENS] for s in steady))
    coef = np.array(model.coef)
    if steady and x_steady.sum(axis=0) @ coef > 0:
        out.tokens_per_s = tok_steady / float(x_steady.sum(axis=0) @ coef)

    # 95 % ranges
    if len(arrays["y"]) >= 2 and n_boot:
        boots = bootstrap_coefs(arrays["x"], arrays["y"], arrays["n"], n_boot)
        resid = step_residuals(model, arrays["x"], arrays["y"], arrays["n"])
        noise = stats.resampled_sums(resid, len(future), n_boot, seed=1)  # the noise of the modelled steps' total
        totals = prefix + boots @ x_future.sum(axis=0) + noise + eval_s + save_s + end_s
        out.train_s_low = stats.interval95(totals - warm - once)[0]  # not paid again ...
        out.train_s_high = stats.interval95(totals)[1]               # ... or paid again (a fresh machine)
        if out.tokens_per_s is not None:
            secs = boots @ x_steady.sum(axis=0)
            tps = tok_steady / secs[secs > 0]
            out.tokens_per_s_low, out.tokens_per_s_high = stats.interval95(tps)
    return calibrated(out)


def calibrated(est: QuickEstimate) -> QuickEstimate:
    """EST with its ranges widened to what the committed quick/full pairs support (analysis.estimate
    .quick_calibration); no estimate where they support none."""
    for kind in quick_calibration.KINDS:  # train_s, tokens_per_s: fields of EST, each with its _low and _high
        predicted = getattr(est, kind)
        if predicted is None:
            continue
        widened = quick_calibration.widen(predicted, getattr(est, f"{kind}_low"), getattr(est, f"{kind}_high"), kind)
        if widened is None:
            est.notes.append(f"too few committed quick/full pairs to give {kind} a range: no estimate")
            setattr(est, kind, None)
        setattr(est, f"{kind}_low", widened[0] if widened else None)
        setattr(est, f"{kind}_high", widened[1] if widened else None)
    return est
