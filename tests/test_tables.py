"""Speedup and convergence tables on a results tree built from fixtures."""
import pytest

from analysis.tables import convergence_table, loss_drop_stats, speedup_table


def test_speedup_versus_slowest_when_baseline_missing(results_tree):
    df = speedup_table(results_tree, baseline="a10")
    seed = df[(df.experiment == "seed") & (df.source == "measured")].set_index("hw")
    # a100 runs the 2.0 s/step fixture, h200 the 0.9 s one, h100 the killed 6.2 s one: h100 is slowest.
    assert set(seed.index) == {"a100", "h100", "h200"}
    assert seed.loc["h100", "speedup"] == pytest.approx(1.0)
    assert seed.loc["h200", "speedup"] == pytest.approx(seed.loc["h100", "ms_per_step"] / seed.loc["h200", "ms_per_step"])
    assert seed.loc["h200", "ms_per_step"] == pytest.approx(900, rel=0.02)
    assert seed.loc["h200", "ms_per_micro_step"] == pytest.approx(900 / 16, rel=0.02)
    assert "dummy weights" in seed.loc["h200", "labels"] and "ms-swift 4.6.0" in seed.loc["h200", "labels"]


def test_speedup_explicit_baseline(results_tree):
    df = speedup_table(results_tree, baseline="a100")
    seed = df[(df.experiment == "seed") & (df.source == "measured")].set_index("hw")
    assert seed.loc["a100", "speedup"] == pytest.approx(1.0)
    assert seed.loc["h200", "speedup"] == pytest.approx(2.0 / 0.9, rel=0.03)


def test_published_rows_beside_measured(results_tree):
    df = speedup_table(results_tree)
    pub = df[df.source == "published"].set_index("hw")
    assert pub.loc["a10", "ms_per_step"] == 1248 and pub.loc["h100", "ms_per_step"] == 387
    assert pub.loc["a10", "speedup"] == pytest.approx(1.0)
    assert pub.loc["h100", "speedup"] == pytest.approx(1248 / 387)
    seed = df[(df.experiment == "seed") & (df.source == "measured")].set_index("hw")
    # h100 measured (fixture) against the published 387 ms per (micro-)step.
    assert seed.loc["h100", "published_ms_per_step"] == 387
    assert seed.loc["h100", "measured_over_published"] == pytest.approx(seed.loc["h100", "ms_per_micro_step"] / 387)


def test_convergence(results_tree):
    df = convergence_table(results_tree)
    row = df[(df.hw == "h200") & (df.experiment == "bs16")].iloc[0]
    assert row.final_eval_loss == pytest.approx(9.98833084) and row.steps == 94
    assert row.wall_time_to_last_eval_s == pytest.approx(1.109092 * 94)
    assert (df.source == "published").sum() >= 4


def test_loss_drop_by_hand():
    curve = [[0, 10.0], [10, 8.0], [20, 6.0], [30, 5.0], [40, 5.2], [50, 4.8]]
    out = loss_drop_stats(curve, final=5.0)
    # drop 5.0 over 50 steps -> 10 per 100 steps; 50 % (7.5) first reached at 20 (6.0); 90 % (5.5) at 30.
    assert out == {"loss_drop_per_100_steps": 10.0, "steps_to_50pct_drop": 20, "steps_to_90pct_drop": 30}


def test_failed_run_shows_as_failed(results_tree):
    import json
    bad = results_tree / "a10" / "seed" / "run-oom"
    bad.mkdir(parents=True)
    (bad / "run.json").write_text(json.dumps({"status": "failed", "reason": "CUDA out of memory", "experiment": "seed"}))
    df = speedup_table(results_tree)
    row = df[(df.hw == "a10") & (df.source == "measured")].iloc[0]
    assert row.status == "failed" and "out of memory" in row.labels
