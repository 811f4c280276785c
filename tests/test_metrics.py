"""The measure stage (analysis.measure) on run records, against hand computations on the real H200 log and on logs
whose true step time is known."""
import dataclasses
import json
import math
import statistics

import pytest

from analysis.measure import flops, loss, steps, throughput
from analysis.measure.summary import run_summary
from analysis.parse.logs import read_log
from analysis.parse.record import record_from_log
from analysis.parse.results import records_under
from experiments.base import hardware


def _record(path):
    return records_under(path)[0]


def _hand_intervals(log_path, skip_before, excluded):
    """Steady-state (steps, seconds) by hand: elapsed = s/it x step on successive training lines."""
    pts = []
    for raw in open(log_path, encoding="utf-8"):
        d = json.loads(raw)
        if "loss" in d and "train_speed(s/it)" in d:
            step = int(d["global_step/max_steps"].split("/")[0])
            pts.append((step, d["train_speed(s/it)"] * step))
    return [(b - a, tb - ta) for (a, ta), (b, tb) in zip(pts, pts[1:])
            if a >= skip_before and (a, b) not in excluded]


def test_reference_h200_log(fixtures):
    rec = _record(fixtures / "h200_bs16")
    st = steps.step_time(rec)
    # Intervals 10->15 ... 85->90, less the one holding the eval+save at step 50 (first interval 1->5 and
    # 5->10, which starts before 10 % of 94 steps, are warm-up).
    hand = _hand_intervals(fixtures / "h200_bs16/logging.jsonl", 10, {(50, 55)})
    per_step = [sec / n for n, sec in hand]
    assert len(hand) == 15 == st.n_intervals
    assert st.median == pytest.approx(statistics.median(per_step), rel=0.02)
    assert 0.80 <= st.median <= 1.05
    assert rec.peak_mem_gib == 75.80
    assert rec.train_tokens_mean == pytest.approx(127.80, abs=0.005)
    assert rec.samples_per_step == 16
    # tokens/s: a ratio of sums over the steady intervals (tokens of their steps / their seconds)
    tp = throughput.throughput(rec)
    assert tp.tokens_per_s == pytest.approx(127.801209 * 16 * sum(n for n, _ in hand) / sum(s for _, s in hand))
    assert tp.source == "mean length x samples per step" and tp.n_intervals == 15
    assert tp.low < tp.tokens_per_s < tp.high
    assert tp.tokens_per_step == pytest.approx(127.801209 * 16) and tp.steady_steps == sum(n for n, _ in hand)
    assert throughput.samples_per_s(rec) == pytest.approx(16 / st.median)
    assert steps.micro_step_ms(rec) == pytest.approx(st.median * 1000)
    assert rec.complete and rec.log_format == "v4" and rec.global_steps == 94 and rec.max_steps == 94
    assert rec.train_loss[0] == [1, 12.61488152] and len(rec.train_loss) == 19
    assert rec.eval_loss == [[50, 10.20411968], [94, 9.98833084]]
    assert loss.final_train_loss(rec) == pytest.approx((9.79417877 + 9.86962967 + 10.0776268) / 3)
    assert loss.final_eval_loss(rec) == pytest.approx(9.98833084)
    assert loss.final_eval_token_acc(rec) == pytest.approx(0.05011219)
    assert rec.trainable_params == 20_185_100 and rec.train_samples == 1489
    lo, hi = st.ci95_low, st.ci95_high
    assert lo < st.mean < hi
    assert st.mean == pytest.approx(statistics.fmean(per_step))


def test_summary_is_the_measure_functions(fixtures):
    rec = _record(fixtures / "h200_bs16")
    m = run_summary(rec)
    assert m["step_time_s"] == dataclasses.asdict(steps.step_time(rec))
    assert m["tokens_per_s"] == throughput.throughput(rec).tokens_per_s
    assert m["mfu"] == flops.mfu(rec).mfu and m["final_train_loss"] == loss.final_train_loss(rec)
    # every Mfu field, each under its own name (the summary lists them by hand: a field added there must be added here)
    mfu = dataclasses.asdict(flops.mfu(rec, throughput.throughput(rec).tokens_per_s))
    assert {k: m.get(k, "missing") for k in mfu} == mfu
    assert [iv["from_step"] for iv in m["step_intervals"]] == [iv.from_step for iv in steps.intervals(rec)]


def test_reference_without_args_infers_global_batch(tmp_path, fixtures):
    # 1489 samples in 94 steps: the only integer batch b with ceil(1489 / b) == 94 is 16.
    (tmp_path / "logging.jsonl").write_bytes((fixtures / "h200_bs16/logging.jsonl").read_bytes())
    rec = _record(tmp_path)
    assert rec.samples_per_step == 16 and rec.per_device_batch is None and rec.swift_version is None


@pytest.mark.parametrize("name,true_step", [("v3_full", 2.0), ("v4_full", 0.9), ("v4_strings", 2.0),
                                            ("v4_killed", 6.2)])
def test_known_step_time_recovered(fixtures, name, true_step):
    """The synthetic runs take true_step x (1 +- 2..5 % jitter) per step, evals 12 s and saves 3 s extra."""
    st = steps.step_time(_record(fixtures / name))
    assert st.median == pytest.approx(true_step, rel=0.02)
    assert st.ci95_low < true_step * 1.03 and st.ci95_high > true_step * 0.97


def test_eval_interval_excluded(fixtures):
    ivs = steps.intervals(_record(fixtures / "v3_full"))
    reasons = {(iv.from_step, iv.to_step): iv.excluded for iv in ivs}
    assert reasons[(1, 5)] == "first interval" and reasons[(5, 10)] == "warm-up"
    assert reasons[(50, 55)] == "eval/save" and reasons[(45, 50)] is None
    assert ivs[-1].to_step == 60


def test_profiled_steps_excluded(fixtures):
    rec = _record(fixtures / "v3_full")
    before = {(iv.from_step, iv.to_step) for iv in steps.steady_intervals(rec)}
    assert (40, 45) in before
    rec = dataclasses.replace(rec, profile={"steps": [{"step": 45, "wall_s": 9.0, "gpu_busy_s": 1.0,
                                                        "gpu_busy_frac": 0.11}]})
    reasons = {(iv.from_step, iv.to_step): iv.excluded for iv in steps.intervals(rec)}
    assert reasons[(40, 45)] == "profiled"
    assert steps.step_time(rec).n_intervals == len(before) - 1


def test_v3_full_metrics(fixtures):
    rec = _record(fixtures / "v3_full")
    assert rec.log_format == "v3" and rec.swift_version == "3.8.1"
    assert rec.samples_per_step == 16
    assert throughput.throughput(rec).tokens_per_s == pytest.approx(127.801209 * 16 / 2.0, rel=0.02)
    assert loss.final_eval_loss(rec) is not None and rec.peak_mem_gib == 17.68


def test_killed_run(fixtures):
    rec = _record(fixtures / "v4_killed")
    assert rec.complete is False and rec.torn_last_line is True
    assert rec.global_steps == 35 and rec.max_steps == 94
    tp = throughput.throughput(rec)
    assert tp.tokens_per_s is None and rec.train_tokens_mean is None  # no summary line: never invented
    assert throughput.samples_per_s(rec) == pytest.approx(16 / 6.2, rel=0.02)


def test_diverged_run(fixtures):
    rec = _record(fixtures / "v4_diverged")
    assert rec.diverged and rec.first_bad_step == 30
    assert max(s for s, _ in rec.train_loss) == 25
    assert all(math.isfinite(v) for _, v in rec.train_loss)


def test_mfu_formula(results_tree):
    rec = _record(results_tree / "h200" / "bs16")
    m = flops.mfu(rec)
    tps = throughput.throughput(rec).tokens_per_s
    s = hardware.lookup_model("Qwen2.5-7B-Instruct")
    n = hardware.matmul_params(s)
    assert n == 7_070_285_824  # 28 x 233,046,016 decoder linears + 544,997,376 lm_head
    assert m.flops_per_token == 4 * n + 6 * 20_185_100
    assert m.mfu == pytest.approx(tps * (4 * n + 6 * 20_185_100) / 989e12)
    assert m.hfu == pytest.approx(tps * (6 * n + 6 * 20_185_100) / 989e12)
    assert "989" in (m.peak_source or "")
    assert flops.flops_per_token(n, 20_185_100, "lora", True) == flops.FlopsPerToken(4 * n + 6 * 20_185_100,
                                                                                     6 * n + 6 * 20_185_100)
    assert flops.flops_per_token(n, 0, "full").model == 6 * n


def test_model_table_matches_published_parameter_counts():
    s = hardware.lookup_model("Qwen/Qwen2.5-7B-Instruct")
    assert hardware.total_params(s) == 7_615_616_512
    assert hardware.lora_params(s, {"lora_rank": 8, "target_modules": ["all-linear"]}) == 20_185_088


def test_speed_zero_and_resume(fixtures):
    run = read_log(fixtures / "v4_full")
    run.args = dict(run.args, resume_from_checkpoint="/x/checkpoint-20")
    rec = record_from_log(run)
    # Resumed at 20: speed counts steps since 20, so lines before it carry no usable interval.
    assert all(iv.from_step >= 25 for iv in steps.intervals(rec))
