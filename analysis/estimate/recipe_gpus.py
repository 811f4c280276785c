"""A recipe per GPU class: does it fit the class's memory, how long is its epoch, how many GPU-hours, what cost at a
price table (data/prices.yaml, dated list prices with their source; `--prices FILE` for yours).

Memory fit and time are the planner's (analysis.estimate.planner.estimate: its memory model and roofline, or a
measured step of the same recipe); where a committed full-epoch run of the recipe exists for a class, its
train_runtime (analysis.measure.jobtime) is the epoch time instead. A class the recipe does not fit gets no time and
no cost.
"""
from __future__ import annotations

from pathlib import Path

from analysis.estimate import planner
from analysis.parse.record import RunRecord
from experiments.base import runfiles, userfiles

DEFAULT_PRICES = planner.DEFAULT_PRICES


def price_source(path: str | Path | None = DEFAULT_PRICES) -> str | None:
    """The `# source:` comment line of a price table (where and when its prices were listed), None without one."""
    if path is None or not userfiles.present(path):
        return None
    for line in userfiles.read_text(path).splitlines():
        if line.startswith("# source:"):
            return line.removeprefix("# source:").strip()
    return None


def check_prices(path: str | Path | None) -> None:
    """Bad input (one line) for a price table that cannot be read: said before a tree is read, whether or not a
    recommended recipe then needs its prices."""
    if path is not None:
        planner.read_prices(path)
        price_source(path)


def cost(gpu_hours: float | None, price: float | None) -> float | None:
    """GPU-hours x price per GPU-hour; None where either is unknown."""
    return None if gpu_hours is None or price is None else gpu_hours * price


def recipe_kwargs(rec: RunRecord) -> dict:
    """planner.estimate's keyword arguments for the recipe REC trained (its args.json: planner.args_from_run)."""
    return planner.args_from_run(Path(rec.path) / runfiles.ARGS_JSON)


def gpu_rows(kwargs: dict, classes: list[str], measured: dict | None = None, prices: str | Path | None = DEFAULT_PRICES,
             results: str | Path | None = None) -> list[dict]:
    """One row per class of CLASSES: {hw, name, capacity_gib, needs_gib, fits, epoch_s, gpu_hours, price, currency,
    cost, source, host (of the measured run the row's epoch is, else None)}. MEASURED ({hw, train_runtime_s, run,
    host, peak_gib}): that class's epoch is the run's train_runtime, and its logged peak decides the fit on every
    class (the planner's memory model knows no padding-free rows and no Liger kernels, so for such a recipe it
    overstates the peak; `planner_needs_gib` keeps its figure)."""
    plans = planner.estimate(hw=classes, prices=prices, results=results, **kwargs)
    rows = []
    for p in plans:
        gpus, host = p["gpus"], None
        peak = (measured or {}).get("peak_gib")
        fits = peak <= p["capacity_gib"] if peak else p["fits"]
        if measured and p["hw"] == measured.get("hw") and measured.get("train_runtime_s"):
            epoch_s = measured["train_runtime_s"]
            source, host = "measured (full epoch)", measured.get("host")
        elif fits and p["total_time_s"] is not None:
            epoch_s, source = p["total_time_s"], f"planner ({p['time_source']})"
        elif fits:  # fits by the run's own peak, while the planner's model (no padding-free, no Liger) says no
            epoch_s, source = None, "time not modelled (padding-free rows, Liger)"
        else:
            epoch_s, source = None, "does not fit (" + ("the run's peak" if peak else "planner") + ")"
        hours = epoch_s / 3600 * gpus if epoch_s is not None else None
        price = p["price_per_gpu_hour"]
        rows.append({"hw": p["hw"], "name": p["name"], "capacity_gib": p["capacity_gib"],
                     "needs_gib": peak or p["needs_gib"], "planner_needs_gib": p["needs_gib"], "fits": fits,
                     "fit_basis": "measured peak" if peak else "planner memory model", "epoch_s": epoch_s,
                     "gpu_hours": hours, "price_per_gpu_hour": price, "currency": p["currency"],
                     "cost": cost(hours, price), "source": source, "host": host})
    return rows


def best_recipe_rows(classes: list[str], prices: str | Path | None = DEFAULT_PRICES,
                     results: str | Path | None = None, objective: str = "time", **job) -> list[dict]:
    """Per class of CLASSES the fastest recipe of global batch 16 that fits it (analysis.estimate.optimize; JOB:
    optimize's keyword arguments, the recipe's model and data by default): {hw, name, capacity_gib, recipe (the
    `swift sft` flags it adds to the seed recipe), needs_gib, epoch_s, low_s, high_s, gpu_hours, price_per_gpu_hour,
    currency, cost, time_kind (measured | profiled | scaled), time_source}; a class nothing fits gets recipe None."""
    from analysis.estimate.optimize import optimize

    job.setdefault("model", "Qwen2.5-7B-Instruct")
    plan = optimize(hw=classes, prices=prices, results=results, objective=objective, **job)
    rows = []
    for ch in plan.choices:
        b = ch.best
        rows.append({"hw": ch.hw, "name": ch.name, "capacity_gib": ch.capacity_gib,
                     "recipe": b.flags if b else None, "needs_gib": b.needs_gib if b else None,
                     "epoch_s": b.epoch_s if b else None, "low_s": b.low_s if b else None,
                     "high_s": b.high_s if b else None, "gpu_hours": b.gpu_hours if b else None,
                     "price_per_gpu_hour": ch.price_per_gpu_hour, "currency": ch.currency,
                     "cost": b.cost if b else None, "time_kind": b.time_kind if b else None,
                     "time_source": b.time_source if b else None})
    return rows
