"""`swiftbench plan --optimize time|cost`: for the user's job, per GPU class the fastest recipe that fits, its time
with the model's band, GPU-hours and cost.

The recipes searched are those that change neither the result's schedule nor its loss much: the global batch stays
16 (per-device batch x grad-accum in 16x1, 8x2, 4x4, 2x8, 1x16), with padding-free rows, Liger's kernels and
gradient checkpointing each on or off: 40 candidates, each written as the `swift sft` flags it adds to the seed
recipe (batch 1 x 16, padded rows, no Liger, checkpointing on). A candidate fits a class when the planner's memory
model says `yes` (needs within the card's GiB) or a committed full epoch of it trained within them; its time is the
one estimator's (analysis.estimate.epoch: the answer's and plan's) where the recipe has committed full epochs, else
a committed profile carried over or scaled from the reference profiles (planner._class_time) x steps x what a full
epoch adds. GPU-hours and cost are the job's: start-up + epoch. Within a class the fastest is also the cheapest
(cost = hours x one price); `cost` orders the classes by cost instead of time.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from analysis.estimate import epoch, jobinputs, planner, scaled, transfer
from analysis.estimate.lengths import Lengths, batch_stats, job_lengths
from analysis.estimate.prices import DEFAULT_PRICES, price_table
from analysis.estimate.workload import capacity_gib, constants, fit_verdict, memory
from experiments.base import hardware
from experiments.base.errors import InputError
from experiments.recipes import recipes

GLOBAL_BATCH = 16
SPLITS = ((16, 1), (8, 2), (4, 4), (2, 8), (1, 16))
OBJECTIVES = ("time", "cost")


@dataclass(frozen=True)
class Candidate:
    """One recipe on one class: fit, epoch time and its band, GPU-hours and cost (None where it does not fit)."""

    recipe: scaled.Recipe
    flags: str
    needs_gib: float
    fit: str
    epoch_s: float | None
    low_s: float | None
    high_s: float | None
    startup_s: float | None  # before the epoch (analysis.estimate.epoch); None where no committed run says
    job_s: float | None      # start-up + epoch: GPU-hours and cost are the job's
    gpu_hours: float | None
    cost: float | None
    time_kind: str | None
    time_source: str | None


@dataclass(frozen=True)
class ClassChoice:
    """A class's best recipe (the fastest that fits), how many of the candidates fit, and its price."""

    hw: str
    name: str
    capacity_gib: float
    best: Candidate | None
    fitting: int
    tried: int
    price_per_gpu_hour: float | None
    currency: str | None


@dataclass(frozen=True)
class Plan:
    """The job, one choice per class (ordered by the objective), and which class finishes soonest and costs least."""

    model: str
    samples: int
    epochs: int
    data: str
    objective: str
    choices: tuple[ClassChoice, ...]
    soonest: str | None
    cheapest: str | None
    sure_soonest: bool   # its band's slow end is before every other class's fast end
    sure_cheapest: bool  # likewise for cost
    prices: str


def flags(recipe: scaled.Recipe) -> str:
    """The `swift sft` flags RECIPE adds to the seed recipe's (batch 1 x 16, padded, no Liger, checkpointing on)."""
    out = []
    if (recipe.batch, recipe.grad_accum) != (1, 16):
        out.append(f"--per_device_train_batch_size {recipe.batch} --gradient_accumulation_steps {recipe.grad_accum}")
    if recipe.padding_free:  # with SDPA, ms-swift 4.x refuses padding-free rows unless the plugin's attention runs
        out.append(f"--padding_free true --attn_impl sdpa --external_plugins {recipes.PLUGIN_SHELL} "
                   "--callbacks sdpa_no_cudnn")
    if recipe.liger:
        out.append("--use_liger_kernel true")
    if not recipe.gradient_checkpointing:
        out.append("--gradient_checkpointing false")
    if recipe.lora_rank != 8:
        out.append(f"--lora_rank {recipe.lora_rank}")
    return " ".join(out) or "(the seed recipe as it is)"


def candidates(lora_rank: int = 8) -> list[scaled.Recipe]:
    return [scaled.Recipe(b, ga, pf, lig, gc, lora_rank) for b, ga in SPLITS for pf in (False, True)
            for lig in (False, True) for gc in (True, False)]


def optimize(model: str, samples: int = 1500, epochs: int = 1, max_length: int = 2048, seq_len: int | None = None,
             mean_len: float | None = None, lengths: str | Path | Lengths | None = None, lora_rank: int = 8,
             hw: str | list[str] | None = None, prices: str | Path | None = None, results: str | Path | None = None,
             objective: str = "time") -> Plan:
    """The best recipe per class for the job (see the module docstring)."""
    if objective not in OBJECTIVES:
        raise InputError(None, f"--optimize {objective!r}: use time or cost")
    for name, value in (("--samples", samples), ("--epochs", epochs), ("--max-length", max_length),
                        ("--lora-rank", lora_rank)):
        jobinputs.positive_int(name, value)
    keys = jobinputs.hw_list(hw)
    price_file = Path(prices) if prices else DEFAULT_PRICES
    table, currency = price_table(price_file)
    shapes = jobinputs.resolve_model(model)
    c = constants()
    data = job_lengths(max_length, seq_len, mean_len, lengths, c)
    seq = min(seq_len or data.longest, max_length)
    records, _ = planner._collect(results)
    refs = scaled.references(records) if records else None
    per_class: dict[str, list[Candidate]] = {k: [] for k in keys}
    for recipe in candidates(lora_rank):
        stats = batch_stats(data, recipe.batch, recipe.padding_free, samples)
        mem = memory(shapes, "lora", seq, recipe.batch, recipe.gradient_checkpointing, lora_rank, c,
                     padding_free=recipe.padding_free, liger=recipe.liger,
                     packed_tokens=stats.max_tokens if recipe.padding_free else None)
        runs = [r for r in planner._matching_runs(records, None, shapes["name"], "lora", recipe.batch,
                                                  recipe.grad_accum, max_length, recipe.gradient_checkpointing,
                                                  lora_rank, recipe.padding_free, recipe.liger)
                if planner._same_data(r, data)]
        profiled = next((transfer.profile_step(r) for r in runs
                         if r.hw == transfer.profiled_class() and transfer.transferable(r)), None)
        synth = scaled.scaled_step(shapes, recipe, stats, refs, label=shapes["name"]) \
            if profiled is None and refs is not None else None
        steps = math.ceil(samples / GLOBAL_BATCH) * epochs
        factor, _ = planner._epoch_factor(runs, steps, transfer.profiled_class())
        for key in keys:
            cap = capacity_gib(hardware.require(key))
            fit = fit_verdict(mem.needs_gib, mem.activations_gib, cap, c=c)
            if epoch.measured_fit(runs, cap).fits:  # a committed full epoch trained within it: as plan and the answer
                fit = "yes"
            # the one estimator first (the recipe's committed full epochs: plan's and the answer's figure), else the
            # step model x steps x what a full epoch adds on the profiled class
            est, _why = epoch.try_epoch_on(epoch.same_job(runs, steps), key) if fit == "yes" else (None, None)
            t = planner._class_time(key, next((r for r in runs if r.hw == key), None), profiled, synth, math.nan) \
                if est is None and fit == "yes" and (profiled is not None or synth is not None
                                                     or any(r.hw == key for r in runs)) else None
            if est is not None:
                span_s = (est.epoch_s, est.low_s, est.high_s)
                start, kind, source = est.startup_s, est.kind, est.basis
            elif t is not None:
                span_s = (t.step_s * steps * factor, t.low_s * steps * factor, t.high_s * steps * factor)
                start, kind, source = None, t.kind, t.source
            else:
                span_s, start, kind, source = None, None, None, None
            job_s = span_s[0] + (start or 0.0) if span_s else None
            hours = job_s / 3600 if job_s is not None else None
            price = table.get(key)
            per_class[key].append(Candidate(
                recipe=recipe, flags=flags(recipe), needs_gib=mem.needs_gib, fit=fit,
                epoch_s=span_s[0] if span_s else None, low_s=span_s[1] if span_s else None,
                high_s=span_s[2] if span_s else None, startup_s=start, job_s=job_s, gpu_hours=hours,
                cost=hours * price if hours is not None and price is not None else None,
                time_kind=kind, time_source=source))
    choices = []
    for key in keys:
        timed = [x for x in per_class[key] if x.epoch_s is not None]
        best = min(timed, key=lambda x: (x.epoch_s, x.needs_gib)) if timed else None
        spec = hardware.require(key)
        choices.append(ClassChoice(hw=key, name=spec.name, capacity_gib=capacity_gib(spec), best=best,
                                   fitting=len(timed), tried=len(per_class[key]), price_per_gpu_hour=table.get(key),
                                   currency=currency or "USD"))
    return _plan(shapes["name"], samples, epochs, data.source, objective, choices,
                 f"{price_file}" + ("" if prices else " (built in)"))


def _plan(model: str, samples: int, epochs: int, data: str, objective: str, choices: list[ClassChoice],
          prices: str) -> Plan:
    """Order the classes by OBJECTIVE; name the soonest and the cheapest, and whether each is sure: its band's
    unfavourable end ahead of every other class's favourable end (a cost band is the time band x the price)."""
    rows = [(ch, ch.best) for ch in choices if ch.best is not None and ch.best.epoch_s is not None]
    times = [(b.epoch_s or 0.0, b.low_s or 0.0, b.high_s or 0.0, ch.hw) for ch, b in rows]
    costs = [(b.cost, (b.low_s or 0.0) * b.cost / (b.epoch_s or 1.0), (b.high_s or 0.0) * b.cost / (b.epoch_s or 1.0),
              ch.hw) for ch, b in rows if b.cost is not None]

    def pick(values: list[tuple[float, float, float, str]]) -> tuple[str | None, bool]:
        if not values:
            return None, False
        best = min(values)
        return best[3], all(v[1] > best[2] for v in values if v[3] != best[3])

    soonest, sure_time = pick(times)
    cheapest, sure_cost = pick(costs)
    rank = {hw: i for i, (*_, hw) in enumerate(sorted(times if objective == "time" else costs))}
    ordered = sorted(choices, key=lambda ch: (rank.get(ch.hw, len(rank)), ch.hw))
    return Plan(model=model, samples=samples, epochs=epochs, data=data, objective=objective,
                choices=tuple(ordered), soonest=soonest, cheapest=cheapest, sure_soonest=sure_time,
                sure_cheapest=sure_cost, prices=prices)
