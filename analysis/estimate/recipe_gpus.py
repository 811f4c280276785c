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
from experiments.base import userfiles

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

