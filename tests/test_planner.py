"""`swiftbench plan`: hand-computed memory parts, the estimate against every committed run, time, cost, CLI."""
from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from committed import committed_results

from analysis.estimate import planner, transfer, validate
from analysis.estimate import prices as price_tables
from analysis.measure import flops as measure_flops
from analysis.measure.steps import step_time
from analysis.parse.results import collect
from experiments.base import hardware
from experiments.base.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
RESULTS = committed_results()
MODEL = "Qwen2.5-7B-Instruct"
GIB = 2 ** 30
H, INTER, KV, V, LAYERS = 3584, 18944, 512, 152064, 28
SEED_RUN = "20261130-074229"
# the planner's measured seed-recipe step: the least cut committed run, newest first (the full epoch of call 44)
SEED_TIME_RUN = "20261202-145024-363c2fc28e7a"


@pytest.fixture(scope="module")
def shapes():
    return planner.resolve_model(MODEL)


@pytest.fixture(scope="module")
def validation():
    return validate.estimates_vs_measurements(RESULTS)


def _cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """`plan ARGS`; in the checkout on the committed results' copy (committed.py), never the live tree."""
    if cwd == ROOT and "--results" not in args:
        args = (*args, "--results", str(RESULTS))
    return subprocess.run([sys.executable, "-m", "analysis.cli", "plan", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


# ------------------------------------------------------------------------------------------ constants


def test_every_constant_says_its_kind_and_why():
    c = planner.constants()
    kinds = c.kinds
    assert set(c.values) == set(kinds)
    assert set(kinds.values()) <= {"physical", "calibrated", "measured", "assumption"}
    assert {k for k, v in kinds.items() if v == "calibrated"} == {
        "memory.allocator_cache_factor", "memory.allocator_cache_factor_stored", "memory.allocator_cache_factor_other",
        "memory.data_parallel.zero_stored_cache_factor", "time.achievable_fraction", "time.host_overhead_s"}
    assert kinds["memory.activations.logits"] == "physical"
    assert kinds["memory.activations.checkpoint_per_layer"] == "physical"


def test_calibrated_constants_are_what_the_committed_runs_give():
    fit = validate.calibrate(RESULTS)
    c = planner.constants()
    assert fit.allocator_cache_factor == pytest.approx(c["memory.allocator_cache_factor"], rel=0.01)
    assert fit.allocator_cache_factor_stored == pytest.approx(c["memory.allocator_cache_factor_stored"], rel=0.01)
    assert fit.allocator_cache_factor_other == pytest.approx(c["memory.allocator_cache_factor_other"], rel=0.01)
    assert fit.zero_stored_cache_factor == pytest.approx(c["memory.data_parallel.zero_stored_cache_factor"],
                                                         rel=0.01)
    assert fit.achievable_fraction == pytest.approx(c["time.achievable_fraction"], rel=0.01)
    assert fit.host_overhead_s == pytest.approx(c["time.host_overhead_s"], rel=0.01)
    # the seed run: ~388 ms per batch-1 micro-step (steady steps 10-40 of its 40: 6,207 ms / 16), of which the GPU
    # roofline is a small part
    assert fit.small.experiment == "seed" and fit.small.micro_step_s == pytest.approx(0.388, abs=0.001)
    assert fit.host_overhead_s > 0.9 * fit.small.micro_step_s


# ------------------------------------------------------------------------------- memory, by hand


def test_hand_computed_memory_components_of_the_7b(shapes):
    assert shapes["head_dim"] == 128 and shapes["num_key_value_heads"] * shapes["head_dim"] == KV
    mem = planner.memory(shapes, "lora", seq_len=593, batch=1, gradient_checkpointing=True, lora_rank=8)
    p = mem.params
    assert p.total == 7_615_616_512
    assert p.lora == 20_185_088 == hardware.lora_params(shapes, {"lora_rank": 8, "target_modules": "all-linear"})
    assert mem.weights_gib == pytest.approx(7_615_616_512 * 2 / GIB)
    assert round(mem.weights_gib, 2) == 14.19  # 14.185 GiB
    assert mem.adapters_gib == pytest.approx(20_185_088 * 4 / GIB)   # fp32 adapters (PEFT upcast)
    assert mem.gradients_gib == pytest.approx(20_185_088 * 4 / GIB)
    assert mem.optimizer_gib == pytest.approx(20_185_088 * 8 / GIB)  # AdamW: 2 fp32 states
    # checkpointed: 2h per layer + final norm fp32 4h + logits/loss 12 V, per token
    per_token = LAYERS * 2 * H + 4 * H + 12 * V
    assert per_token == 2_039_808
    assert mem.activations_gib == pytest.approx(593 * per_token / GIB)
    assert mem.logits_loss_gib == pytest.approx(593 * 12 * V / GIB)
    static = (7_615_616_512 * 2 + 20_185_088 * 16) / GIB
    assert mem.live_peak_gib == pytest.approx(static + 593 * per_token / GIB)
    c = planner.constants()
    stored, working = (LAYERS * 2 * H + 4 * H) * 593, 12 * V * 593  # kept across the step; the loss's logits
    assert mem.stored_activations_gib == pytest.approx(stored / GIB)
    assert mem.working_activations_gib == pytest.approx(working / GIB)
    assert mem.peak_mem_gib == pytest.approx(static + (c["memory.allocator_cache_factor_stored"] * stored
                                                          + c["memory.allocator_cache_factor"] * working) / GIB)


def test_activations_without_checkpointing_keep_every_layer(shapes):
    per = planner.activation_bytes_per_token(shapes, "lora", False, 1, 2048)
    layer = 24 * H + 8 * INTER + 4 * KV + 6 * H + 1 * INTER  # saved tensors + dropout masks
    assert per.layer_per_token == layer == 280_064
    assert per.total_per_token == LAYERS * layer + 4 * H + 12 * V
    with_gc = planner.activation_bytes_per_token(shapes, "lora", True, 1, 2048)
    assert per.total_per_token > 4 * with_gc.total_per_token
    # a padded batch repeats k, v to all heads and saves a T x T mask, but with checkpointing the logits still dominate
    padded = planner.activation_bytes_per_token(shapes, "lora", True, 16, 593)
    assert padded.total_per_token == with_gc.total_per_token
    assert planner.activation_bytes_per_token(shapes, "lora", False, 16, 593).layer_per_token == \
        layer + 4 * H - 4 * KV + 2 * 593


def test_qlora_and_full_memory(shapes):
    q = planner.memory(shapes, "qlora", 593, 1, True, 8)
    decoder_linears = hardware.matmul_params(shapes) - H * V
    assert q.weights_gib == pytest.approx((decoder_linears * 0.5157 + (7_615_616_512 - decoder_linears) * 2) / GIB)
    full = planner.memory(shapes, "full", 593, 1, True, 8)
    assert full.adapters_gib == 0
    assert full.gradients_gib == pytest.approx(7_615_616_512 * 2 / GIB)
    assert full.optimizer_gib == pytest.approx(7_615_616_512 * 4 / GIB)


# -------------------------------------------------------------------------------- the hard bar


def test_estimate_within_10pct_of_every_committed_run(validation):
    """Every committed run is checked where the planner models it: the reserved peak of finished uncapped runs
    (within 10 %), and fits-or-not of runs under an allocator cap (the live peak against the cap, which the capacity
    probes decided independently: no constant was fitted on them). Configurations it does not model are named."""
    rows = validation.to_dict("records")
    assert len(rows) == len(collect(RESULTS)) >= 4
    capped = [r for r in rows if r.get("check") == "fits under the cap"]
    assert len(capped) >= 17
    # One miss, at the edge and at 2048 tokens: bf16 LoRA bs 2 with every row padded to 2048 (live 22.27 GiB by
    # the model) ran out of memory under 24 GiB asking for one 2.30 GiB fp32 logits tensor at 23.02 GiB in use.
    wrong = {r["experiment"]: r for r in capped if not r["fits_correct"]}
    assert set(wrong) == {"lcap24-len2048-bs2"}, wrong
    assert wrong["lcap24-len2048-bs2"]["live_peak_gib"] == pytest.approx(22.27, abs=0.01)
    assert wrong["lcap24-len2048-bs2"]["seq_len"] == 2048  # the launcher's --pad-to, not the data's 593
    assert {r["experiment"] for r in capped if not r["predicted_fits"]} >= {"cap24-bs12", "cap40-bs24", "cap80-bs64",
                                                                            "qcap24-bs6", "qlora-cap24-bs8"}
    # the planner's verdict (planner.fit_verdict, with its 25 % fragmentation margin) is never contradicted: the
    # edge cases that trained (bs 8 under 24 GiB, QLoRA bs 4 at 2048) and the one that ran out are `tight`
    assert all(r["verdict_correct"] for r in capped), [r for r in capped if not r["verdict_correct"]]
    assert {r["experiment"] for r in capped if r["planner_fit"] == "tight"} == {"cap24-bs8", "cap80-bs48",
                                                                               "qcap24-bs4", "lcap24-len2048-bs2"}
    for r in rows:
        if r.get("check") != "reserved peak":
            assert (not isinstance(r.get("check"), str)
                    or r["check"].startswith(("not modelled", "not checked", "fits"))), r
            continue
        assert r["measured_peak_gib"], r
        assert r["within_10pct"], (f"{r['hw']}/{r['experiment']}/{r['run']}: estimated "
                                   f"{r['estimated_peak_gib']:.2f} GiB vs measured {r['measured_peak_gib']} GiB")
        if r["peak_rule"] == "within 10 %":
            assert abs(r["ratio"] - 1) <= 0.10
        else:  # a cut run's peak is a lower bound of the full run's
            assert r["ratio"] >= 0.90 and "cut run" in r["note"]
    full = [r for r in rows if r.get("peak_rule") == "within 10 %"]
    # the full bs16 epochs: two of 2026-11-30 and the full partners of the quick runs of calls 16, 20, 38 and 40
    # (logging every step); the seed recipe's full epochs of calls 21 and 44; the best recipe's full epochs (padding-
    # free, Liger, checkpointing off: modelled since the memory model knows them) and the fast and fast-fused epochs
    # every committed uncapped full epoch on one GPU is held to 10 % (the seed, bs16, best, fast, fast-fused,
    # compiled epochs: padding-free, Liger, checkpointing off are modelled)
    from analysis.measure.jobtime import job_time

    whole = {r.run for r in collect(RESULTS) if job_time(r).full_epoch and (r.world_size or 1) == 1
             and not r.cap_gib and r.args.get("group_by_length") is not True
             and r.run_status.get("harness") != "plain"}  # a plain twin has no token counts: not modelled, said so
    plain = {r["run"]: r["check"] for r in rows if r["run"] in {x.run for x in collect(RESULTS)
                                                                 if x.run_status.get("harness") == "plain"}}
    assert set(plain.values()) == {"not modelled: padding-free rows without counted tokens (a plain run)"}
    assert {r["run"] for r in full} == whole and len(whole) >= 15
    by_run = {r["run"]: r for r in rows}
    assert by_run[SEED_RUN]["measured_peak_gib"] == 17.68
    assert by_run[SEED_RUN]["seq_len"] == 593 and by_run[SEED_RUN]["per_device_batch"] == 1
    assert by_run["20261130-075715"]["measured_peak_gib"] == 16.87
    assert "cut run" in by_run["20261130-075715"]["note"]  # its 320 samples may not hold the 593-token one
    for run in ("20261130-074942", "20261130-075319"):
        assert by_run[run]["measured_peak_gib"] == 75.80 and by_run[run]["per_device_batch"] == 16
    # the live (allocated) peak is far below what the allocator reserved on the roomy H200
    assert by_run["20261130-074942"]["live_peak_gib"] < 0.5 * 75.80


def test_step_time_estimates_of_committed_runs(validation):
    """The roofline + host overhead (two constants fitted on the first four H200 runs) against every finished,
    uncapped run of a configuration the planner models (spread-s42 and tp-bs8 were made after the fit)."""
    checked = [r for r in validation.to_dict("records") if r.get("step_checked") is True]
    # tp-bs2 stopped at step 12: two steady intervals (10-12) are below validate.MIN_STEADY_INTERVALS, not checked
    assert not any(r["experiment"] == "tp-bs2" for r in checked)
    # runs with a host id (2026-12-01, other hosts than the fit's) are reported, not checked: the host-blind time model
    # is 20 % off either way there (seed recipe: 5.18 s on host a55bc8d6aca5, 7.81 s on 8c196bbf945e, 6.20 estimated)
    rows = validation.to_dict("records")
    other = {(r["experiment"], r["host"]): r["step_ratio"] for r in rows if isinstance(r["host"], str)}
    assert not any(isinstance(r["host"], str) for r in checked)
    assert other[("pair-seed", "a55bc8d6aca5")] > 1.15 and other[("seed", "8c196bbf945e")] < 0.85
    assert {"seed", "bs16", "spread-s42", "tp-bs8", "tp-bs4", "seed-w4", "seed-w4-sim"} <= \
        {r["experiment"] for r in checked}
    # 8 dataloader workers: the host overhead constant was fitted on 4-worker runs, so no step check
    assert not any(r["experiment"].startswith("seed-w8") for r in checked)
    for r in checked:
        assert r["estimated_step_s"] is not None and r["measured_step_s"] is not None
        assert r["step_ratio"] == pytest.approx(1, abs=0.15), r


# ------------------------------------------------------------------------------------------- plans


def test_fits_flips_where_it_must():
    big = {p.hw: p for p in planner.estimate(MODEL, batch=16, grad_accum=1, seq_len=2048, results=RESULTS)}
    assert not big["a10"].fits and not big["rtx4090"].fits  # bs16 at 2048 tokens does not fit 24 GB
    assert big["h200"].fits
    small = {p.hw: p for p in planner.estimate(MODEL, batch=1, grad_accum=16, seq_len=593, results=RESULTS)}
    assert all(p.fits for p in small.values())
    full = {p.hw: p for p in planner.estimate(MODEL, method="full", seq_len=2048, gradient_checkpointing=False,
                                                 hw="a100-80gb,h200", results=RESULTS)}
    assert full["a100-80gb"].fit == "tight" and full["h200"].fit == "yes"  # live 72.7 GiB, needs 76.5 of 74.5
    assert big["a10"].logged_peak_gib is None
    assert big["h200"].logged_peak_gib == pytest.approx(big["h200"].capacity_gib)
    assert big["h200"].peak_mem_gib > big["h200"].capacity_gib
    assert small["h200"].logged_peak_gib == small["h200"].peak_mem_gib
    for p in [*big.values(), *small.values()]:
        assert (p.fit == "yes") == (p.needs_gib <= p.capacity_gib) and p.fits == (p.fit != "no")
        assert p.capacity_gib == pytest.approx(hardware.require(p.hw).memory_gb * 1e9 / GIB)


def test_seed_recipe_on_h200_uses_the_measured_median_and_its_profile_elsewhere():
    """The seed recipe: measured on the H200; on every other class its profile carried over (transfer.py), with the
    band; other data or another recipe: a step scaled from the reference profiles; QLoRA and full: the roofline."""
    plans = {p.hw: p for p in planner.estimate(MODEL, method="lora", max_length=2048, batch=1, grad_accum=16,
                                                  samples=1500, epochs=1, results=RESULTS)}
    recs = collect(RESULTS)
    median = step_time(next(r for r in recs if r.run == SEED_TIME_RUN)).median
    h200 = plans["h200"]
    # the one estimator (analysis.estimate.epoch): the median train_runtime of the recipe's full epochs on the class,
    # every host, the band their range; its start-up the median of theirs
    full = [next(r for r in recs if r.run == name) for name in ("20261201-105624-5f4daf78e2ab", SEED_TIME_RUN)]
    runtimes = sorted(r.train_runtime_s for r in full)
    assert h200.time_source == "measured: 2 runs on 2 hosts" and h200.time_kind == "measured"
    assert h200.step_time_s == median
    assert h200.steps == math.ceil(1500 / 16) == 94
    assert h200.total_time_s == pytest.approx((596.269 + 725.1928) / 2) == pytest.approx(sum(runtimes) / 2)
    assert (h200.total_low_s, h200.total_high_s) == pytest.approx((596.269, 725.1928))
    loads = [r.run_status["wall_s"] - r.train_runtime_s for r in full]
    assert h200.startup_s == pytest.approx(sum(loads) / 2) and h200.job_s == pytest.approx(h200.total_time_s
                                                                                          + h200.startup_s)
    seed = next(r for r in recs if r.run == SEED_TIME_RUN)
    step = transfer.profile_step(seed)
    steady = median * 94
    for key in ("a10", "rtx4090", "a100", "h100"):
        p = plans[key]
        assert p.time_source == "profile of h200/seed/20261202-145024" and p.time_kind == "profiled"
        assert f"{SEED_TIME_RUN}'s profile" in p.time_note
        parts = transfer.step_on(step, key)
        assert p.step_time_s == pytest.approx(parts.total_s)
        assert p.time_parts.host_s == pytest.approx(step.host_s)  # same host assumed
        # the steady steps carried over, the rest of the profiled epoch's train_runtime as measured (same host)
        # and the whole scaled by the H200's measured median over the profiled run's own epoch (the model's ratio
        # applied to the measured figure)
        overhead = seed.train_runtime_s - steady
        k = h200.total_time_s / seed.train_runtime_s
        assert p.total_time_s == pytest.approx((parts.total_s * 94 + overhead) * k)
        low, high = transfer.band("profiled", key)  # its family's band (the H100's is Hopper's: +9.6 % high)
        assert p.total_low_s == pytest.approx((parts.total_s * 94 / (1 + high) + overhead) * k)
        assert p.total_high_s == pytest.approx((parts.total_s * 94 / (1 + low) + overhead) * k)
        assert p.total_low_s < p.total_time_s < p.total_high_s
        # a slower card, the same host: the host-bound step grows by its GPU part only
        assert median < p.step_time_s < 1.5 * median
    text = " ".join(plans["a10"].assumptions)
    assert "same host assumed" in text and "docs/time-model.md" in text
    # data other than the run's: the measured time does not apply; the step is scaled from the reference profiles
    other = planner.estimate(MODEL, mean_len=1024, hw="h200", results=RESULTS)[0]
    assert other.time_kind == "scaled" and "trained other data" in (other.time_note or "")
    # a different recipe (batch 3): nothing measured; batch 2 x 8 is the claims audit's tp-bs2, measured
    assert planner.estimate(MODEL, batch=3, grad_accum=5, hw="h200", results=RESULTS)[0].time_kind == "scaled"
    assert planner.estimate(MODEL, batch=2, grad_accum=8, hw="h200", results=RESULTS)[0].time_source == \
        "measured: h200/tp-bs2/20261130-121331"
    full = planner.estimate(MODEL, method="full", hw="h200", results=RESULTS)[0]
    roof = full.roofline
    assert full.time_kind == "roofline" and full.step_time_s == pytest.approx(roof.step_time_s)
    assert roof.micro_step_s == pytest.approx(max(roof.compute_s, roof.weight_reads_s) + roof.host_overhead_s)


def test_flops_per_token_is_the_mfu_formula(shapes):
    """The planner's FLOPs per token are analysis.measure.flops's (no constant of planner.yaml): 4 per matmul weight
    and 6 per trainable one, plus one more forward (2 per matmul weight) with gradient checkpointing."""
    assert "time.flops" not in planner.constants()
    n = hardware.matmul_params(shapes)
    lora = planner.param_counts(shapes, "lora", 8).lora
    assert lora == 20_185_088
    assert planner.flops_per_token(shapes, "lora", False, 8) == 4 * n + 6 * lora
    assert planner.flops_per_token(shapes, "lora", True, 8) == 6 * n + 6 * lora
    assert planner.flops_per_token(shapes, "lora", True, 8) == \
        measure_flops.flops_per_token(n, lora, "lora", True).hardware
    assert planner.flops_per_token(shapes, "full", False, 8) == 6 * n
    assert planner.flops_per_token(shapes, "lora", True, 4) < planner.flops_per_token(shapes, "lora", True, 8)


def test_roofline_reproduces_both_h200_experiments(shapes):
    c = planner.constants()
    spec = hardware.require("h200")
    fit = validate.calibrate(RESULTS)
    assert (fit.small.experiment, fit.large.experiment) == ("seed", "bs16")
    seed = planner.roofline_micro_step(spec, shapes, "lora", fit.small.tokens_per_micro_step, True, 8, c)
    bs16 = planner.roofline_micro_step(spec, shapes, "lora", fit.large.tokens_per_micro_step, True, 8, c)
    assert seed.micro_step_s == pytest.approx(fit.small.micro_step_s, rel=0.02)
    assert bs16.micro_step_s == pytest.approx(fit.large.micro_step_s, rel=0.02)


def test_cost_is_the_jobs_hours_times_price(tmp_path):
    """A job is start-up + epoch (issue 43): the cost is its hours x the price; where no committed run of the job
    says what start-up takes (two epochs: no run of that length), the epoch alone."""
    prices = tmp_path / "prices.yaml"
    prices.write_text("h200: 3.5\na10: 0.75\n")
    plans = {p.hw: p for p in planner.estimate(MODEL, epochs=2, prices=prices, results=RESULTS)}
    assert plans["h200"].steps == 188 and plans["h200"].startup_s is None
    assert plans["h200"].cost == pytest.approx(plans["h200"].total_time_s / 3600 * 3.5)
    assert plans["a10"].cost == pytest.approx(plans["a10"].total_time_s / 3600 * 0.75)
    assert plans["h100"].cost is None  # no price given for it
    # without --prices: the built-in table (data/prices.yaml), the one tables and the report price with
    builtin = price_tables.read_prices(price_tables.DEFAULT_PRICES)
    for p in planner.estimate(MODEL, results=RESULTS):
        assert p.price_per_gpu_hour == builtin[p.hw] and p.currency == "USD"
        assert p.startup_s is not None and p.startup_s > 30  # the seed's full epochs: 39.9 and 41.0 s
        assert p.job_s == pytest.approx(p.total_time_s + p.startup_s)
        assert p.cost == pytest.approx(p.job_s / 3600 * builtin[p.hw])


@pytest.mark.parametrize("text,needle", [("h100: [1\n", "not valid YAML"), ("- 1\n- 2\n", "mapping"),
                                          ("tpu9: 1\n", "unknown hardware"), ("h100: -2\n", "non-negative"),
                                          ("h100: cheap\n", "non-negative")])
def test_bad_price_file_names_the_file(tmp_path, text, needle):
    path = tmp_path / "prices.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        planner.estimate(MODEL, prices=path, results=RESULTS)
    assert str(path) in str(err.value) and needle in str(err.value)


def test_model_from_a_config_folder(tmp_path, shapes):
    folder = tmp_path / MODEL
    folder.mkdir()
    shutil.copy(RESULTS / "h200" / "seed" / SEED_RUN / "model_config.json", folder / "config.json")
    got = planner.resolve_model(str(folder))
    assert got["name"] == MODEL
    assert {k: got[k] for k in hardware.SHAPE_KEYS} == {k: shapes[k] for k in hardware.SHAPE_KEYS}
    # a folder named like the recipe's model matches its measured run too
    assert planner.estimate(str(folder), hw="h200", results=RESULTS)[0].time_source.startswith("measured: ")
    with pytest.raises(InputError):
        planner.resolve_model(str(tmp_path / "no-such-model"))


def test_qlora_and_full_say_they_are_estimates():
    for method in ("qlora", "full"):
        p = planner.estimate(MODEL, method=method, hw="h100", results=RESULTS)[0]
        assert p.estimate_only and p.time_source == "roofline"
        assert p.assumptions[0].startswith("ESTIMATE ONLY")
    assert not planner.estimate(MODEL, hw="h100", results=RESULTS)[0].estimate_only


# ---------------------------------------------------------------------------------------------- CLI


def test_json_output_shape():
    proc = _cli("--model", MODEL, "--method", "lora", "--max-length", "2048", "--batch", "1", "--grad-accum", "16",
                "--samples", "1500", "--epochs", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    plans = json.loads(proc.stdout)
    assert [p["hw"] for p in plans] == hardware.shown()
    for p in plans:
        for key in ("hw", "peak_mem_gib", "fits", "step_time_s", "total_time_s", "cost", "breakdown", "time_source",
                    "needs_gib", "assumptions"):
            assert key in p
        assert p["cost"] == pytest.approx(p["total_hours"] * p["price_per_gpu_hour"])  # the built-in prices
        assert isinstance(p["fits"], bool)
        assert set(p["breakdown"]) == {"weights_gib", "adapters_gib", "gradients_gib", "optimizer_gib",
                                       "activations_gib", "allocator_cache_gib", "cuda_context_gib"}
        assert p["time_source"].startswith(("measured: ", "profile of "))
    assert plans[-1]["time_source"] == "measured: 2 runs on 2 hosts"


def test_human_output_has_the_table_and_assumptions():
    proc = _cli("--model", MODEL, "--method", "qlora", "--seq-len", "593", "--hw", "a10,h200")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "a10" in out and "h200" in out and "needs GiB" in out and "fits" in out
    assert "breakdown (GiB)" in out and "assumption: ESTIMATE ONLY" in out
    assert "qlora and full: the roofline" in out


@pytest.mark.parametrize("args", [
    ["--model", "No-Such-Model-7B"],
    ["--model", MODEL, "--batch", "0"],
    ["--model", MODEL, "--batch", "-2"],
    ["--model", MODEL, "--grad-accum", "0"],
    ["--model", MODEL, "--samples", "-5"],
    ["--model", MODEL, "--epochs", "0"],
    ["--model", MODEL, "--max-length", "0"],
    ["--model", MODEL, "--lora-rank", "0"],
    ["--model", MODEL, "--hw", "a10,tpu9"],
    ["--model", MODEL, "--hw", "cpu"],
    ["--model", MODEL, "--seq-len", "4096"],
    ["--model", MODEL, "--seq-len", "512", "--mean-len", "1024"],
    ["--model", MODEL, "--batch", "two"],
    ["--model", MODEL, "--method", "dora"],
    ["--model", MODEL, "--gradient-checkpointing", "maybe"],
    ["--model", MODEL, "--quant_bits", "8"],
    ["--model", MODEL, "--method", "full", "--quant_bits", "4"],
    ["--model", MODEL, "--prices", "/no/such/prices.yaml"],
])
def test_bad_arguments_exit_2_with_one_line(args):
    proc = _cli(*args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "error" in lines[0]
    assert proc.stdout == ""


def test_argparse_errors_name_the_subcommand():
    proc = _cli("--model", MODEL, "--batch", "two")
    assert proc.stderr.startswith("swiftbench plan: error: argument --batch")


# ------------------------------------------------------------------------------- as a user meets it (issue 13)


def test_largest_batch_is_the_last_one_whose_needs_fit(shapes):
    c = planner.constants()
    for key in ("a10", "a100", "h200"):
        cap = planner.capacity_gib(hardware.require(key))
        b = planner.largest_batch(shapes, "lora", 593, True, 8, cap, c)
        assert b >= 1
        assert planner.memory(shapes, "lora", 593, b, True, 8, c).needs_gib <= cap
        assert planner.memory(shapes, "lora", 593, b + 1, True, 8, c).needs_gib > cap
    assert planner.largest_batch(shapes, "full", 2048, False, 8, 10.0, c) == 0  # not even batch 1
    plans = {p.hw: p for p in planner.estimate(MODEL, seq_len=593, results=RESULTS)}
    assert plans["a10"].max_batch < plans["a100"].max_batch < plans["h200"].max_batch


def test_roofline_figures_in_the_units_of_the_measurements():
    p = planner.estimate(MODEL, seq_len=593, hw="a10", results=RESULTS)[0]
    roof, n = p.roofline, p.batch * p.grad_accum
    assert roof.ms_per_sample == pytest.approx(roof.step_time_s / n * 1000)
    assert roof.tokens_per_s == pytest.approx(n * p.tokens_per_sample / roof.step_time_s)
    assert roof.total_time_s == pytest.approx(roof.step_time_s * p.steps)
    assert 0 < roof.gpu_busy_frac < 1
    assert p.tokens_per_s == pytest.approx(n * p.tokens_per_sample / p.step_time_s)


def test_gpu_names_are_case_insensitive_and_prices_name_their_currency(tmp_path):
    assert [p.hw for p in planner.estimate(MODEL, hw="A10,H100", results=RESULTS)] == ["a10", "h100"]
    prices = tmp_path / "prices.yaml"
    prices.write_text("currency: EUR\nH100: 2.5\n")
    plan = planner.estimate(MODEL, hw="h100", prices=prices, results=RESULTS)[0]
    assert plan.currency == "EUR" and plan.cost == pytest.approx(plan.total_hours * 2.5)
    proc = _cli("--model", MODEL, "--hw", "H100,a10", "--prices", str(prices))
    assert proc.returncode == 0, proc.stderr
    assert "cost (EUR)" in proc.stdout and "in EUR" in proc.stdout and "largest batch" in proc.stdout
    proc = _cli("--model", MODEL, "--hw", "a10")
    assert "no prices given" not in proc.stdout and "built-in price table (prices.yaml" in proc.stdout
    assert proc.stdout.count("assumptions (the same for every GPU class)") == 1


def test_plan_from_a_runs_args_json():
    """--from-args: the recipe of a committed run (the seed recipe), its epoch's samples and longest sample from the
    log beside it; a flag given as well wins."""
    args = RESULTS / "h200" / "seed" / SEED_RUN / "args.json"
    if not args.is_file():
        pytest.skip("no committed seed run")
    kw = planner.args_from_run(args)
    rec = next(r for r in collect(RESULTS) if r.run == SEED_RUN and r.experiment == "seed")
    assert (kw["batch"], kw["grad_accum"], kw["max_length"], kw["method"]) == (1, 16, 2048, "lora")
    assert kw["samples"] == rec.train_samples and kw["seq_len"] == min(rec.train_tokens_max, 2048)
    proc = _cli("--from-args", str(args), "--hw", "a10,h200", "--json")
    assert proc.returncode == 0, proc.stderr
    plans = {p["hw"]: p for p in json.loads(proc.stdout)}
    assert plans["a10"]["seq_len"] == kw["seq_len"] and plans["a10"]["batch"] == 1
    assert plans["h200"]["time_source"] == "measured: 2 runs on 2 hosts"  # the one estimator, as plain plan
    proc = _cli("--from-args", str(args), "--batch", "4", "--hw", "a10", "--json")
    assert json.loads(proc.stdout)[0]["batch"] == 4
    proc = _cli("--from-args", "/no/such/args.json")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "no such args.json" in proc.stderr


# ---------------------------------------------------------------------------- as an ms-swift user meets it (issue 32)


def test_fit_verdict_against_every_committed_capped_run(validation):
    """Every committed run made under an allocator cap (launch.json / run.json mem_cap_gib): the planner's verdict
    for its recipe at its cap is never contradicted: no run that trained is `no`, no run that ran out of memory is
    `yes`. QLoRA bs 4 at 2048 tokens trained at 21.2 GiB under 24 GiB: not `no`."""
    # runs that reached training (an interrupted one that never did has no args.json: nothing to estimate)
    capped_runs = [r for r in collect(RESULTS) if (r.launcher or {}).get("mem_cap_gib") and r.args]
    assert len(capped_runs) >= 19
    rows = {(r["experiment"], r["run"]): r for r in validation.to_dict("records")
            if isinstance(r.get("cap_gib"), (int, float)) and not math.isnan(r["cap_gib"])}
    assert set(rows) == {(r.experiment, r.run) for r in capped_runs}
    # the Liger runs (best24-a: padding-free too; QLoRA bs 8) are modelled since the memory model knows Liger
    assert not any(r["check"].startswith("not modelled") for r in rows.values())
    assert {e for (e, _), r in rows.items() if r["liger"]} == {"best24-a", "qlora-cap24-bs8-liger", "fast-gc"}
    for (exp, run), r in rows.items():
        assert r["check"] == "fits under the cap", r
        if r["status"] == "ok":
            assert r["planner_fit"] != "no", f"{exp}/{run} trained under {r['cap_gib']} GiB, planner says no"
        else:
            assert r["planner_fit"] != "yes", f"{exp}/{run} ran out of memory, planner says yes"
    (q,) = [r for (e, _), r in rows.items() if e == "qcap24-bs4"]
    assert q["status"] == "ok" and q["measured_peak_gib"] == pytest.approx(21.22) and q["planner_fit"] == "tight"


def test_ms_swift_flag_names_and_common_gpu_names():
    """`swiftbench plan --per_device_train_batch_size 4 --lora_rank 8 --hw "RTX 4090"` works (the seed recipe's
    model by default) and means what the planner's own flags mean."""
    proc = _cli("--per_device_train_batch_size", "4", "--lora_rank", "8", "--hw", "RTX 4090")
    assert proc.returncode == 0, proc.stderr
    assert "rtx4090" in proc.stdout and "batch 4" in proc.stdout
    swift = _cli("--model", "Qwen2.5-7B", "--per_device_train_batch_size", "2", "--gradient_accumulation_steps", "8",
                 "--lora_rank", "16", "--tuner_type", "lora", "--num_train_epochs", "2", "--max_length", "1024",
                 "--gradient_checkpointing", "true", "--hw", "4090,H100 SXM,NVIDIA H200", "--json")
    own = _cli("--model", MODEL, "--batch", "2", "--grad-accum", "8", "--lora-rank", "16", "--method", "lora",
               "--epochs", "2", "--max-length", "1024", "--hw", "rtx4090,h100,h200", "--json")
    assert swift.returncode == 0 and own.returncode == 0, swift.stderr + own.stderr
    a, b = json.loads(swift.stdout), json.loads(own.stdout)
    assert [p["hw"] for p in a] == ["rtx4090", "h100", "h200"]
    assert "model Qwen2.5-7B: the shapes of Qwen2.5-7B-Instruct" in a[0]["assumptions"][0]
    strip = [{k: v for k, v in p.items() if k != "assumptions"} for p in a]
    assert strip == [{k: v for k, v in p.items() if k != "assumptions"} for p in b]
    assert a[0]["assumptions"][1:] == b[0]["assumptions"]
    qlora = json.loads(_cli("--tuner_type", "lora", "--quant_bits", "4", "--hw", "4090", "--json").stdout)
    assert qlora[0]["method"] == "qlora"
    assert hardware.resolve("H100 PCIe") == "h100-pcie" and hardware.resolve("tpu9") is None


def test_no_time_or_cost_for_a_job_that_does_not_fit(tmp_path):
    prices = tmp_path / "prices.yaml"
    prices.write_text("a10: 1.0\nh200: 4.0\n")
    plans = {p.hw: p for p in planner.estimate(MODEL, batch=16, grad_accum=1, seq_len=2048, hw="a10,h200",
                                                  prices=prices, results=RESULTS)}
    a10 = plans["a10"]
    assert a10.fit == "no" and not a10.fits and a10.time_source == "does not fit"
    assert all(getattr(a10, k) is None for k in ("step_time_s", "total_time_s", "total_hours", "cost",
                                                 "ms_per_sample", "tokens_per_s"))
    assert plans["h200"].cost is not None
    proc = _cli("--model", MODEL, "--batch", "16", "--grad-accum", "1", "--hw", "a10", "--prices", str(prices))
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if line.startswith("│ a10"))
    cells = [c.strip() for c in row.strip("│").split("│")]
    assert cells[3] == "NO" and cells[6:11] == ["-", "-", "-", "-", "-"] and cells[11] == "does not fit"
    assert "min" not in row and " h " not in row


REAL = ROOT.parent / "shared" / "reallogs"


@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/reallogs is not present")
def test_from_args_of_every_real_args_json_works_or_says_why():
    """Each real args.json (ms-swift 1.x to 4.x): a plan, or one line naming the file and why. The 1.x file names its
    model by model_type and its batch as batch_size; with --model given, its recipe is read (QLoRA, no
    checkpointing)."""
    files = sorted(REAL.glob("*.args.json"))
    assert len(files) >= 5
    for f in files:
        proc = _cli("--from-args", str(f), "--hw", "h200", "--json")
        if proc.returncode == 0:
            continue
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and str(f) in proc.stderr, proc.stderr
        assert "pass --model" in proc.stderr
    v1 = REAL / "04_modelscope_ms-swift_baichuan2-7b-chat-v3.args.json"
    proc = _cli("--from-args", str(v1))
    assert proc.returncode == 2 and "'baichuan2-7b-chat' (model_type (ms-swift 1.x" in proc.stderr
    kw = planner.args_from_run(v1, need_model=False)
    assert kw == {"method": "qlora", "max_length": 2048, "batch": 1, "grad_accum": 16, "epochs": 1, "lora_rank": 8,
                  "gradient_checkpointing": False}
    proc = _cli("--from-args", str(v1), "--model", MODEL, "--hw", "h200", "--json")
    assert proc.returncode == 0, proc.stderr
    (plan,) = json.loads(proc.stdout)
    assert (plan["method"], plan["batch"], plan["gradient_checkpointing"]) == ("qlora", 1, False)
