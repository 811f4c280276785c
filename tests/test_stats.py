"""analysis.measure.stats owns every range: one N_BOOT, one z, the only bootstrap draws and percentiles (issue 31)."""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

from analysis.measure import stats

ROOT = Path(__file__).resolve().parents[1]
OWNER = ROOT / "analysis" / "measure" / "stats.py"
RANGE_CALLS = {"default_rng", "percentile", "quantile", "integers"}


def _modules():
    for top in ("analysis", "experiments"):
        for path in sorted((ROOT / top).rglob("*.py")):
            if path != OWNER:
                yield path


def test_no_range_drawn_outside_stats():
    found = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in RANGE_CALLS:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.func.attr}")
            if isinstance(node, ast.Constant) and node.value in (2000, 1.959963984540054) and \
                    "n_boot" in path.read_text(encoding="utf-8"):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value}")
    assert not found, found


def test_z95_is_the_normal_quantile():
    assert stats.z95() == 1.959963984540054


def test_ratio_of_sums_seeded_and_normal_past_the_cap():
    rng = np.random.default_rng(5)
    num, den = rng.uniform(1, 2, 50), rng.uniform(1, 2, 50)
    assert stats.ratio_of_sums(num, den) == stats.ratio_of_sums(num, den)
    point, low, high = stats.ratio_of_sums(num, den)
    assert low is not None and high is not None and low < point < high
    big = np.ones(stats.BOOTSTRAP_MAX + 1)
    assert stats.ratio_of_sums(big, big) == (1.0, 1.0, 1.0)
