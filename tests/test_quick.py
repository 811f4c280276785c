"""Issue 17: predict a full run from a short one.

- the token schedule (experiments/launch/schedule.py) equals, step by step, what the launcher's token counter records
  during a real CPU run of a tiny model (the in-process schedule.jsonl and the standalone command alike);
- the step-time model (analysis/estimate/quick.py) against hand computations: weighted least squares, held-out
  error, the choice of form, slow outliers;
- a synthetic run with known costs: the full run's training time (steps, evals and saves) is recovered;
- the wiring of quick runs: run-all --quick / --budget, RunSpec, the launcher's options, the quick stop's callback.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
from committed import committed_results

from analysis.estimate import quick as Q
from analysis.estimate import quick_check as QC
from analysis.measure import steps as measure_steps
from analysis.parse.record import RunRecord
from experiments.launch import options as launch_options
from experiments.launch import quick_stop
from experiments.run import cache as run_cache
from experiments.run import prepare as run_prepare
from experiments.run import spec as run_spec

REPO = __import__("pathlib").Path(__file__).resolve().parents[1]

# ------------------------------------------------------------------------------------------------ the fit by hand


def test_weighted_fit_of_one_cost_by_hand():
    """Intervals of 1, 2 and 5 steps of one micro-batch each: weights 1/n, so the cost per micro-batch is
    sum(x y / n) / sum(x^2 / n) = (1 + 2.2 + 4.9) / (1 + 2 + 5) = 1.0125 s."""
    x = np.array([[1.0], [2.0], [5.0]])
    y = np.array([1.0, 2.2, 4.9])
    n = np.array([1.0, 2.0, 5.0])
    assert Q.fit(x, y, n) == pytest.approx([8.1 / 8])


def test_two_costs_are_recovered_exactly_from_exact_data():
    rows = [(16, 1000), (16, 2000), (16, 1500), (16, 2500)]
    x = np.array(rows, float)
    y = x @ np.array([0.3, 1e-4])
    assert Q.fit(x, y, np.ones(4)) == pytest.approx([0.3, 1e-4], rel=1e-9)


def test_costs_are_not_negative():
    """Noise that would make a token cost negative gives zero instead (a cost is not a gain)."""
    x = np.array([[1, 100], [1, 200], [1, 300]], float)
    y = np.array([1.02, 1.0, 0.98])
    coef = Q.fit(x, y, np.ones(3))
    assert coef[1] == 0 and coef[0] == pytest.approx(1.0)


def test_held_out_error_by_hand():
    """One cost, three one-step intervals of 1, 2, 3 s: leaving each out predicts the mean of the others (2.5, 2, 1.5),
    squared errors 2.25 + 0 + 2.25 over 3 steps = 1.5 s^2 per step."""
    x = np.ones((3, 1))
    assert Q.held_out_error(x, np.array([1.0, 2.0, 3.0]), np.ones(3)) == pytest.approx(1.5)


def _schedule(n_steps: int, seed: int = 0, micro: int = 1, padded: bool = True) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for s in range(1, n_steps + 1):
        real = rng.randint(1000, 3000)
        out.append({"step": s, "micro_batches": micro, "tokens": real,
                    "padded_tokens": real + (rng.randint(500, 4000) if padded else 0), "label_tokens": real // 2,
                    "samples": 16})
    return out


def test_the_form_with_the_smallest_held_out_error_is_chosen():
    sched = _schedule(40)
    rng = np.random.default_rng(0)
    ivs_tok = [(s - 1, s, 0.2 + 2e-4 * sched[s - 1]["tokens"] + rng.normal(0, 0.002)) for s in range(11, 41)]
    model, _ = Q.fit_intervals(ivs_tok, sched)
    assert model.form == "real" and model.named()["s_per_real_token"] == pytest.approx(2e-4, rel=0.05)
    assert set(model.held_out) == {"fixed", "real", "real+pad", "padded"}
    assert model.held_out["real"] < model.held_out["fixed"]
    ivs_pad = [(s - 1, s, 0.2 + 1e-4 * sched[s - 1]["padded_tokens"] + rng.normal(0, 0.002)) for s in range(11, 41)]
    assert Q.fit_intervals(ivs_pad, sched)[0].form == "padded"
    ivs_flat = [(s - 1, s, 0.5 + rng.normal(0, 0.002)) for s in range(11, 41)]
    flat, _ = Q.fit_intervals(ivs_flat, _schedule(40, padded=False))
    assert flat.form in ("fixed", "real") and set(flat.held_out) == {"fixed", "real"}  # no padding, no padding forms
    assert flat.step_s(sched[0]) == pytest.approx(0.5, rel=0.02)


def test_a_slow_outlier_is_left_out_of_the_fit():
    sched = _schedule(40, padded=False)
    ivs = [(s - 1, s, 0.3 + (2.0 if s == 21 else 0.0) + 0.001 * (s % 3)) for s in range(11, 41)]
    model, arrays = Q.fit_intervals(ivs, sched)
    assert [(a, b) for a, b, _ in arrays["slow"]] == [(20, 21)] and arrays["slow"][0][2] == pytest.approx(2.0, abs=0.01)
    assert model.step_s(sched[0]) == pytest.approx(0.301, abs=0.002)


def test_too_few_intervals_is_said():
    with pytest.raises(ValueError, match="too few"):
        Q.fit_intervals([(10, 11, 1.0), (11, 12, 1.0)], _schedule(12))


# ------------------------------------------------------------------------------------------------ synthetic run


COSTS = {"m": 0.05, "r": 2e-4, "p": 5e-5}  # s per micro-batch, per real token, per padding token
EVAL_FIRST, EVAL_NEXT, SAVE, END = 2.0, 1.0, 1.5, 0.3


def _true_step(step: dict) -> float:
    return (COSTS["m"] * step["micro_batches"] + COSTS["r"] * step["tokens"]
            + COSTS["p"] * (step["padded_tokens"] - step["tokens"]))


def _synthetic_quick_run(sched: list[dict], decided: int, noise: float, seed: int = 0,
                         spikes: dict[int, float] | None = None) -> RunRecord:
    """A quick run as the launcher and ms-swift would log it: one line per step (warm-up steps slower), eval and save
    at DECIDED and DECIDED + 1 (the quick stop), the first evaluation dearer than the second; SPIKES: seconds added
    to single steps (a batch shape's first occurrence on the machine)."""
    rng = np.random.default_rng(seed)
    t, elapsed, eval_elapsed = 0.0, [], {}
    for s in range(1, decided + 2):
        t += _true_step(sched[s - 1]) * (1.8 if s < 10 else 1.0) + rng.normal(0, noise) + (spikes or {}).get(s, 0.0)
        elapsed.append((s, t))
        if s == decided:
            t += EVAL_FIRST
            eval_elapsed[s] = t
            t += SAVE
        elif s == decided + 1:
            t += EVAL_NEXT
            eval_elapsed[s] = t
    runtime = t + SAVE + END
    args = {"logging_steps": 1, "eval_steps": 50, "save_steps": 50, "eval_strategy": "steps", "save_strategy": "steps",
            "num_train_epochs": 1, "per_device_train_batch_size": 16, "gradient_accumulation_steps": 1}
    return RunRecord(path="synthetic", hw="h200", experiment="seed", run="20990101-000000", args=args,
                     elapsed=elapsed, eval_elapsed=eval_elapsed, event_steps=frozenset({decided, decided + 1}),
                     max_steps=len(sched), global_steps=decided + 1, train_samples=1489, samples_per_step=16,
                     val_samples=11, train_runtime_s=runtime, schedule=sched,
                     tokens_by_step={s["step"]: s["tokens"] for s in sched[:decided + 1]},
                     padded_by_step={s["step"]: s["padded_tokens"] for s in sched[:decided + 1]},
                     quick={"decided_at": decided, "event_steps": [decided, decided + 1]})


def _true_full_runtime(quick_rec: RunRecord, sched: list[dict], decided: int) -> float:
    """The full run's train_runtime, by hand: a full run after the quick run on the same machine, whose warm-up steps
    cost what later steps do (the quick run paid the one-time costs), every step at the true costs, its noise the
    quick run's over the first DECIDED steps; eval and save at 50 (the run's first: the dearer eval) and at 94 (the
    second eval; the last save and the end of training)."""
    noise = dict(quick_rec.elapsed)[decided] - sum(_true_step(s) * (1.8 if s["step"] < 10 else 1.0)
                                                   for s in sched[:decided])
    return sum(_true_step(s) for s in sched) + noise + EVAL_FIRST + SAVE + EVAL_NEXT + SAVE + END


def test_a_synthetic_schedule_with_known_costs_is_recovered():
    sched = _schedule(94)
    rec = _synthetic_quick_run(sched, decided=39, noise=0.0)
    est = Q.estimate(rec, n_boot=200)
    truth = _true_full_runtime(rec, sched, 39)
    assert est.model.form == "real+pad"
    assert est.model.named() == pytest.approx({"s_per_micro_batch": 0.05, "s_per_real_token": 2e-4,
                                               "s_per_padding_token": 5e-5}, rel=1e-6)
    assert est.train_s == pytest.approx(truth, rel=1e-9)
    assert est.parts["eval_costs_measured"] == [(39, pytest.approx(EVAL_FIRST)), (40, pytest.approx(EVAL_NEXT))]
    assert est.parts["save_costs_measured"] == [(39, pytest.approx(SAVE))]
    assert est.parts["end_cost_measured"] == pytest.approx(SAVE + END)
    assert est.anchor_step == 39 and est.steps_run == 40 and est.steps_full == 94 and est.schedule_checked == (40, 40)
    # the warm-up excess, by hand: steps 1-9 ran 1.8x their cost; not paid again, but inside the range's high end
    assert est.parts["warmup_excess_s"] == pytest.approx(sum(0.8 * _true_step(s) for s in sched[:9]), rel=1e-9)
    assert est.train_s_high >= truth + est.parts["warmup_excess_s"] - 1e-9
    # steady tokens/s of the full run: its steady steps (after the warm-up, without the intervals after 50's events)
    steady = [s for s in range(11, 95) if s != 51]
    expected = sum(sched[s - 1]["tokens"] for s in steady) / sum(_true_step(sched[s - 1]) for s in steady)
    assert est.tokens_per_s == pytest.approx(expected, rel=1e-9)


def test_the_range_holds_the_truth_with_noisy_steps():
    sched = _schedule(94, seed=3)
    inside, errors = 0, []
    for seed in range(10):
        rec = _synthetic_quick_run(sched, decided=39, noise=0.02, seed=seed)
        est = Q.estimate(rec, n_boot=400)
        # the full run's own steps are noisy too: the truth is drawn like the quick run's steps
        rng = np.random.default_rng(100 + seed)
        truth = _true_full_runtime(rec, sched, 39) + rng.normal(0, 0.02, size=94 - 39).sum()
        inside += est.train_s_low <= truth <= est.train_s_high
        errors.append(abs(est.train_s - truth) / truth)
        assert est.train_s_low < est.train_s < est.train_s_high
    assert inside >= 8 and max(errors) < 0.03


def test_a_quick_run_is_set_beside_the_full_run_made_after_it():
    sched = _schedule(94)
    host = {"host": {"fingerprint": {"host_id": "abc123"}}}
    q = _synthetic_quick_run(sched, decided=39, noise=0.0)
    q = dataclasses.replace(q, env=host)
    truth = _true_full_runtime(q, sched, 39)
    full = RunRecord(path="f", hw="h200", experiment="seed", run="20990101-010000", env=host, global_steps=94,
                     train_runtime_s=truth, tokens_by_step={s["step"]: s["tokens"] for s in sched},
                     padded_by_step={s["step"]: s["padded_tokens"] for s in sched})
    elsewhere = RunRecord(path="g", hw="h200", experiment="seed", run="20990101-020000", global_steps=94,
                          env={"host": {"fingerprint": {"host_id": "other"}}})
    assert QC.pairs([elsewhere, full, q]) == [(q, full)]
    row = QC.compare(q, full)
    assert row.same_host and row.error_pct == pytest.approx(0, abs=1e-9) and row.inside
    assert (row.tokens_compared, row.tokens_differ, row.quick_steps, row.full_steps) == (94, 0, 40, 94)
    # what the prediction is made of travels with the row (--json): its parts add up to it, its coefficients price
    # the modelled steps (the schedule's steps after the anchor)
    parts, model = row.parts, row.model
    assert model is not None
    assert parts["measured_to_anchor_s"] - parts["warmup_excess_s"] - parts["one_time_excess_s"] \
        + parts["modelled_steps_s"] + parts["evals_s"] + parts["saves_s"] == pytest.approx(row.predicted_train_s)
    cols = {"s_per_micro_batch": "micro_batches", "s_per_real_token": "tokens", "s_per_padding_token": "pad",
            "s_per_padded_token": "padded_tokens"}
    priced = sum(v * sum(Q.features(st, (cols[k],))[0] for st in sched[39:]) for k, v in model.items() if k in cols)
    assert parts["modelled_steps"] == 55 and priced == pytest.approx(parts["modelled_steps_s"])


def test_a_first_shape_spike_before_the_anchor_is_not_charged_again(monkeypatch):
    """A slow single step before the anchor (step 27 of the best recipe in the first run of it on four H200 hosts,
    never in the runs after it there) is measured once: the full run made after the quick run does not pay it, so
    the estimate leaves it out, and only the bootstrap range's high end (a fresh machine) keeps it (the range before
    the committed pairs widen it)."""
    monkeypatch.setattr(Q, "calibrated", lambda est: est)
    sched = _schedule(94)
    plain = Q.estimate(_synthetic_quick_run(sched, decided=39, noise=0.0), n_boot=200)
    rec = _synthetic_quick_run(sched, decided=39, noise=0.0, spikes={27: 2.0})
    est = Q.estimate(rec, n_boot=200)
    assert est.parts["one_time_steps"] == [27]
    assert est.parts["one_time_excess_s"] == pytest.approx(2.0, rel=1e-6)
    assert est.parts["measured_to_anchor_s"] == pytest.approx(plain.parts["measured_to_anchor_s"] + 2.0, rel=1e-9)
    assert est.train_s == pytest.approx(plain.train_s, rel=1e-9)
    assert est.train_s_low == pytest.approx(plain.train_s_low, rel=1e-6)
    assert est.train_s_high == pytest.approx(plain.train_s_high + 2.0, rel=1e-6)
    # a spike after the anchor is not in the measured part: nothing to leave out
    assert Q.one_time_excess([(26, 27, 2.0), (40, 41, 1.0), (30, 31, -0.5)], anchor=39) == 2.0


def test_a_quick_run_after_its_full_run_is_paired_with_it_and_says_so():
    sched = _schedule(94)
    host = {"host": {"fingerprint": {"host_id": "abc123"}}}
    q = _synthetic_quick_run(sched, decided=39, noise=0.0)
    q = dataclasses.replace(q, env=host)

    def full(run):
        return RunRecord(path=run, hw="h200", experiment="seed", run=run, env=host, global_steps=94,
                         train_runtime_s=_true_full_runtime(q, sched, 39))
    before, earlier, after = full("20981231-230000"), full("20981231-220000"), full("20990101-010000")
    assert QC.pairs([earlier, before, q]) == [(q, before)]          # the last full run before it
    assert QC.pairs([earlier, before, after, q]) == [(q, after)]    # one made after it wins
    assert QC.compare(q, before).full_first and not QC.compare(q, after).full_first


def test_no_schedule_no_estimate():
    rec = RunRecord(path="x", hw="h200", experiment="seed", run="r", elapsed=[(1, 1.0)])
    est = Q.estimate(rec)
    assert est.train_s is None and "no schedule.jsonl" in est.notes[0] and est.label.startswith("quick estimate: none")


def test_schedule_against_a_full_runs_tokens():
    sched = _schedule(10)
    full = RunRecord(path="x", hw="h200", experiment="seed", run="r",
                     tokens_by_step={s["step"]: s["tokens"] for s in sched},
                     padded_by_step={s["step"]: s["padded_tokens"] + (1 if s["step"] == 7 else 0) for s in sched})
    assert QC.schedule_vs_tokens(sched, full) == QC.ScheduleCheck(compared=10, differ=[7], recorded=10, scheduled=10)


# ------------------------------------------------------------------------------------------------ quick-run wiring


def test_budget_arguments():
    assert quick_stop.budget_of(False, None) is None and quick_stop.budget_of(True, None) == quick_stop.BUDGET_S == 180
    assert quick_stop.budget_of(False, "180s") == 180 and quick_stop.budget_of(True, "3m") == 180
    assert quick_stop.budget_of(0, 90) == 90
    from experiments.base.errors import InputError

    for bad in ("soon", "-5", "0"):
        with pytest.raises(InputError):
            quick_stop.budget_of(True, bad)


def test_a_quick_runspec_is_its_own_run():
    full = run_spec.RunSpec(hw="h200", experiment="seed", model="dummy", data=".data")
    fast = run_spec.RunSpec(hw="h200", experiment="seed", model="dummy", data=".data", budget_s=180)
    assert fast.launcher == {**full.launcher, "quick": {"budget_s": 180.0, "max_steps": quick_stop.MAX_STEPS}}
    assert fast.overrides == {"logging_steps": 1} and full.overrides == {}
    assert fast.key() != full.key()
    again = run_spec.RunSpec(**{**fast.__dict__})  # resolving twice changes nothing (the notebook re-creates the spec)
    assert again.key() == fast.key()
    claims = run_spec.RunSpec(hw="h200", experiment="tp-best", budget_s=120)
    assert "stop_after" not in claims.launcher and claims.launcher["quick"]["budget_s"] == 120
    argv = launch_options.option_argv(fast.launcher)
    assert argv[-4:] == ["--quick-budget-s", "180", "--quick-max-steps", str(quick_stop.MAX_STEPS)]
    opts, _ = launch_options.parse([*argv, "--", "swift", "sft", "--model", "m"])
    assert opts.quick_budget_s == 180 and opts.quick_max_steps == quick_stop.MAX_STEPS and not opts.no_schedule
    assert launch_options.parse(["--no-schedule", "--", "--model", "m"])[0].no_schedule
    assert launch_options.option_argv({"schedule": False}) == ["--no-schedule"]


def _drive(cb, steps: int, max_steps: int, clock: dict) -> list[tuple]:
    """Call the quick stop's on_step_end for steps 1.. (one second each) until it stops training: (step, evaluate,
    save, stop) where it asked for something."""
    from transformers.trainer_utils import IntervalStrategy

    args = SimpleNamespace(eval_strategy=IntervalStrategy.STEPS)
    seen = []
    for step in range(1, steps + 1):
        clock["now"] = float(step)
        control = SimpleNamespace(should_training_stop=False, should_log=False, should_evaluate=False,
                                  should_save=False)
        cb.on_step_end(args, SimpleNamespace(global_step=step, max_steps=max_steps), control)
        if control.should_evaluate or control.should_training_stop:
            seen.append((step, control.should_evaluate, control.should_save, control.should_training_stop))
        if control.should_training_stop:
            break
    return seen


def test_the_quick_stop_evaluates_and_saves_twice(monkeypatch):
    pytest.importorskip("transformers")
    clock = {"now": 0.0}
    monkeypatch.setattr(quick_stop.time, "time", lambda: clock["now"])
    record: dict = {}
    cb = quick_stop.make_callback(budget_s=100.0, max_steps=8, record=record, reserve_s=10.0, started=0.0)
    assert _drive(cb, 20, 94, clock) == [(7, True, True, False), (8, True, True, True)]  # step 7 + 1 reaches 8
    assert record["quick"]["decided_at"] == 7 and record["quick"]["why"] == "max steps" and record["quick"]["stopped"]
    # the budget: 100 s, 10 s kept back, one more step of 1 s: decided at step 89 (89 + 1 + 10 >= 100)
    record = {}
    cb = quick_stop.make_callback(budget_s=100.0, max_steps=1000, record=record, reserve_s=10.0, started=0.0)
    assert _drive(cb, 200, 500, clock)[-1] == (90, True, True, True)
    assert record["quick"]["decided_at"] == 89 and record["quick"]["at_step"] == 90
    assert record["quick"]["why"] == "budget"
    # a schedule that ends before the budget runs out ends by itself
    record = {}
    cb = quick_stop.make_callback(budget_s=100.0, max_steps=1000, record=record, reserve_s=10.0, started=0.0)
    assert _drive(cb, 30, 30, clock) == [] and not record["quick"]["stopped"]


def test_random_states_are_put_back():
    torch = pytest.importorskip("torch")
    from experiments.recipes.schedule_core import random_states_kept

    random.seed(1)
    np.random.seed(1)
    torch.manual_seed(1)
    expected = (random.random(), float(np.random.rand()), float(torch.rand(1)))
    random.seed(1)
    np.random.seed(1)
    torch.manual_seed(1)
    with random_states_kept():
        random.random(), np.random.rand(5), torch.rand(7)
    assert (random.random(), float(np.random.rand()), float(torch.rand(1))) == expected


def test_standalone_arguments_keep_what_decides_batches():
    from experiments.launch.schedule import cpu_args

    args = ["--model", "m", "--torch_dtype", "bfloat16", "--output_dir=/r", "--use_liger_kernel", "true",
            "--per_device_train_batch_size", "16", "--padding_free", "true"]
    assert cpu_args(args, "/tmp/x") == ["--model", "m", "--per_device_train_batch_size", "16", "--padding_free",
                                        "true", "--output_dir", "/tmp/x", "--torch_dtype", "float32",
                                        "--use_liger_kernel", "false"]


# ------------------------------------------------------------------------------------------------ real CPU run


@pytest.mark.slow
def test_the_schedule_equals_what_training_counted(tmp_path):
    """A real tiny `swift sft` through the launcher, 2 epochs of 30 samples (33, one of each file held out) at batch
    2 x grad-accum 2: 15 micro-batches, so 8 steps an epoch, the last of one micro-batch. The quick stop ends it after
    step 11, in the second epoch (its own order: set_epoch). schedule.jsonl (written in the training process before the
    first step) and the standalone command (no model, no GPU) give, step by step, the token counts the launcher's
    counter recorded while training."""
    from experiments.offline import localdata

    model, _, _ = run_prepare.resolve_model(run_spec.DUMMY_TINY, "cpu")
    data = tmp_path / "data"
    localdata.make_tiny_local_data(data, n=40)
    local = localdata.prepare_local_data(str(data), tmp_path / "prep", "swift-robot", "swift")
    datasets = [f"{p}#11" for p in local.values()]
    out = tmp_path / "run"
    swift = ["--model", model, "--tuner_type", "lora", "--dataset", *datasets, "--torch_dtype", "float32",
             "--per_device_train_batch_size", "2", "--gradient_accumulation_steps", "2", "--logging_steps", "1",
             "--eval_steps", "50", "--save_steps", "50", "--output_dir", str(out), "--add_version", "false",
             "--check_model", "false", "--split_dataset_ratio", "0.05", "--dataloader_num_workers", "0",
             "--max_length", "2048", "--num_train_epochs", "2"]
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "MODELSCOPE_OFFLINE": "1", "PYTHONPATH": str(run_spec.ROOT)}
    p = subprocess.run([sys.executable, "-m", "experiments.launch", "--quick-budget-s", "600",
                        "--quick-max-steps", "11", "--", "swift", "sft", *swift],
                       capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    sched = [json.loads(x) for x in (out / "schedule.jsonl").read_text().splitlines()]
    counted = [json.loads(x) for x in (out / "tokens.jsonl").read_text().splitlines()]
    keys = ("micro_batches", "tokens", "padded_tokens", "label_tokens")
    assert len(sched) == 2 * math.ceil(math.ceil(30 / 2) / 2) == 16
    # epoch 1's last step (one micro-batch), epoch 2's first
    assert [(s["micro_batches"], s["samples"]) for s in sched[7:9]] == [(1, 2), (2, 4)]
    assert [t["step"] for t in counted] == list(range(1, 12))
    assert [{k: t[k] for k in keys} for t in counted] == [{k: s[k] for k in keys} for s in sched[:11]]
    assert any(s["padded_tokens"] > s["tokens"] for s in sched)  # padded batches: both counts are checked
    info = json.loads((out / "launch.json").read_text())
    assert info["schedule"]["steps"] == 16 and "error" not in info["schedule"]
    assert info["quick"]["decided_at"] == 10 and info["quick"]["stopped"] and info["quick"]["at_step"] == 11
    lines = [json.loads(x) for x in (out / "logging.jsonl").read_text().splitlines()]
    assert [x["global_step/max_steps"] for x in lines if "eval_loss" in x] == ["10/16", "11/16"]
    # the same schedule without a model: the standalone command
    alone = tmp_path / "alone.jsonl"
    p = subprocess.run([sys.executable, "-m", "experiments.launch.schedule", "--out", str(alone), "--", *swift],
                       capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert [json.loads(x) for x in alone.read_text().splitlines()] == sched
    # and the estimate reads it back from the run folder
    from analysis.parse.record import read_log_record

    rec = read_log_record(out)
    assert rec.schedule == sched and rec.quick["decided_at"] == 10
    est = Q.estimate(rec, n_boot=100)
    assert est.schedule_checked == (11, 11) and est.steps_full == 16


def test_the_speed_table_shows_a_quick_estimate_as_such():
    from analysis.present import tables

    sched = _schedule(94)
    rec = _synthetic_quick_run(sched, decided=39, noise=0.0)
    rec.quick.update(at_step=40, max_steps_of_schedule=94)
    row = tables.speed_row(rec)
    assert row.labels == "quick run (stopped after step 40 of 94)"
    assert row.est_full_train_s == pytest.approx(_true_full_runtime(rec, sched, 39), rel=1e-9)
    assert row.est_full_train_s_low <= row.est_full_train_s <= row.est_full_train_s_high
    assert row.est_steps == 29 and row.est_basis.startswith("quick estimate from 40 of 94 steps (29 steady")
    full = _synthetic_quick_run(sched, decided=39, noise=0.0)
    full = dataclasses.replace(full, global_steps=94, quick=None, schedule=sched)  # complete: nothing to estimate
    assert tables.speed_row(full).est_full_train_s is None


def test_the_schedule_is_written_through_the_runners_link(tmp_path):
    """The runner links <cache>/schedule.jsonl to the run folder; an atomic write must land in the run folder, not
    replace the link (call 17 on the H200: three runs lost their schedule to the cache that way)."""
    from experiments.recipes import schedule_core

    run_dir, work = tmp_path / "results" / "h200" / "bs16" / "r1", tmp_path / "cache"
    run_dir.mkdir(parents=True)
    run_cache.link_outputs(work, run_dir)
    steps = [{"step": 1, "tokens": 10, "padded_tokens": 12, "micro_batches": 1}]
    schedule_core.write(steps, work / schedule_core.SCHEDULE_FILE)
    assert (work / "schedule.jsonl").is_symlink()
    assert [json.loads(x) for x in (run_dir / "schedule.jsonl").read_text().splitlines()] == steps
    assert not list(run_dir.glob("*.tmp")) and not list(work.glob("*.tmp"))


def test_a_quick_run_too_short_to_fit_says_what_budget_would_do():
    """The committed seed quick run on a slow H200 host (call 18): 12 steps in 180 s, two of them profiled."""
    from analysis.parse.results import read_run

    rec = read_run(REPO / "results/h200/seed/20261201-053437-dff67541ff89")
    est = Q.estimate(rec, n_boot=0)
    assert est.train_s is None
    line = dict(rec.elapsed)
    steps = sorted(line)
    per_step = sorted(line[b] - line[a] for a, b in zip(steps, steps[1:]) if b not in (11, 12))
    profiled = (line[11] - line[10]) + (line[12] - line[11])
    median = per_step[len(per_step) // 2]
    budget = math.ceil((180 + (12 + Q.FIT_STEPS - 12) * median) / 10) * 10
    assert (f"{median:.1f} s per step, {profiled:.0f} s in the profiled steps; steady steps start after step 12, so "
            f"--budget {budget}") in est.notes[-1]


def test_a_profile_inside_the_warm_up_is_not_warm_up_excess():
    """Steps profiled during the warm-up (workers4 profiles steps 9-10) cost the full run as much: only the other
    warm-up steps' excess is left out."""
    import dataclasses

    sched = _schedule(94)
    rec = _synthetic_quick_run(sched, decided=39, noise=0.0)
    plain = Q.estimate(rec, n_boot=0).parts["warmup_excess_s"]
    marked = dataclasses.replace(rec, profile={"steps": [{"step": 5, "wall_s": 1.0}]})
    est = Q.estimate(marked, n_boot=0)
    # step 5's interval (4 -> 5) is a profiled one now: its 0.8 x true cost stays in the estimate
    assert est.parts["warmup_excess_s"] == pytest.approx(plain - 0.8 * _true_step(sched[4]), rel=1e-9)


# ------------------------------------------------------------------------------------------------ pairs, by hand


def _raw_elapsed(run: str) -> dict[int, float]:
    """A committed run's time to each training line straight from logging.jsonl: train_speed(s/it) x step (ms-swift
    4.x writes the mean seconds per step since the start; not for a run resumed from a checkpoint, whose clock
    restarts)."""
    out = {}
    for line in (committed_results() / run / "logging.jsonl").read_text().splitlines():
        row = json.loads(line)
        if "loss" in row and "eval_loss" not in row and "train_speed(s/it)" in row:
            out[int(row["global_step/max_steps"].split("/")[0])] = row["train_speed(s/it)"] * int(
                row["global_step/max_steps"].split("/")[0])
    return out


BEST_PAIR = ("h200/best/20261202-015530-59f462e08814", "h200/best/20261202-015733-59f462e08814")  # call 34


def test_a_second_run_of_the_same_steps_by_hand():
    """best's quick run and the full run right after it (call 34, a fresh machine): over steps 13-39 (the steady steps
    both have: warm-up 1-10, profiled 11-12 and the quick run's events at 39-40 left out), the full run took 0.728x the
    quick run's time, by the log's own clock; gpm.jsonl splits it: the GPU-active seconds (wall x graphics_util)
    repeat, the host seconds do not."""
    from analysis.parse.results import read_run

    quick_run, full_run = (read_run(committed_results() / r) for r in BEST_PAIR)
    same = QC.same_steps(quick_run, full_run)
    a, b = _raw_elapsed(BEST_PAIR[0]), _raw_elapsed(BEST_PAIR[1])
    steps = range(13, 40)
    by_hand = sum(b[s] - b[s - 1] for s in steps) / sum(a[s] - a[s - 1] for s in steps)
    assert (same.steps, same.intervals) == (27, 27)
    assert same.ratio == pytest.approx(by_hand, rel=1e-9) and 0.72 < by_hand < 0.74

    def gpm(run):
        rows = {r["step"]: r
                for r in map(json.loads, (committed_results() / run / "gpm.jsonl").read_text().splitlines())}
        busy = sum(rows[s]["wall_s"] * rows[s]["graphics_util"] / 100 for s in steps)
        return busy, sum(rows[s]["wall_s"] for s in steps) - busy

    (qb, qh), (fb, fh) = gpm(BEST_PAIR[0]), gpm(BEST_PAIR[1])
    assert same.busy_ratio == pytest.approx(fb / qb, rel=1e-9) and abs(fb / qb - 1) < 0.02
    assert same.host_ratio == pytest.approx(fh / qh, rel=1e-9) and fh / qh < 0.65


E4_BEST = {"quick1": "h200/best/20261202-042040-e4e316c83b7a", "full1": "h200/best/20261202-042227-e4e316c83b7a",
           "full2": "h200/best/20261202-043018-e4e316c83b7a", "quick2": "h200/best/20261202-043220-e4e316c83b7a"}


def test_a_quick_runs_slow_single_steps_were_not_slow_in_the_full_run_after_it_by_hand():
    """What the one-time excess assumes, on every committed pair whose quick run has one: each slow single step the
    quick run's fit left out before its anchor (steps 21 and 27 of the best recipe, 1.9-5.4x the run's median step
    over steps 14-40, by the raw log) took under 1.2x the full run's median step in the full run made after it on the
    same host."""
    checked = []
    for row in QC.comparison_table(committed_results()):
        steps = row.parts.get("one_time_steps")
        if not steps or not isinstance(row, QC.Paired) or row.full_first:
            continue
        for run, slow in ((row.quick_run, True), (row.full_run, False)):
            t = _raw_elapsed(f"{row.hw}/{row.experiment}/{run}")
            median = sorted(t[s] - t[s - 1] for s in range(14, 41))[13]
            for s in steps:
                ratio = (t[s] - t[s - 1]) / median
                assert (ratio > 1.8) if slow else (ratio < 1.2), (run, s, ratio)
        checked += steps
    assert sorted(checked) == [21, 21, 27, 27, 27]


def test_the_best_recipe_repeats_itself_once_the_machine_has_run_it_by_hand():
    """Calls 40 and 42 (host e4e316c83b7a): two full best runs, eight minutes apart, took the same time over their
    81 common steady steps to 0.2 % by the log's own clock; the machine's first quick run of best took 1.23x the last
    one's time over the same 27 steps, 1.07x without step 27 (its one slow single step)."""
    from analysis.parse.results import read_run

    runs = {k: read_run(committed_results() / v) for k, v in E4_BEST.items()}
    t1, t2 = _raw_elapsed(E4_BEST["full1"]), _raw_elapsed(E4_BEST["full2"])
    full = QC.same_steps(runs["full1"], runs["full2"])
    assert full.steps == 81 and abs(full.ratio - 1) < 0.002
    steady = [(iv.from_step, iv.to_step) for iv in measure_steps.steady_intervals(runs["full1"])]
    by_hand = sum(t2[b] - t2[a] for a, b in steady) / sum(t1[b] - t1[a] for a, b in steady)
    assert full.ratio == pytest.approx(by_hand, rel=1e-9)
    quick = QC.same_steps(runs["quick1"], runs["quick2"])
    q1, q2 = _raw_elapsed(E4_BEST["quick1"]), _raw_elapsed(E4_BEST["quick2"])
    assert quick.ratio == pytest.approx(sum(q2[s] - q2[s - 1] for s in range(13, 40))
                                           / sum(q1[s] - q1[s - 1] for s in range(13, 40)), rel=1e-9)
    assert 0.80 < quick.ratio < 0.83
    without_27 = [s for s in range(13, 40) if s != 27]
    assert 0.92 < (sum(q2[s] - q2[s - 1] for s in without_27) / sum(q1[s] - q1[s - 1] for s in without_27)) < 0.95


def test_same_steps_needs_three_common_intervals():
    one = RunRecord(path="a", hw="h200", experiment="x", run="a", elapsed=[(s, float(s)) for s in range(1, 14)])
    other = RunRecord(path="b", hw="h200", experiment="x", run="b", elapsed=[(s, 2.0 * s) for s in range(1, 14)])
    # 10 % warm-up of 13 steps (1.3): intervals from step 2 on are steady, the first interval (1-2) is not
    assert QC.same_steps(one, other).ratio == pytest.approx(2.0)
    short = RunRecord(path="c", hw="h200", experiment="x", run="c", elapsed=[(s, 2.0 * s) for s in range(1, 5)])
    assert QC.same_steps(one, short).ratio is None and QC.same_steps(one, short).intervals == 2
    three = RunRecord(path="d", hw="h200", experiment="x", run="d", elapsed=[(s, 3.0 * s) for s in range(1, 6)])
    assert QC.same_steps(one, three).intervals == QC.MIN_SAME_INTERVALS == 3
    assert QC.same_steps(one, three).ratio == pytest.approx(3.0)


def test_the_error_parts_add_up_to_the_error_on_every_committed_pair():
    """to anchor + steps + events = predicted - measured training time, on each committed quick/full pair; and the
    to-anchor part of call 34's best pair by hand: the quick run's time to its step 39 less its warm-up excess,
    against the full run's time to step 39 (the log's own clock)."""
    rows = [r for r in QC.comparison_table(committed_results()) if isinstance(r, QC.Paired) and r.error_parts]
    assert len(rows) >= 7
    for r in rows:
        e = r.error_parts
        assert e.to_anchor_s + e.steps_s + e.events_s == pytest.approx(r.predicted_train_s - r.measured_train_s,
                                                               abs=1e-6)
    row = next(r for r in rows if r.quick_run == BEST_PAIR[0].rsplit("/", 1)[1])
    a, b = _raw_elapsed(BEST_PAIR[0]), _raw_elapsed(BEST_PAIR[1])
    assert row.parts["measured_to_anchor_s"] == pytest.approx(a[39])
    assert row.error_parts.to_anchor_s == pytest.approx(a[39] - row.parts["warmup_excess_s"]
                                                        - row.parts["one_time_excess_s"] - b[39])
    assert row.first_on_host is True and row.same_steps.ratio < 0.75


def test_first_on_host():
    env = {"host": {"fingerprint": {"host_id": "h1"}}}
    early = RunRecord(path="a", hw="h200", experiment="x", run="20990101-000000", env=env)
    late = RunRecord(path="b", hw="h200", experiment="y", run="20990101-010000", env=env)
    other = RunRecord(path="c", hw="h200", experiment="x", run="20980101-000000",
                      env={"host": {"fingerprint": {"host_id": "h2"}}})
    records = [other, late, early]
    assert QC.first_on_host(early, records) is True and QC.first_on_host(late, records) is False
    assert QC.first_on_host(RunRecord(path="d", hw="h200", experiment="x", run="r"), records) is None


def test_the_report_shows_each_quick_run_against_its_full_run(tmp_path, monkeypatch):
    """The estimates section's quick-run part: one row per committed quick run, the error's parts beside the error,
    the same-steps ratios, and the figure of the pairs' common steps (written with the table as CSV)."""
    import pandas as pd

    from analysis.present import plots
    from analysis.present.report import estimates
    from analysis.present.report.context import Context

    drawn = []
    real = plots.quick_pair_steps
    monkeypatch.setattr(plots, "quick_pair_steps", lambda df, *a: drawn.append(df) or real(df, *a))
    ctx = Context.load(committed_results(), "a10", "", None, tmp_path)
    html = "".join(estimates.quick_section(ctx))
    df = pd.read_csv(tmp_path / "quick_runs.csv")
    assert (tmp_path / "quick_pairs.png").stat().st_size > 10_000 and "quick_pairs.png" in html
    assert len(df) == len(QC.comparison_table(records=ctx.records)) >= 10
    done = df[df["measured_train_s"].notna()]
    assert len(done) >= 7
    assert ((done[["to_anchor_s", "steps_s", "events_s"]].sum(axis=1)
             - (done["predicted_train_s"] - done["measured_train_s"])).abs() < 1e-6).all()
    row = done.set_index("quick_run").loc[BEST_PAIR[0].rsplit("/", 1)[1]]
    assert row["same_steps_host_ratio"] < 0.65 and abs(row["same_steps_gpu_ratio"] - 1) < 0.02
    assert bool(row["first_on_host"]) and row["same_steps_ratio"] < 0.75
    # one panel per pair with steady steps in common: every complete pair
    assert len(set(drawn[0]["name"])) == done["same_steps_ratio"].notna().sum() == len(done)


def test_the_error_parts_of_a_synthetic_pair_by_hand():
    """A full run made after a noise-free quick run, with three known departures from the quick run's costs: it is
    SHIFT s slower before its first step, its steps after the anchor (39) run SLOW x slower, and its first save costs
    SAVE_FULL instead of the quick run's SAVE. The parts name each: to anchor = -SHIFT; steps = -SLOW x the true
    seconds of the steps after 39 outside the interval that holds the step-50 events; events = SAVE - SAVE_FULL -
    SLOW x step 51's true seconds (the step in that interval). The steps both runs have repeat exactly (ratio 1)."""
    sched = _schedule(94)
    q = _synthetic_quick_run(sched, decided=39, noise=0.0)
    est = Q.estimate(q, n_boot=0)
    shift, slow, save_full = 2.0, 0.10, 0.5
    t, elapsed, eval_elapsed = shift, [], {}
    for s in range(1, 95):
        t += _true_step(sched[s - 1]) * (1 + slow if s >= 40 else 1.0)
        elapsed.append((s, t))
        if s == 50:
            t += EVAL_FIRST
            eval_elapsed[s] = t
            t += save_full
    runtime = t + EVAL_NEXT + SAVE + END
    full = RunRecord(path="f", hw="h200", experiment="seed", run="20990101-010000", args=q.args, elapsed=elapsed,
                     eval_elapsed=eval_elapsed, event_steps=frozenset({50, 94}), max_steps=94, global_steps=94,
                     train_runtime_s=runtime, samples_per_step=16)
    parts = QC.error_parts(est, sched, full)
    later = sum(_true_step(sched[s - 1]) for s in range(40, 95) if s != 51)
    assert parts is not None and parts.to_anchor_s == pytest.approx(-shift, abs=1e-9)
    assert parts.steps_s == pytest.approx(-slow * later, rel=1e-9)
    assert parts.events_s == pytest.approx(SAVE - save_full - slow * _true_step(sched[50]), abs=1e-9)
    assert parts.to_anchor_s + parts.steps_s + parts.events_s == pytest.approx(est.train_s - runtime, abs=1e-9)
    same = QC.same_steps(q, full)
    assert same.ratio == pytest.approx(1.0, rel=1e-12) and same.busy_ratio is None
    assert (same.intervals, same.steps) == (29, 29)  # steps 11-39: after the warm-up, before the quick stop


def test_every_committed_pair_lies_inside_its_estimates_range():
    """The 95 % range is what the committed quick/full pairs support (data/quick_pairs.yaml, checked here
    against the runs): every pair's measured training time and steady tokens/s lie inside their estimate's range. The
    bootstrap range alone held 5 of the 10 (bs16 +5.8 %, best -13.2 % and +13.4 % among those outside)."""
    from analysis.estimate import quick_calibration as C

    rows = QC.comparison_table(committed_results())
    pairs = QC.pair_errors(rows)
    listed = C.read_yaml(C.PAIRS_FILE)["pairs"]
    assert len(pairs) == len(listed) >= 10
    for got, want in zip(pairs, listed):
        assert (got.experiment, got.hw, got.quick_run, got.full_run) == \
            tuple(str(want[k]) for k in ("experiment", "hw", "quick_run", "full_run"))
        assert got.train_s == pytest.approx(want["train_s"], abs=1e-6)
        assert got.tokens_per_s == pytest.approx(want["tokens_per_s"], abs=1e-6)
    with_full = [r for r in rows if isinstance(r, QC.Paired) and r.measured_train_s]
    assert all(r.inside for r in with_full), [(r.quick_run, r.error_pct) for r in with_full if not r.inside]
    assert all(r.tokens_per_s_low <= r.measured_tokens_per_s <= r.tokens_per_s_high for r in with_full)
    low, high = C.band("train_s")
    assert (math.exp(low), math.exp(high)) == pytest.approx((0.838, 1.201), abs=1e-3)


def test_without_enough_pairs_there_is_no_estimate(tmp_path, monkeypatch):
    """Two pairs support no range: the estimate is withheld and says why."""
    from analysis.estimate import quick_calibration as C

    few = tmp_path / "pairs.yaml"
    few.write_text("pairs:\n  - {train_s: 0.1, tokens_per_s: 0.1}\n  - {train_s: -0.1, tokens_per_s: -0.1}\n")
    assert C.band("train_s", few) is None and C.widen(100.0, 90.0, 110.0, "train_s", few) is None
    monkeypatch.setattr(C, "PAIRS_FILE", few)
    est = Q.calibrated(Q.QuickEstimate(run="r", model=None, train_s=100.0, train_s_low=95.0, train_s_high=105.0))
    assert est.train_s is None and est.train_s_low is None and "no estimate" in est.notes[0]
