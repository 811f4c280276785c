"""The recommendation in words and its side tables (`swiftbench tables`, its `--answer`, README's answer block, the
report's first screen): analysis.judge.answer.recommend's Recommendation and analysis.judge.answer.classes'
ClassAnswers, formatted. Every number here is a field or property of those values; this module computes none. The
answer's two tables (each GPU class's recipe, every recipe per host) are the typed view's
(analysis.judge.answer.view), rendered by analysis.present.view_render.
"""
from __future__ import annotations

import pandas as pd

from analysis.estimate.epoch import runs_text
from analysis.judge.answer import view
from analysis.judge.answer.classes import ClassAnswer, compare_classes
from analysis.judge.answer.published import SEED_EXPERIMENT, short
from analysis.judge.answer.recommend import HostEpochs, Recommendation
from analysis.measure import repeats
from analysis.present import view_render


def seconds_text(s: float | None) -> str:
    """A duration for a sentence: seconds under 2 minutes, else minutes, else hours."""
    if s is None:
        return "–"
    if s < 120:
        return f"{s:.1f} s"
    return f"{s / 60:.1f} min" if s < 5400 else f"{s / 3600:.1f} h"


def _unit(s: float) -> tuple[str, float]:
    return ("s", 1.0) if s < 120 else ("min", 60.0) if s < 5400 else ("h", 3600.0)


def band_text(s: float | None, low: float | None, high: float | None) -> str:
    """A duration's band in the duration's own unit ('3.4-4.1 min' beside '3.7 min'): one cell, one unit."""
    if s is None or low is None or high is None:
        return "–"
    unit, div = _unit(s)
    return f"{span(low / div, high / div)} {unit}"


def money(value: float | None, currency: str | None) -> str:
    if value is None:
        return "–"
    return f"{value:.4f} {currency}" if currency else f"{value:.4f}"


def span(low: float | None, high: float | None, fmt: str = "{:.1f}") -> str:
    """'a-b', or 'a' where both are one."""
    if low is None or high is None:
        return "–"
    a, b = fmt.format(low), fmt.format(high)
    return a if a == b else f"{a}-{b}"


# ------------------------------------------------------------------------------------------------ frames
# The side tables are typed views (analysis.measure.repeats' RepeatRow and HarnessRow, analysis.judge.answer.view's
# OrderRow and RecommendedRow) rendered by analysis.present.view_render: no column's words here.


def repeats_frame(groups: list[repeats.RecipeRuns]) -> pd.DataFrame:
    """Each recipe's runs per host and harness: count, median and range of epoch, steady step, start-up and the
    host probe (analysis.measure.repeats.recipe_runs)."""
    return view_render.to_frame(repeats.repeat_rows(groups), repeats.RepeatRow)


def harness_frame(pairs: list[repeats.HarnessPair]) -> pd.DataFrame:
    """Each paired round of a recipe through the launcher and as the plain command."""
    return view_render.to_frame(repeats.harness_rows(pairs), repeats.HarnessRow)


def harness_line(pairs: list[repeats.HarnessPair]) -> str | None:
    """The harness's overhead in one line: what the launcher adds to the epoch of the command a user pastes."""
    o = repeats.overhead(pairs)
    if o is None:
        return None
    recipes = ", ".join(sorted({p.experiment for p in pairs}))
    hosts = len({p.host for p in pairs})
    cold = [p for p in pairs if p.cold]
    warm = repeats.overhead([p for p in pairs if not p.cold])
    cold_text = "".join(f"; the {p.ratio - 1:+.1%} round's {p.cold} run was the host's first run of {p.experiment} "
                        f"(cold caches)" for p in cold)
    warm_text = (f"; without it, median {warm.median:+.1%} over {warm.n}" if cold and warm is not None else "")
    return (f"The harness: {recipes} through the launcher against the printed command alone (plain `swift sft`), "
            f"{o.n} paired round{'s' if o.n != 1 else ''} (ABBA) on {hosts} host{'s' if hosts != 1 else ''}: the "
            f"launcher's epoch minus the plain one's, median {o.median:+.1%} ({o.low:+.1%} to {o.high:+.1%}"
            f"{cold_text}{warm_text}).")


def orders_frame(rec: Recommendation) -> pd.DataFrame:
    return view_render.to_frame(view.order_rows(rec), view.OrderRow)


def recommended_frame(rec: Recommendation, classes: list[ClassAnswer]) -> pd.DataFrame:
    """The recommendation as one row (analysis.judge.answer.view.RecommendedRow)."""
    return view_render.to_frame([view.recommended_row(rec, classes, sentence(rec, classes))], view.RecommendedRow)


# ------------------------------------------------------------------------------------------------ words


def _x_seed(rec: Recommendation, d: HostEpochs) -> str:
    xs = rec.x_seed_range()
    seed = d.seed
    if (seed is None or d.epoch_x_seed is None) and rec.seed_elsewhere is not None and rec.x_seed_across_hosts:
        other = rec.seed_elsewhere
        what = "" if other.full else f", a lower bound from a {other.steps_run}-step cut run"
        return (f" against {seconds_text(other.seconds)} for the published seed recipe on another host{what} "
                f"({rec.x_seed_across_hosts:.1f}x sooner, a ratio across hosts)")
    if seed is None or d.epoch_x_seed is None:
        return ""
    per_round = d.x_seed_spread
    if per_round is not None and per_round.n > 1:
        bound = "" if seed.full else f", a lower bound from a {seed.steps_run}-step cut run"
        return (f" against {'' if seed.full else 'at least '}{seconds_text(seed.seconds)} for the published seed "
                f"recipe on host {d.host[:8]}{bound} ({per_round.median:.1f}x sooner, median of {per_round.n} paired "
                f"rounds there, {span(per_round.low, per_round.high)}x)")
    where = ("the same host" if seed.full else
             f"the same host, whose seed epoch is a lower bound from a {seed.steps_run}-step cut run")
    over = (f"; {span(*xs)}x over the {sum(1 for r in rec.chosen if r.epoch_x_seed)} hosts with a seed epoch"
            if xs and xs[0] != xs[1] else "")
    return (f" against {seconds_text(seed.seconds)} for the published seed recipe on {where} "
            f"({d.epoch_x_seed:.1f}x sooner{over})")


def gpu_clause(classes: list[ClassAnswer]) -> str:
    """Then the GPU: every class's recipe, the soonest and the cheapest, and how sure
    (analysis.judge.answer.classes.compare_classes decides; this words it)."""
    if not classes:
        return ""
    v = compare_classes(classes)
    if not v.timed or v.soonest is None or v.soonest.choice is None:
        return "; then the GPU: no class shown has a recipe that is shown to fit"
    text = f"; then the GPU: {len(v.timed)} of the {len(classes)} classes shown have a recipe that fits"
    text += f" (none: {', '.join(short(c.hw) for c in v.untimed)})" if v.untimed else ""
    soon = v.soonest.choice
    text += (f"; the {short(v.soonest.hw)} finishes soonest ({seconds_text(soon.epoch_s)}, {view.obtained_text(soon)}, "
             f"{soon.experiment})")
    if v.within_reach:
        text += " with the " + ", ".join(
            f"{short(c.hw)}'s {band_text(c.choice.epoch_s, c.choice.low_s, c.choice.high_s)} "
            f"({view.obtained_text(c.choice)}) within reach"
            for c in v.within_reach if c.choice is not None)
        if soon.measured and any(c.choice is not None and c.choice.measured for c in v.within_reach):
            text += " (measured on different machines: the order between them is the hosts' as much as the GPUs')"
    cheap = v.cheapest
    if cheap is not None:
        rng = cheap.cost_range
        text += (f", the {short(cheap.hw)} costs least ({money(cheap.cost, cheap.currency)}"
                 + (f", {view.obtained_text(cheap.choice)}" if cheap.choice is not None else "")
                 + (f", {span(*rng, fmt='{:.4f}')} with the model's band" if rng and rng[0] != rng[1] else "")
                 + " at the price table's rate)")
    return text


def sentence(rec: Recommendation, classes: list[ClassAnswer] | None = None) -> str:
    """The recommendation in one sentence (no number that REC or CLASSES do not hold)."""
    d = rec.deciding
    if rec.experiment is None or d is None:
        return f"No recommended recipe yet: {rec.note}."
    gpu = short(rec.hw) if rec.hw else "this GPU"
    est = next((c.choice.estimate for c in classes or [] if c.hw == rec.hw and c.choice is not None
                and c.choice.experiment == rec.experiment and c.choice.estimate is not None), None)
    if est is not None:  # the estimator's figure, the class table's: every host's full epochs
        when = (f"{span(est.low_s, est.high_s)} s on the {gpu} (median {seconds_text(est.epoch_s)}, {est.rests_on}"
                if est.runs > 1 else f"{seconds_text(est.epoch_s)} on the {gpu} ({est.rests_on}")
        if est.startup_s is not None:
            when += f"; start-up {seconds_text(est.startup_s)} before it"
    else:
        runs = d.epoch_spread
        when = (f"{span(runs.low, runs.high)} s on the {gpu} (median {seconds_text(runs.median)}, "
                f"{runs_text(runs.n, 1)}" if runs is not None and runs.n > 1
                else f"{seconds_text(d.epoch_s)} on the {gpu} ({runs_text(1, 1)}")
    over = ")"
    if rec.experiment == SEED_EXPERIMENT:
        head = f"For this job, the published recipe ({rec.experiment}) is the fastest measured"
    else:
        head = (f"For this job ({d.steps} optimizer steps), change the settings before the GPU: recipe "
                f"{rec.experiment} finishes the epoch in {when}{over}" + _x_seed(rec, d))
    loss = ""
    if d.eval_loss is not None and d.seed_eval_loss is not None and d.seed_range is not None:
        dummy = " on dummy weights" if "dummy weights" in (d.labels or "") else ""
        loss = (f", at equal eval loss{dummy} ({d.eval_loss:.4f} vs {d.seed_eval_loss:.4f} at step {d.eval_step}, "
                f"within the seeds' range {d.seed_range:.4f})")
    order = ""
    others_names = sorted({r.experiment for r in rec.rows if r.experiment != rec.experiment})
    beaten = sorted({o.slower for o in rec.orders if o.faster == rec.experiment})
    if others_names:
        order = (f"; it ranks before {', '.join(beaten)} (the orders table says on which runs)" if beaten else "")
        if rec.note:
            order += f" ({rec.note})"
    return head + loss + order + gpu_clause(classes or []) + "."


def undetermined_lines(rec: Recommendation) -> list[str]:
    """One line per order the runs do not settle, with what would settle it."""
    return [f"{u.a} vs {u.b}: undetermined ({u.why}); settle with {u.settle}" for u in rec.undetermined]

