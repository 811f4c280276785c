"""The paired-round rule (analysis.judge.answer.pairs) and the order of an interleaved set (experiments/run/rounds.py),
on synthetic values: hand-computed ratios, no runs."""
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.judge.answer import pairs
from experiments.base.errors import InputError
from experiments.run import rounds


def _p(i, a, b, a_full=True, b_full=True):
    return pairs.Pair("S", i, "h", a, b, a_full, b_full)


def test_a_sooner_in_every_one_of_three_rounds_ranks_a_first():
    v = pairs.decide("A", "B", [_p(1, 30, 31), _p(2, 40, 41), _p(3, 35, 35.5)])
    assert v.faster == "a" and v.n == 3 and v.basis.startswith("sooner in every one of 3 paired rounds")


def test_overlapping_rounds_are_not_separable():
    v = pairs.decide("A", "B", [_p(1, 30, 31), _p(2, 41, 40), _p(3, 35, 36)])
    assert v.faster is None and v.basis.startswith("not separable on 3 rounds (A sooner in 2, B in 1")


def test_two_rounds_are_too_few_unless_beyond_drift():
    assert pairs.decide("A", "B", [_p(1, 30, 31), _p(2, 40, 41)]).faster is None
    v = pairs.decide("A", "B", [_p(1, 30, 46), _p(2, 40, 61)])  # 1.53x and 1.525x: beyond 1.5
    assert v.faster == "a" and "drifts" in v.basis


def test_a_bound_settles_only_the_side_below_it():
    """B a cut run's lower bound: A below it is sooner; A above it says nothing (B's epoch may be longer)."""
    assert pairs._sooner(_p(1, 30, 700, b_full=False)) == "a"
    assert pairs._sooner(_p(1, 800, 700, b_full=False)) is None


def test_bootstrap_decides_with_enough_rounds_and_mixed_signs():
    """Five rounds, B slower in four by 10 % and faster in one by 1 %: every-round fails, the bootstrap interval of
    B/A (geometric mean, resampled rounds) lies above 1."""
    ratios = [1.1, 1.1, 1.1, 1.1, 0.99]
    v = pairs.decide("A", "B", [_p(i, 10.0, 10.0 * r) for i, r in enumerate(ratios, 1)])
    assert v.faster == "a" and v.interval is not None and v.interval[0] > 1 and "bootstrap" in v.basis
    lo, hi = pairs.bootstrap_interval(ratios)
    assert lo <= math.exp(sum(math.log(r) for r in ratios) / 5) <= hi <= 1.1 + 1e-12


@settings(deadline=None)  # the bootstrap's 4,000 resamples
@given(st.lists(st.floats(0.5, 2.0), min_size=1, max_size=8))
def test_swapping_a_and_b_swaps_the_verdict(ratios):
    ps = [_p(i, 10.0, 10.0 * r) for i, r in enumerate(ratios, 1)]
    swapped = [pairs.Pair(p.set, p.round, p.host, p.b_s, p.a_s) for p in ps]
    v, w = pairs.decide("A", "B", ps), pairs.decide("B", "A", swapped)
    assert {None: None, "a": "A", "b": "B"}[v.faster] == {None: None, "a": "B", "b": "A"}[w.faster]


def test_rounds_rotate_and_put_plain_twins_abba():
    plan = rounds.rounds([("seed", 15), ("fast-gc", None), ("fast", None)], 3, {"fast"}, plain_rounds=2)
    assert [[i.label for i in r] for r in plan] == [
        ["seed@15", "fast-gc", "fast", "fast (plain)"],
        ["fast-gc", "fast (plain)", "fast", "seed@15"],
        ["fast", "seed@15", "fast-gc"]]


def test_rounds_refuse_bad_input():
    with pytest.raises(InputError):
        rounds.rounds([("fast", None)], 0, set())
    with pytest.raises(InputError):
        rounds.rounds([("fast", None)], 2, {"best"})
    with pytest.raises(InputError):
        rounds.rounds([("fast", None)], 2, {"fast"}, plain_rounds=3)
    with pytest.raises(InputError):
        rounds.parse_item("fast@0")
    assert rounds.parse_item("seed@15") == ("seed", 15) and rounds.parse_item("fast") == ("fast", None)
