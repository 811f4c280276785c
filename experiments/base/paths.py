"""Where the suite's own files are: package data beside the code, in a checkout and in an installed wheel alike.

The wheel installs `analysis`, `experiments`, `data`, `seeds` and `notebooks` as sibling packages under swiftbench/ (the
one top-level package; swiftbench/__init__.py imports them by their own names), as they sit in the checkout, so every
location is relative to this package's parent folder: the checkout, or site-packages/swiftbench. `data/` sits below
both experiments/ and analysis/: each reads it, neither reads the other's folders for it.
"""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]      # the checkout (or site-packages of an installed wheel)
DATA = ROOT / "data"                            # hardware.yaml, models.yaml, planner.yaml, time_model.yaml, prices
SEEDS_DIR = ROOT / "seeds"                      # the seed articles' reviewed figures and claims
NOTEBOOKS = ROOT / "notebooks"                  # the report notebook
EXPERIMENTS = ROOT / "experiments"              # recipes.yaml, claims experiments, the experiment notebook
PACKAGED_RUNS = DATA / "committed-runs"         # the committed runs' files the planner reads (analysis.parse.packaged)
PACKAGED_LABEL = "the committed runs packaged with swiftbench"


def default_results() -> Path:
    """The runs the planner reads when no results folder is given: ./results where it exists, else the packaged copy
    of the committed runs (an installed wheel, or any folder without results/), else ./results (which reads as none)."""
    here = Path("results")
    return here if here.is_dir() or not PACKAGED_RUNS.is_dir() else PACKAGED_RUNS


def results_label(results: str | Path) -> str:
    """RESULTS as the planner's footer names it: the packaged copy said as such, any other folder as given."""
    if Path(results).resolve() == PACKAGED_RUNS.resolve() and not Path("results").is_dir():
        return f"{PACKAGED_LABEL} ({PACKAGED_RUNS}: no ./results here)"
    return str(results)


def relative(path: str | Path) -> str:
    """PATH relative to the checkout when it lies inside it (tables travel between machines), else as given."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)
