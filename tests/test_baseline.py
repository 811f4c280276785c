"""The speed-up baseline is the judge's decision (analysis.judge.answer.baseline), on typed candidates."""
from analysis.judge.answer.baseline import MIN_BASELINE_STEADY_STEPS, Candidate, pick_baseline


def test_the_asked_class_wins_where_it_has_a_time_and_a_throughput():
    rows = [Candidate("h200", "measured", 50.0, 5000.0, 80), Candidate("a10", "measured", 400.0, 600.0, 80)]
    assert pick_baseline(rows, "h200") == 0
    assert pick_baseline([Candidate("h200", "measured", 50.0, None, 80), *rows[1:]], "h200") == 1  # no tokens/s


def test_else_the_slowest_row_with_enough_steady_steps():
    short = Candidate("rtx4090", "measured", 900.0, 200.0, MIN_BASELINE_STEADY_STEPS - 5)
    long_ = Candidate("a100", "measured", 300.0, 800.0, MIN_BASELINE_STEADY_STEPS)
    assert pick_baseline([short, long_, Candidate("h200", "measured", 50.0, 5000.0, 80)], "a10") == 1
    assert pick_baseline([short], "a10") == 0  # none long enough: the slowest of all
    assert pick_baseline([Candidate("a10", "published", 500.0), Candidate("h100", "published", 900.0)], "l4") == 1
    assert pick_baseline([Candidate("a10", "measured", None, 10.0, 80)], "a10") is None
