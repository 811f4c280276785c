"""Metrics against hand computations on the real H200 log and on logs whose true step time is known."""
import json
import math
import statistics

import pytest

from analysis import hardware
from analysis.logs import read_log
from analysis.metrics import parse_path, run_metrics


def _hand_step_time(log_path, skip_before, excluded):
    """Steady-state seconds per step by hand: elapsed = s/it x step on successive training lines."""
    pts = []
    for raw in open(log_path, encoding="utf-8"):
        d = json.loads(raw)
        if "loss" in d and "train_speed(s/it)" in d:
            step = int(d["global_step/max_steps"].split("/")[0])
            pts.append((step, d["train_speed(s/it)"] * step))
    per_step = [(tb - ta) / (b - a) for (a, ta), (b, tb) in zip(pts, pts[1:])
                if a >= skip_before and (a, b) not in excluded]
    return per_step


def test_reference_h200_log(fixtures):
    m = parse_path(fixtures / "h200_bs16")[0]
    # Intervals 10->15 ... 85->90, less the one holding the eval+save at step 50 (first interval 1->5 and
    # 5->10, which starts before 10 % of 94 steps, are warm-up).
    hand = _hand_step_time(fixtures / "h200_bs16/logging.jsonl", 10, {(50, 55)})
    assert len(hand) == 15 == m["step_time_s"]["n_intervals"]
    assert m["step_time_s"]["median"] == pytest.approx(statistics.median(hand), rel=0.02)
    assert 0.80 <= m["step_time_s"]["median"] <= 1.05
    assert m["peak_mem_gib"] == 75.80
    assert m["train_tokens_mean"] == pytest.approx(127.80, abs=0.005)
    assert m["samples_per_step"] == 16
    assert m["tokens_per_s"] == pytest.approx(127.801209 * 16 / m["step_time_s"]["median"])
    assert m["samples_per_s"] == pytest.approx(16 / m["step_time_s"]["median"])
    assert m["micro_step_time_ms"] == pytest.approx(m["step_time_s"]["median"] * 1000)
    assert m["complete"] and m["log_format"] == "v4" and m["global_steps"] == 94 and m["max_steps"] == 94
    assert m["train_loss"][0] == [1, 12.61488152] and len(m["train_loss"]) == 19
    assert m["eval_loss"] == [[50, 10.20411968], [94, 9.98833084]]
    assert m["final_train_loss"] == pytest.approx((9.79417877 + 9.86962967 + 10.0776268) / 3)
    assert m["final_eval_token_acc"] == pytest.approx(0.05011219)
    assert m["trainable_params"] == 20_185_100 and m["train_samples"] == 1489
    lo, hi = m["step_time_s"]["ci95_low"], m["step_time_s"]["ci95_high"]
    assert lo < m["step_time_s"]["mean"] < hi


def test_reference_without_args_infers_global_batch(tmp_path, fixtures):
    # 1489 samples in 94 steps: the only integer batch b with ceil(1489 / b) == 94 is 16.
    (tmp_path / "logging.jsonl").write_bytes((fixtures / "h200_bs16/logging.jsonl").read_bytes())
    m = parse_path(tmp_path)[0]
    assert m["samples_per_step"] == 16 and m["per_device_batch"] is None and m["swift_version"] is None


@pytest.mark.parametrize("name,true_step", [("v3_full", 2.0), ("v4_full", 0.9), ("v4_strings", 2.0),
                                            ("v4_killed", 6.2)])
def test_known_step_time_recovered(fixtures, name, true_step):
    """The synthetic runs take true_step x (1 +- 2..5 % jitter) per step, evals 12 s and saves 3 s extra."""
    m = parse_path(fixtures / name)[0]
    assert m["step_time_s"]["median"] == pytest.approx(true_step, rel=0.02)
    assert m["step_time_s"]["ci95_low"] < true_step * 1.03 and m["step_time_s"]["ci95_high"] > true_step * 0.97


def test_eval_interval_excluded(fixtures):
    m = parse_path(fixtures / "v3_full")[0]
    reasons = {(iv["from_step"], iv["to_step"]): iv["excluded"] for iv in m["step_intervals"]}
    assert reasons[(1, 5)] == "first interval" and reasons[(5, 10)] == "warm-up"
    assert reasons[(50, 55)] == "eval/save" and reasons[(45, 50)] is None
    assert m["step_intervals"][-1]["to_step"] == 60


def test_v3_full_metrics(fixtures):
    m = parse_path(fixtures / "v3_full")[0]
    assert m["log_format"] == "v3" and m["swift_version"] == "3.8.1"
    assert m["samples_per_step"] == 16 and m["tokens_per_s"] == pytest.approx(127.801209 * 16 / 2.0, rel=0.02)
    assert m["final_eval_loss"] is not None and m["peak_mem_gib"] == 17.68


def test_killed_run(fixtures):
    m = parse_path(fixtures / "v4_killed")[0]
    assert m["complete"] is False and m["torn_last_line"] is True
    assert m["global_steps"] == 35 and m["max_steps"] == 94
    assert m["tokens_per_s"] is None and m["train_tokens_mean"] is None  # no summary line: never invented
    assert m["samples_per_s"] == pytest.approx(16 / 6.2, rel=0.02)


def test_diverged_run(fixtures):
    m = parse_path(fixtures / "v4_diverged")[0]
    assert m["diverged"] and m["first_bad_step"] == 30
    assert max(s for s, _ in m["train_loss"]) == 25
    assert all(math.isfinite(v) for _, v in m["train_loss"])


def test_mfu_formula(results_tree):
    m = parse_path(results_tree / "h200" / "bs16")[0]
    s = hardware.lookup_model("Qwen2.5-7B-Instruct")
    n = hardware.matmul_params(s)
    assert n == 7_070_285_824  # 28 x 233,046,016 decoder linears + 544,997,376 lm_head
    assert m["flops_per_token"] == 4 * n + 6 * 20_185_100
    assert m["mfu"] == pytest.approx(m["tokens_per_s"] * (4 * n + 6 * 20_185_100) / 989e12)
    assert m["hfu"] == pytest.approx(m["tokens_per_s"] * (6 * n + 6 * 20_185_100) / 989e12)
    assert "989" in m["peak_source"]


def test_model_table_matches_published_parameter_counts():
    s = hardware.lookup_model("Qwen/Qwen2.5-7B-Instruct")
    assert hardware.total_params(s) == 7_615_616_512
    assert hardware.lora_params(s, {"lora_rank": 8, "target_modules": ["all-linear"]}) == 20_185_088


def test_speed_zero_and_resume(tmp_path, fixtures):
    run = read_log(fixtures / "v4_full")
    run.args = dict(run.args, resume_from_checkpoint="/x/checkpoint-20")
    m = run_metrics(run)
    # Resumed at 20: speed counts steps since 20, so lines before it carry no usable interval.
    assert all(iv["from_step"] >= 25 for iv in m["step_intervals"])
