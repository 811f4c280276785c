"""Predict a full run from a short one: a step-time model fitted on the measured steps, applied to the full schedule.

A run's batches are known before it starts (schedule.jsonl: real and padded tokens and micro-batches of every
optimizer step, experiments/launch/schedule.py), so what a cut run leaves open is the cost of a step, not what the steps
hold.

**The model.** The time of optimizer step s is

    t(s) = m x micro_batches(s) + r x real_tokens(s) + p x padding_tokens(s)

(padding = padded - real tokens; the fixed cost per step is m x the step's micro-batches, so the epoch's short last
step costs its share). Four forms are tried: `fixed` (m only), `real` (m, r), `real+pad` (m, r, p) and `padded`
(m, and one cost for every padded token); the padding forms only where the batches are padded. Each is fitted by
non-negative least squares (costs are not negative) on the steady intervals of the run (analysis.measure.steps:
warm-up, the first interval, eval/save and profiled intervals left out), an interval's seconds against the sums of
its steps' features; the form with the smallest held-out error (leave one interval out, squared seconds per step)
is used.

**The full run's training time** (ms-swift's train_runtime: training start to the end of the final eval and save) =
the quick run's measured time up to step a (its train line at the step where it decided to stop, so profiled steps and
earlier evals are measured, not modelled) - its warm-up excess and one-time excess (below) + the model over the
schedule's steps a+1 .. M + the full run's evaluations and saves from step a on (every eval_steps / save_steps and at
M), each charged what the run measured: the k-th evaluation of the full run costs the quick run's k-th (the first one
of a run costs more: kernel compilation and allocations for the eval shapes), the last save the quick run's last with
the end of training. A quick run (experiments/launch/quick_stop.py) evaluates and saves twice at its end so that
both are measured.

**The warm-up excess** = the quick run's time to the end of its warm-up (the first line and the intervals that
analysis.measure.steps calls "first interval" or "warm-up") - the model over those steps, when positive. The estimate
is of a full run made after the quick run on the same machine, and that run does not pay it again: on three H200 pairs
(calls 16 and 17) the quick run's first 10 steps took 4.6-11.7 s more than the model, the full run's right after it
0.4-2.1 s (one-time costs of the first run of a recipe; the cause is not isolated). A full run on a fresh machine may
pay it again: the range's high end keeps it.

**The one-time excess** = what the quick run's slow outlier intervals up to the anchor (slow_outliers: single steps
left out of the fit) took beyond the model. The full run made after it does not pay them again: on the committed H200
pairs each such step (steps 21 and 27 of the best recipe, 1.9-5.4x the quick run's median step) took under 1.2x the
full run's median there (tests/test_quick.py). Step 27 was slow in the first best run on four of the five hosts that
ran best past it, and in none made after a best run had passed it on its host; the cause is not isolated. A slow step
that recurs would be left out of the measured part and of the model both, so the estimate would come out low. Like the
warm-up excess, only the range's high end keeps it.

**The steady tokens/s** of the full run = its steady steps' tokens (the schedule) / their modelled seconds, the steady
steps those analysis.measure.steps would pick in the full run's log.

**The 95 % range**: 2,000 bootstrap resamples of the steady intervals (fixed seed), each refitted, plus, for the
time, the modelled steps' noise drawn from the fit's residuals, widened to what the committed quick/full pairs support
(analysis.estimate.quick_calibration: the 95 % prediction interval of their errors, about -15 % to +20 % of the
training time). The bootstrap alone holds what the short run shows (93 % of 60 synthetic runs with independent step
noise fell inside) but not how the next run on the host goes: 5 of the 10 committed pairs fell outside it.

**Against the full run** made after it on the same host (`compare`): the error, split into the part up to the anchor
step, the modelled steps and the events (`error_parts`, which add up to it), and how the full run repeated the quick
run's very same steady steps (`same_steps`, with the GPU-active and host parts from gpm.jsonl): what one run cannot
know about the next.

Stays whole: the fit, the estimate and its check against the full run share StepModel, QuickEstimate and the schedule
arithmetic; the check is what keeps the estimate honest and is read beside it.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from analysis.estimate import quick_calibration
from analysis.measure import stats
from analysis.measure import steps as measure_steps
from analysis.measure.stats import N_BOOT
from analysis.parse.record import RunRecord

FORMS: dict[str, tuple[str, ...]] = {
    "fixed": ("micro_batches",),
    "real": ("micro_batches", "tokens"),
    "real+pad": ("micro_batches", "tokens", "pad"),
    "padded": ("micro_batches", "padded_tokens"),
}
PADDING_FORMS = ("real+pad", "padded")
COEF_NAMES = {"micro_batches": "s_per_micro_batch", "tokens": "s_per_real_token", "pad": "s_per_padding_token",
              "padded_tokens": "s_per_padded_token"}
MIN_INTERVALS = 3  # a fit needs at least this many steady intervals (and more than the form's parameters + 1)
OUTLIER_MADS = 5.0    # slow_outliers: this many robust standard deviations above the model ...
OUTLIER_SHARE = 0.25  # ... and this share of the modelled time above it


# ------------------------------------------------------------------------------------------------ the fit


def features(step: dict, columns: tuple[str, ...]) -> np.ndarray:
    """A schedule step's values of COLUMNS (pad = padded - real tokens)."""
    row = {"micro_batches": step["micro_batches"], "tokens": step["tokens"],
           "padded_tokens": step["padded_tokens"], "pad": step["padded_tokens"] - step["tokens"]}
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

    def step_s(self, step: dict) -> float:
        return float(features(step, self.columns) @ np.array(self.coef))

    def named(self) -> dict[str, float]:
        return {COEF_NAMES[c]: v for c, v in zip(self.columns, self.coef)}


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


def fit_intervals(intervals: list[tuple[int, int, float]], schedule: list[dict],
                  forms: tuple[str, ...] | None = None) -> tuple[StepModel, dict]:
    """The chosen model for INTERVALS ((from_step, to_step, seconds): steps from_step+1 .. to_step) of a run whose
    steps are SCHEDULE, fitted without its slow outliers (slow_outliers of a first fit of the richest form); also the
    arrays behind it (for the bootstrap) and the outliers left out."""
    by_step = {s["step"]: s for s in schedule}
    padded = any(s["padded_tokens"] != s["tokens"] for s in schedule)
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

    def as_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["label"] = self.label
        if self.model is not None:
            out["model"] = {"form": self.model.form, **self.model.named(),
                            "held_out_rmse_s": self.model.held_out_rmse_s, "held_out": self.model.held_out,
                            "n_intervals": self.model.n_intervals, "n_steps": self.model.n_steps}
        return out


def _events(args: dict, last: int, has_eval: bool) -> tuple[list[int], list[int]]:
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


def _line_elapsed(rec: RunRecord) -> dict[int, float]:
    return {int(s): float(e) for s, e in rec.elapsed}


def measured_event_costs(rec: RunRecord, model: StepModel, schedule: list[dict], saves: list[int]) -> dict:
    """Seconds of each evaluation and save the run made, in order: an eval = its eval line's time - its step's train
    line; a save = the next step's train line - (the eval line, or the train line) - that step's modelled time; the
    last step's = train_runtime - its eval line (the save there and the end of training)."""
    by_step = {s["step"]: s for s in schedule}
    line = _line_elapsed(rec)
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
    return {"evals": evals, "saves": save_costs, "end": end}


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
    at = max(_line_elapsed(rec) or {0: 0.0})
    budget = quick.get("budget_s")
    if not plain or not budget:
        return f"stopped at step {at}"
    step_s = plain[len(plain) // 2]
    first_steady = max(measure_steps.WARMUP_MAX_STEPS, max(rec.profiled_steps or {0})) + 1
    more = max(first_steady + FIT_STEPS - at, 0)
    return (f"stopped at step {at} ({quick.get('why') or 'budget'}) of a {budget:g} s budget: {step_s:.1f} s per step, "
            f"{profiled:.0f} s in the profiled steps; steady steps start after step {first_steady - 1}, so "
            f"--budget {math.ceil((budget + more * step_s) / 10) * 10:.0f} would give about {FIT_STEPS} to fit on")


def warmup_excess(rec: RunRecord, model: StepModel, schedule: list[dict]) -> float:
    """Seconds the quick run REC spent in its warm-up beyond MODEL (module docstring), 0 when none: its first line's
    time and its "first interval" / "warm-up" intervals (analysis.measure.steps) without a profiled step, each less the
    model over its steps."""
    by_step = {s["step"]: s for s in schedule}
    points = sorted(_line_elapsed(rec).items())
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


def _steady_steps(rec: RunRecord, schedule: list[dict], evals: list[int], saves: list[int]) -> list[int]:
    """Steps in the steady intervals of the full run (analysis.measure.steps on the full run's log lines: the cut
    run's logging_steps, the full schedule's events)."""
    last = len(schedule)
    every = int((rec.args or {}).get("logging_steps") or 1)
    every = every if every >= 1 else 1
    logged = sorted(set(range(every, last + 1, every)) | {1, last})
    fake = dataclasses.replace(rec, elapsed=[(s, float(s)) for s in logged], max_steps=last, global_steps=last,
                               event_steps=frozenset(evals) | frozenset(saves))
    return measure_steps.steady_steps(fake)


def estimate(rec: RunRecord, n_boot: int = N_BOOT, schedule: list[dict] | None = None) -> QuickEstimate:
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
    line = _line_elapsed(rec)
    if not line:
        out.notes.append("no timed training line")
        return out
    out.steps_full = len(schedule)
    out.steps_run = max(line)
    if rec.tokens_by_step:
        common = [s for s in rec.tokens_by_step if s <= len(schedule) and s <= out.steps_run]
        same = sum(rec.tokens_by_step[s] == schedule[s - 1]["tokens"] and (
            rec.padded_by_step is None or rec.padded_by_step.get(s) == schedule[s - 1]["padded_tokens"])
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
    decided = (rec.quick or {}).get("decided_at")
    anchor = decided if decided in line else out.steps_run
    out.anchor_step = anchor
    args = rec.args or {}
    has_eval = bool(rec.eval_elapsed) or bool(rec.val_samples)
    full_evals, full_saves = _events(args, len(schedule), has_eval)
    run_saves = sorted(set(s for s in _events(args, out.steps_run, False)[1] if s < out.steps_run)
                       | set((rec.quick or {}).get("event_steps") or []))
    costs = measured_event_costs(rec, model, schedule, run_saves)
    future = schedule[anchor:]
    x_future = np.array([features(s, model.columns) for s in future]).reshape(len(future), len(model.columns))
    n_prior_evals = sum(1 for e in full_evals if e < anchor)
    n_prior_saves = sum(1 for e in full_saves if e < anchor)
    eval_s = sum(_cost(costs["evals"], n_prior_evals + k) for k, e in enumerate(e for e in full_evals if e >= anchor))
    mid_saves = [e for e in full_saves if anchor <= e < len(schedule)]
    save_s = sum(_cost(costs["saves"], n_prior_saves + k) if costs["saves"] else (costs["end"] or 0.0)
                 for k, _ in enumerate(mid_saves))
    end_s = costs["end"] or 0.0
    if not costs["saves"] and mid_saves:
        out.notes.append("no save measured before the end: mid-run saves charged the end's cost")
    launcher = rec.launcher
    profiled_to = int(launcher.get("profile_skip") or 1) + int(launcher.get("profile_steps") or 0)
    if launcher.get("profile_steps") and profiled_to > anchor:
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
                 "eval_costs_measured": costs["evals"], "save_costs_measured": costs["saves"],
                 "end_cost_measured": costs["end"]}

    # steady tokens/s of the full run
    steady = _steady_steps(rec, schedule, full_evals, full_saves)
    x_steady = np.array([features(schedule[s - 1], model.columns) for s in steady]).reshape(len(steady), -1)
    tok_steady = float(sum(schedule[s - 1]["tokens"] for s in steady))
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


# ------------------------------------------------------------------------------------------------ against a full run


def schedule_vs_tokens(schedule: list[dict], full: RunRecord) -> dict:
    """The predicted per-step token counts against those FULL's tokens.jsonl recorded, step by step."""
    rec_tokens, rec_padded = full.tokens_by_step or {}, full.padded_by_step or {}
    diff = [s["step"] for s in schedule if s["step"] in rec_tokens and (
        rec_tokens[s["step"]] != s["tokens"] or rec_padded.get(s["step"], s["padded_tokens"]) != s["padded_tokens"])]
    return {"compared": sum(1 for s in schedule if s["step"] in rec_tokens), "differ": diff,
            "recorded": len(rec_tokens), "scheduled": len(schedule)}


def _behind(est: QuickEstimate) -> dict:
    """What a row's prediction is made of (`swiftbench quick --json`): the fitted coefficients with every form's
    held-out error, and the training time's parts (measured prefix, warm-up excess, modelled steps, events)."""
    return {"model": est.as_dict()["model"], "parts": est.parts}


MIN_SAME_INTERVALS = 3  # same_steps: a ratio rests on at least this many steady intervals both runs have


def same_step_rows(first: RunRecord, second: RunRecord) -> list[dict]:
    """The steady intervals both runs have (the same from and to steps: the same batches; analysis.measure.steps),
    one row each: from_step, to_step, first_s, second_s and, where gpm.jsonl covers the interval's steps in both runs,
    first_busy_s, second_busy_s, first_host_s, second_host_s (analysis.measure.profile.gpm_step_rows), else None.
    Intervals match on their exact steps, so two runs logged at different logging_steps share none."""
    from analysis.measure.profile import gpm_step_rows

    a = {(iv.from_step, iv.to_step): iv.seconds for iv in measure_steps.steady_intervals(first)}
    b = {(iv.from_step, iv.to_step): iv.seconds for iv in measure_steps.steady_intervals(second)}
    ga = {r.step: r for r in gpm_step_rows(first)}
    gb = {r.step: r for r in gpm_step_rows(second)}
    rows = []
    for f, t in sorted(set(a) & set(b)):
        row: dict = {"from_step": f, "to_step": t, "first_s": a[(f, t)], "second_s": b[(f, t)]}
        steps = range(f + 1, t + 1)
        have = all(s in ga and s in gb for s in steps)
        for who, g in (("first", ga), ("second", gb)):
            for part in ("busy", "host"):
                row[f"{who}_{part}_s"] = sum(getattr(g[s], f"{part}_s") for s in steps) if have else None
        rows.append(row)
    return rows


def same_steps(first: RunRecord, second: RunRecord) -> dict:
    """How SECOND, a run of the same schedule, repeats FIRST over the very same batches (same_step_rows): SECOND's
    seconds / FIRST's, and with gpm.jsonl in both, the same ratio of the GPU-active and of the host seconds. It is
    what no estimate from FIRST can know: on the committed H200 pairs the GPU-active part repeats, the host part does
    not. None ratios under MIN_SAME_INTERVALS common intervals."""
    rows = same_step_rows(first, second)
    out = {"intervals": len(rows), "steps": sum(r["to_step"] - r["from_step"] for r in rows), "ratio": None,
           "busy_ratio": None, "host_ratio": None}
    if len(rows) < MIN_SAME_INTERVALS:
        return out
    out["ratio"] = sum(r["second_s"] for r in rows) / sum(r["first_s"] for r in rows)
    if all(r["first_busy_s"] is not None for r in rows):
        for part in ("busy", "host"):
            den = sum(r[f"first_{part}_s"] for r in rows)
            if den > 0:
                out[f"{part}_ratio"] = sum(r[f"second_{part}_s"] for r in rows) / den
    return out


def error_parts(est: QuickEstimate, schedule: list[dict], full: RunRecord) -> dict | None:
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
    line = _line_elapsed(full)
    a, last = est.anchor_step, len(schedule)
    if a not in line or last not in line:
        return None
    model_s = lambda f, t: sum(est.model.step_s(schedule[s - 1]) for s in range(f + 1, t + 1))  # noqa: E731
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
    events = charged + sum(model_s(iv.from_step, iv.to_step) - iv.seconds for iv in with_events) \
        - (full.train_runtime_s - line[last])
    return {"to_anchor_s": to_anchor, "steps_s": steps, "events_s": events}


def full_event_costs(est: QuickEstimate, schedule: list[dict], full: RunRecord) -> dict | None:
    """The full run's own evaluations, saves and end, measured as the estimate measured the quick run's
    (measured_event_costs, its steps priced by the quick run's model): what its events cost beside what they were
    charged (`parts`: eval_costs_measured, save_costs_measured, end_cost_measured)."""
    if est.model is None or not schedule:
        return None
    return measured_event_costs(full, est.model, schedule, _events(full.args or {}, len(schedule), False)[1])


def first_on_host(rec: RunRecord, records: list[RunRecord]) -> bool | None:
    """Is REC the first run of RECORDS on its host (host ids hold the boot id: a machine's first run after its start)?
    None without a host id."""
    if not rec.host_id:
        return None
    return not any(r.host_id == rec.host_id and r.run < rec.run for r in records if r is not rec)


def compare(quick_rec: RunRecord, full: RunRecord, est: QuickEstimate | None = None) -> dict:
    """A quick run's estimate against the full run it predicts: training time (train_runtime) and steady tokens/s
    (analysis.measure.throughput), the error and whether the measured value lies in the 95 % range, and the schedule
    against the full run's tokens.jsonl."""
    from analysis.measure import throughput

    est = est or estimate(quick_rec)
    measured = full.train_runtime_s
    tp = throughput.throughput(full).tokens_per_s
    out = {"experiment": quick_rec.experiment, "hw": quick_rec.hw, "quick_run": quick_rec.run, "full_run": full.run,
           "same_host": bool(quick_rec.host_id and quick_rec.host_id == full.host_id),
           "full_first": full.run < quick_rec.run,
           "quick_steps": est.steps_run, "fit_steps": est.fit_steps, "full_steps": full.global_steps,
           "form": est.model.form if est.model else None,
           "predicted_train_s": est.train_s, "low": est.train_s_low, "high": est.train_s_high,
           "measured_train_s": measured, "error_pct": None, "inside": None,
           "predicted_tokens_per_s": est.tokens_per_s, "tokens_per_s_low": est.tokens_per_s_low,
           "tokens_per_s_high": est.tokens_per_s_high, "measured_tokens_per_s": tp, "tokens_per_s_error_pct": None,
           "quick_wall_s": (quick_rec.run_status or {}).get("wall_s"), "notes": "; ".join(est.notes),
           "same_steps": same_steps(quick_rec, full),
           "error_parts": error_parts(est, quick_rec.schedule or [], full),
           "full_event_costs": full_event_costs(est, quick_rec.schedule or [], full), **_behind(est)}
    if est.train_s is not None and measured:
        out["error_pct"] = (est.train_s - measured) / measured * 100
        if est.train_s_low is not None and est.train_s_high is not None:  # set together
            out["inside"] = est.train_s_low <= measured <= est.train_s_high
    if est.tokens_per_s is not None and tp:
        out["tokens_per_s_error_pct"] = (est.tokens_per_s - tp) / tp * 100
    if quick_rec.schedule:
        check = schedule_vs_tokens(quick_rec.schedule, full)
        out.update(tokens_compared=check["compared"], tokens_differ=len(check["differ"]))
    return out


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


# ------------------------------------------------------------------------------------------------ CLI


def register(sub) -> None:
    p = sub.add_parser("quick", help="quick runs' estimates of the full run, against the full runs where made")
    p.add_argument("results_dir", help="results/ (results/<hw>/<experiment>/<run>/)")
    p.add_argument("--json", action="store_true",
                   help="print the comparison as a JSON list, one object per quick run (its estimate, the full run)")
    p.set_defaults(func=run)


def comparison_table(results_dir=None, records: list[RunRecord] | None = None) -> list[dict]:
    """One row per quick run under RESULTS_DIR (or of RECORDS, already read): its estimate and, where a full run
    followed it, the comparison."""
    if records is None:
        from analysis.parse.results import collect

        records = collect(results_dir)
    rows = []
    for q, full in pairs(records):
        est = estimate(q)
        on_host = {"first_on_host": first_on_host(q, records)}
        if full is not None:
            rows.append({**compare(q, full, est), **on_host})
        else:
            rows.append({"experiment": q.experiment, "hw": q.hw, "quick_run": q.run, "full_run": None,
                         "quick_steps": est.steps_run, "fit_steps": est.fit_steps,
                         "form": est.model.form if est.model else None, "predicted_train_s": est.train_s,
                         "low": est.train_s_low, "high": est.train_s_high,
                         "predicted_tokens_per_s": est.tokens_per_s, "tokens_per_s_low": est.tokens_per_s_low,
                         "tokens_per_s_high": est.tokens_per_s_high,
                         "quick_wall_s": (q.run_status or {}).get("wall_s"), "notes": "; ".join(est.notes),
                         **on_host, **_behind(est)})
    return rows


def _fmt(v, spec: str = ".1f") -> str:
    return "–" if v is None else format(v, spec)


def _yes_no(v) -> str:
    return "–" if v is None else ("yes" if v else "no")


def _parts_cell(parts: dict | None) -> str:
    """`+4.8 / +2.4 / +1.9`: error_parts' seconds, which add up to the error."""
    if not parts:
        return "–"
    return " / ".join(f"{parts[k]:+.1f}" for k in ("to_anchor_s", "steps_s", "events_s"))


def _same_steps_cell(same: dict | None) -> str:
    """`0.728 over 27 steps (GPU 1.00, host 0.61)`; – where the runs share too few steady intervals."""
    if not same or same.get("ratio") is None:
        return "–"
    split = (f" (GPU {same['busy_ratio']:.2f}, host {same['host_ratio']:.2f})"
             if same.get("busy_ratio") is not None and same.get("host_ratio") is not None else "")
    return f"{same['ratio']:.3f} over {same['steps']} steps{split}"


def run(args) -> int:
    import json

    rows = comparison_table(args.results_dir)
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    if not rows:
        print("no quick runs (make run-all ... QUICK=1)")
        return 0
    print("| hw | experiment | quick run (wall s) | first on host | steps run / fitted | form "
          "| predicted train s (95 %) | measured s | error | inside | error s: to anchor / steps / events "
          "| same steps: full / quick (GPU, host) | tokens/s predicted (95 %) / measured | schedule = tokens.jsonl |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        tok = "–" if r.get("tokens_compared") is None else (
            f"{r['tokens_compared'] - r['tokens_differ']}/{r['tokens_compared']} steps")
        after = "; after its full run" if r.get("full_first") else ""
        print(f"| {r['hw']} | {r['experiment']} | {r['quick_run']} ({_fmt(r.get('quick_wall_s'), '.0f')}{after}) "
              f"| {_yes_no(r.get('first_on_host'))} "
              f"| {r['quick_steps']} / {r['fit_steps']} | {r['form']} "
              f"| {_fmt(r['predicted_train_s'])} ({_fmt(r['low'])}-{_fmt(r['high'])}) "
              f"| {_fmt(r.get('measured_train_s'))} | {_fmt(r.get('error_pct'), '+.2f')} % "
              f"| {'–' if r.get('inside') is None else ('yes' if r['inside'] else 'NO')} "
              f"| {_parts_cell(r.get('error_parts'))} | {_same_steps_cell(r.get('same_steps'))} "
              f"| {_fmt(r['predicted_tokens_per_s'], '.0f')} ({_fmt(r['tokens_per_s_low'], '.0f')}-"
              f"{_fmt(r['tokens_per_s_high'], '.0f')}) / {_fmt(r.get('measured_tokens_per_s'), '.0f')} | {tok} |")
    print("\nThe 95 % range holds the quick run's own step noise and what the committed quick/full pairs were off by "
          "(data/quick_pairs.yaml); where a step is host-bound, compare the same-steps host ratio "
          "(docs/quick-runs.md).")
    return 0
