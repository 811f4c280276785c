"""Where the suite's own files are: package data beside the code, in a checkout and in an installed wheel alike.

The wheel installs `analysis`, `experiments`, `data`, `seeds` and `notebooks` as sibling top-level packages, as they sit
in the checkout, so every location is relative to this package's parent folder. `data/` sits below both experiments/
and analysis/: each reads it, neither reads the other's folders for it.
"""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]      # the checkout (or site-packages of an installed wheel)
DATA = ROOT / "data"                            # hardware.yaml, models.yaml, planner.yaml, time_model.yaml, prices
SEEDS_DIR = ROOT / "seeds"                      # the seed articles' reviewed figures and claims
NOTEBOOKS = ROOT / "notebooks"                  # the report notebook
EXPERIMENTS = ROOT / "experiments"              # recipes.yaml, claims experiments, the experiment notebook


def relative(path: str | Path) -> str:
    """PATH relative to the checkout when it lies inside it (tables travel between machines), else as given."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)
