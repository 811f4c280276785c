"""Speedup and convergence tables on a results tree built from fixtures: every number is the measure stage's."""
import json

import pytest

from analysis.measure import compare, flops, loss, steps, throughput
from analysis.parse.record import RunRecord
from analysis.parse.results import collect
from analysis.present.tables import convergence_table, speedup_table, tables


def _record(results_tree, hw, exp):
    return next(r for r in collect(results_tree) if (r.hw, r.experiment) == (hw, exp))


def test_speedup_versus_slowest_when_baseline_missing(results_tree):
    df = speedup_table(results_tree, baseline="a10")
    seed = df[(df.experiment == "seed") & (df.source == "measured")].set_index("hw")
    # a100 runs the 2.0 s/step fixture, h200 the 0.9 s one, h100 the killed 6.2 s one. The killed run has no tokens/s
    # (no summary line, so no mean sample length), so no speed-up can be taken against it: the slowest row with one,
    # a100, is the baseline.
    assert set(seed.index) == {"a100", "h100", "h200"}
    assert (seed["baseline"] == "a100").all()
    assert seed.loc["a100", "speedup"] == pytest.approx(1.0)
    assert seed.loc["h200", "speedup"] == pytest.approx(2.0 / 0.9, rel=0.03)
    a100, h200 = _record(results_tree, "a100", "seed"), _record(results_tree, "h200", "seed")
    assert seed.loc["h200", "speedup"] == compare.speedup(a100, h200).factor
    assert seed.loc["h200", "speedup"] == pytest.approx(
        throughput.throughput(h200).tokens_per_s / throughput.throughput(a100).tokens_per_s)
    assert seed.loc["h100", "speedup"] != seed.loc["h100", "speedup"]  # NaN: the killed run has no tokens/s
    assert seed.loc["h200", "ms_per_step"] == pytest.approx(900, rel=0.02)
    assert seed.loc["h200", "ms_per_micro_step"] == pytest.approx(900 / 16, rel=0.02)
    assert "dummy weights" in seed.loc["h200", "labels"] and "ms-swift 4.6.0" in seed.loc["h200", "labels"]


def test_speedup_explicit_baseline(results_tree):
    df = speedup_table(results_tree, baseline="a100")
    seed = df[(df.experiment == "seed") & (df.source == "measured")].set_index("hw")
    assert seed.loc["a100", "speedup"] == pytest.approx(1.0)
    assert seed.loc["h200", "speedup"] == pytest.approx(2.0 / 0.9, rel=0.03)


def test_measured_row_is_the_measure_stage(results_tree):
    df = speedup_table(results_tree)
    row = df[(df.hw == "h200") & (df.experiment == "bs16")].iloc[0]
    rec = _record(results_tree, "h200", "bs16")
    st, tp = steps.step_time(rec), throughput.throughput(rec)
    assert row.ms_per_step == st.median * 1000
    assert row.ms_per_step_ci95 == f"{st.ci95_low * 1000:.0f}-{st.ci95_high * 1000:.0f}"
    assert row.ms_per_micro_step == steps.micro_step_ms(rec)
    assert (row.tokens_per_s, row.tokens_per_s_low, row.tokens_per_s_high) == (tp.tokens_per_s, tp.low, tp.high)
    assert row.tokens_per_s_low < row.tokens_per_s < row.tokens_per_s_high
    assert row.tokens_source == "mean length x samples per step"  # no tokens.jsonl in the fixture
    # ratio of sums over the steady intervals, by hand: mean tokens per sample x 16 per step over their seconds
    kept = steps.steady_intervals(rec)
    assert row.tokens_per_s == pytest.approx(
        127.801209 * 16 * sum(iv.steps for iv in kept) / sum(iv.seconds for iv in kept))
    assert row.samples_per_s == pytest.approx(16 / st.median)
    assert row.mfu == flops.mfu(rec, tp.tokens_per_s).mfu
    assert row.peak_gib == 75.80


def test_published_rows_beside_measured(results_tree):
    df = speedup_table(results_tree)
    pub = df[df.source == "published"].set_index("hw")
    # the article's "step" is one sample: its figures sit in ms_per_sample, and no published row has an optimizer-step
    # time, so no row puts a per-sample time beside a per-step one
    assert pub.loc["a10", "ms_per_sample"] == 1248 and pub.loc["h100", "ms_per_sample"] == 387
    assert pub["ms_per_step"].isna().all()
    assert pub.loc["a10", "speedup"] == pytest.approx(1.0)
    assert pub.loc["h100", "speedup"] == pytest.approx(1248 / 387)
    assert pub.loc["h100", "speedup"] == compare.time_speedup(1248, 387).factor
    assert pub["tokens_per_s"].isna().all()  # the article's tokens/s column is illegible: no number
    seed = df[(df.experiment == "seed") & (df.source == "measured")].set_index("hw")
    # measured per sample = optimizer-step time / 16 samples: the h200 fixture's 0.9 s step is 56.25 ms per sample;
    # a100 (2.0 s per step, 125 ms per sample) against its published 621 ms per sample
    assert seed.loc["h200", "ms_per_sample"] == pytest.approx(seed.loc["h200", "ms_per_step"] / 16)
    assert seed.loc["h200", "ms_per_sample"] == pytest.approx(900 / 16, rel=0.02)
    assert seed.loc["a100", "published_ms_per_sample"] == 621
    assert seed.loc["a100", "measured_over_published"] == pytest.approx(seed.loc["a100", "ms_per_sample"] / 621)


def test_convergence(results_tree):
    df = convergence_table(results_tree)
    row = df[(df.hw == "h200") & (df.experiment == "bs16")].iloc[0]
    assert row.final_eval_loss == pytest.approx(9.98833084) and row.steps == 94
    assert row.wall_time_to_last_eval_s == pytest.approx(1.109092 * 94)
    assert row.final_train_loss == pytest.approx((9.79417877 + 9.86962967 + 10.0776268) / 3)
    assert (df.source == "published").sum() >= 4
    pub = df[df.source == "published"].set_index("hw")
    assert (pub["steps"] == 873).all() and pub["final_eval_loss"].isna().all()  # losses illegible: text only
    assert pub.loc["h100", "labels"] == "published; loss text '712'"


def test_loss_drop_by_hand():
    curve = [[0, 10.0], [10, 8.0], [20, 6.0], [30, 5.0], [40, 5.2], [50, 4.8]]
    rec = RunRecord(path="x", hw=None, experiment=None, run="x", train_loss=curve)
    assert loss.final_train_loss(rec) == pytest.approx(5.0)  # mean of the last three: (5.0 + 5.2 + 4.8) / 3
    out = loss.loss_drop_stats(rec)
    # drop 5.0 over 50 steps -> 10 per 100 steps; 50 % (7.5) first reached at 20 (6.0); 90 % (5.5) at 30.
    assert out.loss_drop_per_100_steps == pytest.approx(10.0)
    assert (out.steps_to_50pct_drop, out.steps_to_90pct_drop) == (20, 30)


def test_failed_run_shows_as_failed(results_tree):
    bad = results_tree / "a10" / "seed" / "run-oom"
    bad.mkdir(parents=True)
    (bad / "run.json").write_text(json.dumps({"status": "failed", "reason": "CUDA out of memory",
                                              "experiment": "seed"}))
    df = speedup_table(results_tree)
    row = df[(df.hw == "a10") & (df.source == "measured")].iloc[0]
    assert row.status == "failed" and "out of memory" in row.labels
    assert row.baseline == "a100" and row.speedup != row.speedup  # a10 has no time: not the baseline, no speed-up


def test_compact_and_cli_json(results_tree, capsys):
    from analysis.cli import main

    t = tables(results_tree, compact=True)
    assert "tokens_per_s_low" not in t.speedup.columns and "speedup" in t.speedup.columns
    assert main(["tables", str(results_tree), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    bs16 = next(r for r in out["speedup"] if r["experiment"] == "bs16")
    assert {"tokens_per_s_low", "tokens_per_s_high", "tokens_source", "speedup", "baseline"} <= set(bs16)
    assert bs16["speedup"] == pytest.approx(1.0) and bs16["baseline"] == "h200"


def _host(run_dir, host_id, python_ns):
    env = json.loads((run_dir / "env.json").read_text()) if (run_dir / "env.json").is_file() else {"hw": "h200"}
    env["host"] = {"fingerprint": {"host_id": host_id},
                   "probe": {"python_loop": {"value": python_ns}, "dispatch": {"value": 6.6},
                             "lora_step": {"value": 0.38}}}
    (run_dir / "env.json").write_text(json.dumps(env))


def test_runs_from_two_hosts_are_two_rows_and_their_ratio_is_cross_host(results_tree):
    """The same recipe on two hosts: one row per host with its id and probe figures; the speed-up between them says
    cross-host. Two runs with one host id share a row (the least cut one)."""
    import shutil

    first = next((results_tree / "h200" / "seed").iterdir())
    second = first.parent / "20991231-000000"
    shutil.copytree(first, second)
    _host(first, "aaaaaaaaaaaa", 58.0)
    _host(second, "bbbbbbbbbbbb", 41.0)
    df = speedup_table(results_tree, baseline="h200")
    seed = df[(df.experiment == "seed") & (df.source == "measured") & (df.hw == "h200")].set_index("host")
    assert set(seed.index) == {"aaaaaaaaaaaa", "bbbbbbbbbbbb"}
    assert seed.loc["bbbbbbbbbbbb", "host_python_ns"] == 41.0 and seed.loc["aaaaaaaaaaaa", "host_lora_ms"] == 0.38
    hosts = set(seed["speedup_hosts"])
    assert hosts == {"same host", "cross-host"}  # the baseline against itself, the other host against it
    _host(second, "aaaaaaaaaaaa", 41.0)
    df = speedup_table(results_tree, baseline="h200")
    assert len(df[(df.experiment == "seed") & (df.source == "measured") & (df.hw == "h200")]) == 1


def test_gpu_share_columns_come_from_the_profiled_steps(results_tree):
    """profile.json's two steps: GPU busy 0.60 / 0.62 s of 0.90 / 0.94 s walls -> median busy 610 ms, host
    (wall - busy) 310 ms, busy fraction median(0.6667, 0.6596) = 0.6631: mixed."""
    run = next((results_tree / "h200" / "bs16").iterdir())
    (run / "profile.json").write_text(json.dumps({"steps": [
        {"step": 11, "wall_s": 0.90, "gpu_busy_s": 0.60, "gpu_busy_frac": round(0.60 / 0.90, 4)},
        {"step": 12, "wall_s": 0.94, "gpu_busy_s": 0.62, "gpu_busy_frac": round(0.62 / 0.94, 4)}]}))
    row = speedup_table(results_tree).set_index(["hw", "experiment", "source"]).loc[("h200", "bs16", "measured")]
    assert row.gpu_busy_ms_per_step == pytest.approx(610.0)
    assert row.host_ms_per_step == pytest.approx(310.0)
    assert row.gpu_busy_frac == pytest.approx((0.6667 + 0.6596) / 2)
    assert row.bound == "mixed"
