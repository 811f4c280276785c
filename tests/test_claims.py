"""Claims audit (issue 5): claims.yaml as data, verdicts from the installed ms-swift and from synthetic run trees
with hand-computed numbers, the launcher (memory-cap arithmetic, patches, a real in-process run), the runner."""
import json
import os
import random
import shutil
import subprocess
import sys
from types import SimpleNamespace

import pytest
import yaml

from analysis import claims
from analysis.seeds import DEFAULT_SEEDS_DIR, load_seed
from experiments import launch, recipes, runner

MIB = 2**20
H200_TOTAL = 143_771 * MIB  # ../shared/GPU-HOST.md


# ------------------------------------------------------------------------------------------ claims.yaml as data


def test_every_experiment_is_runnable_by_the_installed_swift():
    """Each claims experiment starts from a recipes.yaml recipe, and every flag it overrides is an argument of
    ms-swift 4.6.0 that its own parser accepts with that value (an unknown flag would abort the GPU run)."""
    parser = claims._sft_parser()
    fields = claims._sft_fields()
    data = claims.load()
    assert data["experiments"] and all(e["matrix"] is False for e in data["experiments"].values())
    for name, e in data["experiments"].items():
        assert e["recipe"] in recipes.experiments(matrix_only=False), name
        for flag, value in (e.get("overrides") or {}).items():
            assert flag in fields, f"{name}: --{flag} is not an ms-swift argument"
            if value is None:
                continue
            text = recipes._value(value)
            _, rest = parser.parse_known_args([f"--{flag}", *text])
            assert rest == [], f"{name}: --{flag} {text} left {rest}"
        assert set(e["launcher"]) <= claims.LAUNCHER_KEYS
        if e.get("max_steps"):
            assert e["max_steps"] >= 2
    # Searches expand into one experiment per ladder rung, with the batch as an override.
    assert claims.experiment("cap24-bs3")["overrides"]["per_device_train_batch_size"] == 3
    assert claims.experiment("cap24-bs3")["launcher"] == {"mem_cap_gib": 24, "longest_first": True}


def test_claim_sources_exist_in_the_seed_files_and_thresholds_match_them():
    seeds = {p.name: load_seed(p) for p in DEFAULT_SEEDS_DIR.glob("*.yaml")}
    data = claims.load()
    figures = {f["id"]: f for s in seeds.values() for f in s.get("figures", [])}
    for c in data["claims"]:
        assert c["rule"]["kind"] in claims.RULES
        src = c["source"]
        if src["file"] in seeds:
            ids = {x["id"] for x in seeds[src["file"]]["claims"]}
            assert src["claim"] in ids, c["id"]
            assert set(src.get("also", [])) <= ids
            assert set(src.get("figures", [])) <= set(figures), c["id"]
        for exp in c["experiments"]:
            assert claims.experiment(exp) is not None or claims.search(exp) is not None, exp
    rules = {c["id"]: c["rule"] for c in data["claims"]}
    assert rules["workers8"]["min_speedup_pct"] == figures["all.dataloader_workers8_speedup_pct_min"]["value"] == 15
    assert rules["lora-rank4"]["min_mem_saving_pct"] <= figures["all.lora_rank4_mem_saving_pct"]["value"] == 25
    assert figures["all.lora_7b_sufficient_gpu_mem_gb"]["value"] == 24


def test_plan_fits_the_device_budget():
    """Each device call (its chains side by side, one per GPU, after one set-up) fits one 10-minute command; the
    tier 1-2 calls fit the session's device budget; every runnable experiment is in some chain."""
    data = claims.load()
    calls = claims.call_estimates()
    assert all(c["est_s"] <= 590 for c in calls.values()), calls
    assert sum(c["est_s"] for c in calls.values() if min(c["tiers"]) <= 2) <= data["plan"]["budget_s"]
    # a hand check of call 1: set-up 60 + its longest lane (GPU 1 lane a: 95 + 95 + 2 probes x 60 + 65 = 375)
    assert calls[1]["lanes"] == {(0, "a"): 100 + 65 + 65 + 66 + 70, (1, "a"): 375, (1, "b"): 2 * 55 + 2 * 55}
    assert calls[1]["est_s"] == 60 + 375
    est = claims.plan_estimates()
    planned = {n for c in est for n in c["experiments"]}
    runnable = {n for n, e in data["experiments"].items() if not e.get("blocked") and "search" not in e}
    assert runnable | set(data["searches"]) == planned
    assert claims.expand(["plan:1b"]) == ["spread-s43", "spread-s44", "cap80", "rank4"]
    assert claims.plan_first_ok(["plan:best24"]) and not claims.plan_first_ok(["plan:1a"])
    assert not claims.plan_first_ok(["plan:best24", "plan:1a"])
    with pytest.raises(claims.InputError, match="unknown claims experiment"):
        claims.expand(["nope"])


def test_claims_yaml_keys_survive_yaml_1_1():
    """`on:` / `off:` would load as booleans; rules must use plain keys."""
    raw = yaml.safe_load(claims.CLAIMS_FILE.read_text())
    for c in raw["claims"]:
        assert all(isinstance(k, str) for k in c["rule"]), c["id"]


# ------------------------------------------------------------------------------ verdicts from the installed ms-swift


def test_flag_claim_is_decided_by_the_installed_swift(tmp_path):
    version = claims.swift_version()
    row = claims.claims_table(tmp_path / "none").set_index("id").loc["flags-cuda-graph-flash-attn"]
    assert row.verdict == "does not hold"
    assert f"--disable_cuda_graph: does not exist in ms-swift {version}" in row.detail
    assert f"--disable_flash_attn: does not exist in ms-swift {version}" in row.detail
    assert row.numbers == {"--disable_cuda_graph": "does not exist", "--disable_flash_attn": "does not exist",
                           "--attn_impl": "exists"}
    # The same parser `swift sft` uses leaves the unknown flags over (swift then raises remaining_argv).
    assert claims.flag_report("disable_cuda_graph", "true")["parser_accepts"] is False
    # The article's other spelling advice: --torch_dtype bf16 is not a choice; bfloat16 is.
    assert claims.flag_report("torch_dtype", "bf16")["parser_accepts"] is False
    assert claims.flag_report("torch_dtype", "bfloat16")["parser_accepts"] is True
    assert claims.flag_report("gradient_checkpointing")["default"] is True
    assert claims.flag_report("group_by_length")["exists"] and claims.flag_report("use_liger_kernel")["exists"]


def test_padding_free_and_packing_need_flash_attention_in_this_swift(tmp_path):
    rep = claims.padding_free_report(["padding_free", "packing"], "sdpa")
    assert not rep["padding_free"]["allowed"] and "flash attention" in rep["padding_free"]["message"]
    assert not rep["packing"]["allowed"]
    assert claims.padding_free_report(["padding_free"], "flash_attention_2")["padding_free"]["allowed"]
    row = claims.claims_table(tmp_path / "none").set_index("id").loc["padding-free-packing"]
    if not rep["flash_attn_importable"]:
        assert row.verdict == "cannot be tested here" and "--padding_free" in row.detail
    for name in ("tp-padding-free", "tp-packing"):
        assert claims.experiment(name)["blocked"]


def test_qlora_package_part_says_what_was_found(tmp_path):
    row = claims.claims_table(tmp_path / "none").set_index("id").loc["qlora-7b-24gb"]
    rec = next(c for c in claims.load()["claims"] if c["id"] == "qlora-7b-24gb")["package_check"]
    assert rec["name"] == "bitsandbytes" and "cuda130" in rec["kernels"] and rec["file"].endswith(".whl")
    # the wheelhouse pins (and slims) bitsandbytes now: the QLoRA run is possible, just not made yet
    assert claims._shipped_version("bitsandbytes") == "0.50.2"
    assert row.verdict == "not run yet" and "in the GPU wheelhouse" in row.detail
    assert row.numbers["package_importable_here"] is (claims.importlib.util.find_spec("bitsandbytes") is not None)
    assert claims._shipped_version("no-such-package") is None


def test_unrun_claims_name_their_planned_experiments(tmp_path):
    df = claims.claims_table(tmp_path / "none").set_index("id")
    assert set(df.verdict) <= set(claims.VERDICTS)
    assert df.loc["lora-rank4"].verdict == "not run yet"
    assert "workers4, rank4" in df.loc["lora-rank4"].detail and "GPU min" in df.loc["lora-rank4"].detail
    assert "already defaults to true" in df.loc["gradient-checkpointing"].detail
    assert df.loc["convergence-spread"].numbers["published_spread"] == pytest.approx(0.065)


# ---------------------------------------------------------------------------- verdicts from synthetic run trees


def _write_run(root, exp, *, lines, args, status="ok", reason=None, dummy=True, profile=None, run_id="20261201-000000"):
    """A run folder as the runner leaves it, with a run.json key equal to what the runner computes."""
    spec = runner.RunSpec(hw="h200", experiment=exp, model="dummy", data=".data")
    run = root / "h200" / exp / run_id
    run.mkdir(parents=True)
    if lines is not None:
        (run / "logging.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        (run / "args.json").write_text(json.dumps(args))
    (run / "env.json").write_text(json.dumps({"hw": "h200", "gpu_name": "NVIDIA H200",
                                              "packages": {"ms-swift": "4.6.0"}}))
    (run / "run.json").write_text(json.dumps({"status": status, "reason": reason, "experiment": exp,
                                              "key": spec.key(), "dummy_weights": dummy, "offline_data": True}))
    if profile is not None:
        (run / "profile.json").write_text(json.dumps(profile))
    return run


def _fixture_run(fixtures, *, lora_rank, peak, eval_delta=0.0):
    """The H200 bs16 fixture log with a given LoRA rank, every memory value set to PEAK, final eval loss moved."""
    args = json.loads((fixtures / "h200_bs16" / "args.json").read_text())
    args["lora_rank"] = lora_rank
    lines = [json.loads(x) for x in (fixtures / "h200_bs16" / "logging.jsonl").read_text().splitlines() if x.strip()]
    evals = [i for i, x in enumerate(lines) if "eval_loss" in x]
    for x in lines:
        if "memory(GiB)" in x:
            x["memory(GiB)"] = peak
        if "log_history" in x:
            x["memory"] = peak
    lines[evals[-1]]["eval_loss"] += eval_delta
    return lines, args


def _synthetic(steps, step_s, peak, eval_loss, *, slow=(), jitter=0.01, seed=0, bs=16, ga=1):
    """A 4.x log with a known step time: cumulative train_speed(s/it) = elapsed / step, as ms-swift writes it."""
    rng = random.Random(seed)
    t, lines = 0.0, []
    for s in range(1, steps + 1):
        t += step_s * (1 + rng.uniform(-jitter, jitter)) * (3 if s in slow else 1)
        lines.append({"loss": 12 - 0.01 * s, "token_acc": 0.0, "global_step/max_steps": f"{s}/{steps}",
                      "elapsed_time": f"{round(t)}s", "memory(GiB)": peak, "train_speed(s/it)": round(t / s, 6)})
    lines.append({"eval_loss": eval_loss, "eval_token_acc": 0.01, "global_step/max_steps": f"{steps}/{steps}",
                  "memory(GiB)": peak, "train_speed(s/it)": round(t / steps, 6)})
    lines.append({"model_parameter_info": "PeftModelForCausalLM: 7635.8016M Params (20.1851M Trainable [0.2643%])",
                  "train_dataset": "127.739422±104.564840, min=29.000000, max=593.000000, size=1489",
                  "global_step": steps, "log_history": [], "memory": peak})
    args = {"per_device_train_batch_size": bs, "gradient_accumulation_steps": ga, "max_steps": steps,
            "logging_steps": 1, "eval_steps": 50, "save_steps": 50, "eval_strategy": "steps",
            "save_strategy": "steps", "swift_version": "4.6.0", "num_train_epochs": 1}
    return lines, args


def test_rank4_verdict_on_fixture_runs(tmp_path, fixtures):
    # 17.68 -> 17.53 GiB: (17.68 - 17.53) / 17.68 = 0.848 % saved, far from the claimed 25 %.
    root = tmp_path / "results"
    for exp, rank, peak in (("workers4", 8, 17.68), ("rank4", 4, 17.53)):
        lines, args = _fixture_run(fixtures, lora_rank=rank, peak=peak, eval_delta=0.015 if rank == 4 else 0.0)
        _write_run(root, exp, lines=lines, args=args)
    row = claims.claims_table(root).set_index("id").loc["lora-rank4"]
    assert row.verdict == "does not hold" and row.hw == "h200"
    assert row.numbers["mem_saving_pct"] == pytest.approx(0.85, abs=0.005)
    assert row.numbers["loss_increase"] == pytest.approx(0.015, abs=1e-6)
    assert "dummy weights" in row.detail and len(row.runs) == 2


def test_rank4_verdict_holds_with_real_weights_and_a_big_saving(tmp_path, fixtures):
    # 20.00 -> 14.00 GiB is 30 % saved (>= 20 %), and +0.01 loss (<= 0.03) on real weights: holds.
    root = tmp_path / "results"
    for exp, rank, peak in (("workers4", 8, 20.0), ("rank4", 4, 14.0)):
        lines, args = _fixture_run(fixtures, lora_rank=rank, peak=peak, eval_delta=0.01 if rank == 4 else 0.0)
        _write_run(root, exp, lines=lines, args=args, dummy=False)
    row = claims.claims_table(root).set_index("id").loc["lora-rank4"]
    assert row.verdict == "holds"
    assert row.numbers["mem_saving_pct"] == pytest.approx(30.0)


def test_runs_of_another_definition_are_not_used(tmp_path, fixtures):
    root = tmp_path / "results"
    lines, args = _fixture_run(fixtures, lora_rank=4, peak=10.0)
    run = _write_run(root, "rank4", lines=lines, args=args)
    status = json.loads((run / "run.json").read_text())
    status["key"]["overrides"]["lora_rank"] = 2  # made before the definition changed
    (run / "run.json").write_text(json.dumps(status))
    lines, args = _fixture_run(fixtures, lora_rank=8, peak=20.0)
    _write_run(root, "workers4", lines=lines, args=args)
    assert claims.claims_table(root).set_index("id").loc["lora-rank4"].verdict == "not run yet"


def test_capacity_verdicts(tmp_path):
    """cap24: bs 2 trains (22.1 GiB), bs 3 OOMs; cap40: bs 6 trains, bs 8 OOMs; cap80: only bs 16 ran."""
    root = tmp_path / "results"
    for exp, peak in (("cap24-bs2", 22.1), ("cap40-bs6", 37.0), ("cap80-bs16", 61.0)):
        lines, args = _synthetic(3, 1.0, peak, 11.0, bs=int(exp.rsplit("bs", 1)[1]))
        _write_run(root, exp, lines=lines, args=args)
    for exp in ("cap24-bs3", "cap40-bs8"):
        _write_run(root, exp, lines=None, args=None, status="failed", reason="OOM: CUDA out of memory")
    df = claims.claims_table(root).set_index("id")
    row = df.loc["lora-7b-24gb"]
    assert row.verdict == "holds"
    assert row.numbers["max_bs_cap24"] == 2 and row.numbers["oom_bs_cap24"] == 3
    assert row.numbers["max_bs_cap40"] == 6 and row.numbers["oom_bs_cap40"] == 8
    assert row.numbers["max_bs_cap80"] == 16 and row.numbers["oom_bs_cap80"] is None
    assert "24 GiB: bs 2 trains (22.1 GiB), bs 3 OOMs" in row.detail and "not finished" in row.detail
    assert len(row.runs) == 5
    half = df.loc["lora-half-48gb"]
    assert half.verdict == "does not hold" and "24 GiB cap" in half.detail
    assert df.loc["batch-from-memory-controller"].verdict == "does not hold"  # 2 -> 6 with capacity alone


def test_probe_search_order():
    # cap24 starts at 4: ok -> 6; 6 OOM -> done.
    assert claims.next_probe("cap24", {}) == 4
    assert claims.next_probe("cap24", {4: "ok"}) == 6
    assert claims.next_probe("cap24", {4: "ok", 6: "oom"}) is None
    # start OOMs: go down the ladder until something trains.
    assert claims.next_probe("cap40", {16: "oom"}) == 12
    assert claims.next_probe("cap40", {16: "oom", 12: "ok"}) is None
    assert claims.next_probe("cap80", {64: "ok", 96: "ok"}) is None  # top of the ladder
    assert claims.next_probe("cap24", {2: "oom", 1: "oom"}) is None  # even bs 1 OOMs


def _throughput_tree(root, recipe_loss=10.03, recipe_step=0.75, seeds=(10.00, 10.02, 10.05)):
    for i, (exp, loss) in enumerate(zip(("spread-s42", "spread-s43", "spread-s44"), seeds)):
        lines, args = _synthetic(20, 0.90, 75.8, loss, slow=(19, 20), seed=i)
        prof = {"device": "cuda", "steps": [{"step": 19, "wall_s": 2.7, "gpu_busy_frac": 0.95},
                                            {"step": 20, "wall_s": 2.7, "gpu_busy_frac": 0.93}]}
        _write_run(root, exp, lines=lines, args=args, profile=prof)
    lines, args = _synthetic(20, recipe_step, 60.0, recipe_loss, slow=(19, 20), seed=9, bs=8, ga=2)
    _write_run(root, "tp-bs8", lines=lines, args=args,
               profile={"device": "cuda", "steps": [{"step": 19, "gpu_busy_frac": 0.9}, {"step": 20}]})


def test_recipe_verdict_speed_and_seed_band(tmp_path):
    # Baseline 0.90 s/step, recipe 0.75 s/step: speed-up 0.90 / 0.75 - 1 = 20 % (+- jitter of 1 %).
    # Seeds 10.00 / 10.02 / 10.05: mean 10.0233, range 0.05; recipe 10.03 deviates 0.0067 <= 0.05: counts.
    root = tmp_path / "results"
    _throughput_tree(root)
    df = claims.claims_table(root).set_index("id")
    row = df.loc["tp-bs8"]
    assert row.verdict == "holds"
    assert row.numbers["speedup_pct"] == pytest.approx(20.0, abs=2.5)
    assert row.numbers["speedup_pct_low"] > 0
    assert row.numbers["seed_range"] == pytest.approx(0.05) and row.numbers["loss_dev_from_seed_mean"] == \
        pytest.approx(0.0067, abs=1e-4)
    # The profiled (3x slower) steps 19-20 are left out: 20 points -> 19 intervals - first - 2 profiled = 16.
    base = claims.runs_by_experiment(root)["spread-s42"][0]
    st = claims.step_stats(base)
    assert st["n_intervals"] == 16 and st["median"] == pytest.approx(0.90, rel=0.02)
    assert st["ci95_high"] < 0.95
    spread = df.loc["convergence-spread"]
    assert spread.verdict == "cannot be tested here"  # dummy weights
    assert spread.numbers["seed_range"] == pytest.approx(0.05) and spread.numbers["published_spread"] == \
        pytest.approx(0.065)
    bound = df.loc["gpu-bound-bs16"]
    assert bound.verdict == "holds" and bound.numbers["gpu_busy_frac"] == pytest.approx(0.94)


def test_recipe_outside_the_seed_band_does_not_count(tmp_path):
    root = tmp_path / "results"
    _throughput_tree(root, recipe_loss=10.2)  # |10.2 - 10.0233| = 0.177 > 0.05
    row = claims.claims_table(root).set_index("id").loc["tp-bs8"]
    assert row.verdict == "does not hold" and "OUTSIDE the seed band" in row.detail


def test_combo_takes_the_recipes_that_helped(tmp_path):
    root = tmp_path / "results"
    _throughput_tree(root)
    combo = claims.resolve_combo("tp-combo", root)
    assert combo["used"] == ["tp-bs8"]
    assert combo["overrides"]["per_device_train_batch_size"] == 8 and combo["overrides"]["logging_steps"] == 1
    assert "not run yet" in combo["reason"]
    assert claims.resolve_combo("tp-combo", tmp_path / "empty")["overrides"] is None


def test_combo_carries_the_launcher_options_its_recipes_train_with(tmp_path):
    # tp-pf (0.60 s/step: +50 %) beats tp-bs8 (0.75 s/step: +20 %) over the 0.90 s/step baseline. tp-pf only
    # trains with the launcher's --sdpa-padding-free (ms-swift refuses --padding_free with SDPA otherwise): the
    # combination must carry it, while the stop and profiler options stay tp-combo's own.
    root = tmp_path / "results"
    _throughput_tree(root)
    lines, args = _synthetic(20, 0.60, 40.0, 10.03, seed=7)
    _write_run(root, "tp-pf", lines=lines, args=args)
    combo = claims.resolve_combo("tp-combo", root)
    assert combo["used"] == ["tp-pf", "tp-bs8"]
    assert combo["overrides"]["padding_free"] is True and combo["overrides"]["per_device_train_batch_size"] == 8
    assert combo["launcher"] == {"sdpa_padding_free": True, **claims.experiment("tp-combo")["launcher"]}
    spec = runner.RunSpec(hw="h200", experiment="tp-combo", model="dummy", data=".data",
                          overrides=combo["overrides"], launcher=combo["launcher"])
    assert "--sdpa-padding-free" in launch.option_argv(spec.launcher)


def test_gc_tradeoff_with_an_oom(tmp_path):
    root = tmp_path / "results"
    lines, args = _synthetic(20, 0.9, 75.8, 10.0)
    _write_run(root, "spread-s42", lines=lines, args=args)
    _write_run(root, "tp-nogc", lines=None, args=None, status="failed", reason="OOM: CUDA out of memory")
    row = claims.claims_table(root).set_index("id").loc["gradient-checkpointing"]
    assert row.verdict == "holds" and "OOMed" in row.detail and "defaults to true" in row.detail


# ------------------------------------------------------------------------------------------------- launcher


def test_memory_fraction_arithmetic():
    # 24 GiB of the H200's 143,771 MiB: 24 * 1024 / 143771 = 0.170939...
    assert launch.memory_fraction(24, H200_TOTAL) == pytest.approx(24 * 1024 / 143_771)
    assert launch.memory_fraction(80, H200_TOTAL) == pytest.approx(0.569795, abs=1e-6)  # 81920 / 143771
    assert launch.memory_fraction(200, H200_TOTAL) == 1.0
    with pytest.raises(ValueError):
        launch.memory_fraction(0, H200_TOTAL)


class _FakeCuda:
    def __init__(self, available=True, total=H200_TOTAL):
        self.available, self.total, self.calls = available, total, []

    def is_available(self):
        return self.available

    def get_device_properties(self, device):
        return SimpleNamespace(total_memory=self.total)

    def get_device_name(self, device):
        return "NVIDIA H200"

    def set_per_process_memory_fraction(self, fraction, device):
        self.calls.append((fraction, device))


def test_memory_cap_is_applied_to_this_process_only(capsys):
    cuda = _FakeCuda()
    info = launch.apply_memory_cap(40, SimpleNamespace(cuda=cuda), device=0)
    assert cuda.calls == [(pytest.approx(40 * 1024 / 143_771), 0)]
    assert info["applied"] and info["cap_bytes"] <= 40 * 2**30 and info["total_gib"] == pytest.approx(140.4, abs=0.1)
    none = _FakeCuda(available=False)
    info = launch.apply_memory_cap(24, SimpleNamespace(cuda=none))
    assert not info["applied"] and none.calls == [] and "no CUDA device" in capsys.readouterr().out
    big = _FakeCuda()
    assert not launch.apply_memory_cap(150, SimpleNamespace(cuda=big), device=0)["applied"] and big.calls == []


def test_launcher_arguments():
    opts, swift = launch.parse(["--mem-cap-gib", "24", "--longest-first", "--profile-steps", "2", "--",
                                "swift", "sft", "--output_dir", "/r/x", "--lora_rank", "4"])
    assert opts.mem_cap_gib == 24 and opts.longest_first and opts.profile_steps == 2 and opts.profile_skip == 1
    assert swift == ["--output_dir", "/r/x", "--lora_rank", "4"]
    assert launch.swift_flag(swift, "output_dir") == "/r/x"
    for bad in (["--mem-cap-gib", "24"], ["--", ], ["--mem-cap-gib", "-1", "--", "--x"]):
        with pytest.raises(SystemExit):
            launch.parse(bad)
    d = {"mem_cap_gib": 40, "profile_steps": 2, "profile_skip": 18, "longest_first": True, "pad_to": 2048}
    opts, _ = launch.parse(launch.option_argv(d) + ["--", "--x", "1"])
    assert (opts.mem_cap_gib, opts.profile_steps, opts.profile_skip, opts.longest_first, opts.pad_to) == \
        (40, 2, 18, True, 2048)
    assert launch.option_argv({}) == []


def test_gpu_busy_union_and_longest_first_order():
    assert launch.union_ns([(0, 10), (5, 15), (20, 30), (25, 26), (40, 40)]) == 25
    lengths = [5, 50, 7, 40, 9, 60, 1]
    batches = [[0, 1], [2, 3], [4, 5], [6]]
    out = launch.longest_first_order(batches, lengths, 2)
    assert out[0] == [5, 1] and [len(b) for b in out] == [2, 2, 2, 1]
    assert sorted(i for b in out for i in b) == list(range(7))


def test_launcher_patches_sampler_and_collator(monkeypatch):
    """The real ms-swift classes: the first batch of the epoch holds the longest samples; padding_to reaches the
    collator; extra callbacks reach the trainer. (Patches are undone by monkeypatch.)"""
    from swift.dataloader import BatchSamplerShard
    from swift.trainers.mixin import DataLoaderMixin, SwiftMixin

    for cls, name in ((BatchSamplerShard, "__iter__"), (DataLoaderMixin, "get_train_dataloader"),
                      (SwiftMixin, "_get_data_collator"), (SwiftMixin, "_get_callbacks")):
        monkeypatch.setattr(cls, name, getattr(cls, name))
    record, marker = {}, object()
    opts = SimpleNamespace(longest_first=True, pad_to=2048)
    launch.install_patches(opts, record, [marker])
    sampler = BatchSamplerShard(10, batch_size=3, shuffle=True, drop_last=False, data_seed=42)
    lengths = [10, 3, 99, 4, 98, 5, 6, 97, 7, 8]
    plain = list(sampler)
    sampler._swiftbench_lengths = lengths
    first = list(sampler)
    assert sorted(first[0]) == [2, 4, 7] and [len(b) for b in first] == [len(b) for b in plain]
    assert record["longest_first"]["first_batch_lengths"] == [99, 98, 97]
    assert list(sampler) == plain  # later epochs keep ms-swift's order
    seen = {}
    template = SimpleNamespace(data_collator=lambda batch, padding_to=None: seen.setdefault("padding_to", padding_to))
    SwiftMixin._get_data_collator(None, None, template)([])
    assert seen["padding_to"] == 2048
    trainer = SimpleNamespace()
    assert SwiftMixin._get_callbacks(trainer, SimpleNamespace(callbacks=[]))[-1] is marker


def _tiny_inputs(tmp_path):
    from experiments import localdata

    model, _, _ = runner.resolve_model(runner.DUMMY_TINY, "cpu")
    data = tmp_path / "data"
    localdata.make_tiny_local_data(data, n=12)
    local = localdata.prepare_local_data(str(data), tmp_path / "prep", "swift-robot", "swift")
    return model, data, localdata.dataset_args(recipes.flags("seed")["dataset"], local)


@pytest.mark.slow
def test_launcher_trains_the_tiny_model_in_process(tmp_path):
    model, _, datasets = _tiny_inputs(tmp_path)
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "experiments.launch", "--mem-cap-gib", "24", "--longest-first", "--pad-to", "256",
           "--profile-steps", "1", "--profile-skip", "1", "--stop-after", "2", "--", "swift", "sft", "--model", model,
           "--tuner_type", "lora", "--dataset", *datasets, "--torch_dtype", "float32", "--max_steps", "3",
           "--per_device_train_batch_size", "2", "--gradient_accumulation_steps", "2", "--logging_steps", "1",
           "--eval_steps", "50", "--output_dir", str(out), "--add_version", "false", "--check_model", "false",
           "--split_dataset_ratio", "0.05", "--dataloader_num_workers", "0"]
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "MODELSCOPE_OFFLINE": "1", "PYTHONPATH": str(runner.ROOT)}
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "--mem-cap-gib 24 is not applied" in p.stdout
    from analysis.metrics import parse_path

    m = parse_path(out)[0]
    assert m["complete"] and m["global_steps"] == 2 and m["final_eval_loss"] is not None
    # --stop-after 2 of a 3-step schedule: the learning rate follows the 3-step schedule, eval at the stop
    lines = [json.loads(x) for x in (out / "logging.jsonl").read_text().splitlines()]
    train = [x for x in lines if "loss" in x and "eval_loss" not in x]
    assert [x["global_step/max_steps"] for x in train] == ["1/3", "2/3"]
    assert [x["learning_rate"] for x in train] == pytest.approx([7.5e-05, 2.5e-05])  # warm-up 0, cosine over 3
    assert [x["global_step/max_steps"] for x in lines if "eval_loss" in x] == ["2/3"]
    # tokens.jsonl: one line per optimizer step; padded = 2 micro-batches x 2 samples x 256 (--pad-to 256)
    tok = [json.loads(x) for x in (out / "tokens.jsonl").read_text().splitlines()]
    assert [t["step"] for t in tok] == [1, 2] and all(t["micro_batches"] == 2 for t in tok)
    assert all(t["padded_tokens"] == 2 * 2 * 256 for t in tok)
    assert all(t["label_tokens"] < t["tokens"] < t["padded_tokens"] for t in tok)
    info = json.loads((out / "launch.json").read_text())
    assert info["returncode"] == 0 and info["fast_exit"] and info["pad_to"] == 256
    assert info["mem_cap"] == {"requested_gib": 24.0, "applied": False, "reason": "no CUDA device in this process"}
    lf = info["longest_first"]
    assert lf["applied"] and len(lf["first_batch"]) == 2 and min(lf["first_batch_lengths"]) == lf["longest_in_data"]
    # the first micro-batch holds the two longest samples, the second two others of at least the shortest length
    shortest = 50  # tiny fixture data's shortest encoded sample (stdout's train_dataset line says min=50)
    assert tok[0]["tokens"] >= sum(lf["first_batch_lengths"]) + 2 * shortest
    assert info["stop_after"] == {"step": 2, "stopped": True, "at_step": 2, "max_steps": 3}
    prof = json.loads((out / "profile.json").read_text())
    assert [s["step"] for s in prof["steps"]] == [2] and prof["device"] == "cpu"
    assert prof["steps"][0]["wall_s"] > 0 and prof["steps"][0]["host_events"] > 0
    assert prof["steps"][0]["gpu_busy_frac"] is None


# --------------------------------------------------------------------------------------------------- runner


def test_runspec_resolves_claims_experiments_and_keeps_matrix_keys():
    spec = runner.RunSpec(hw="h200", experiment="rank4")
    assert spec.recipe == "seed" and spec.launcher == {"longest_first": True, "stop_after": 2}
    assert spec.max_steps is None  # a prefix of the full schedule (stop_after), not a shortened one
    assert spec.overrides == {"logging_steps": 1, "lora_rank": 4}
    key = spec.key()
    assert key["launcher"] == {"longest_first": True, "stop_after": 2} and key["recipe_name"] == "seed"
    assert key["recipe"] == recipes.recipe_hash("seed")
    # CLI values win; re-resolving a resolved spec (as the notebook does) changes nothing.
    cli = runner.RunSpec(hw="h200", experiment="rank4", max_steps=5, overrides={"lora_rank": 2})
    assert cli.max_steps == 5 and cli.overrides["lora_rank"] == 2
    again = runner.RunSpec(hw="h200", experiment="rank4", max_steps=spec.max_steps, overrides=spec.overrides,
                           timeout_s=spec.timeout_s)
    assert again.key() == key
    # Matrix experiments: the same key as before claims existed (old run.json files still match).
    assert set(runner.RunSpec(hw="h200", experiment="seed").key()) == {"experiment", "recipe", "model", "data",
                                                                       "max_steps", "overrides"}


def test_prepare_renders_the_launcher_command(tmp_path):
    model, data, _ = _tiny_inputs(tmp_path)
    spec = runner.RunSpec(hw="cpu", experiment="cap24-bs4", model=runner.DUMMY_TINY, data=str(data),
                          results_dir=str(tmp_path / "results"))
    run_dir = runner.new_run_dir(spec)
    ctx = runner.prepare(spec, run_dir)
    la = ctx["launch_argv"]
    assert la[:3] == [sys.executable, "-m", "experiments.launch"]
    assert la[3:la.index("--")] == ["--mem-cap-gib", "24", "--longest-first"]
    swift = la[la.index("--") + 1:]
    assert swift[:2] == ["swift", "sft"] and swift == ctx["argv"]
    assert swift[swift.index("--per_device_train_batch_size") + 1] == "4"
    assert swift[swift.index("--gradient_accumulation_steps") + 1] == "1"
    assert swift[swift.index("--max_steps") + 1] == "2"
    sh = (run_dir / "command.sh").read_text()
    assert "python -m experiments.launch --mem-cap-gib 24 --longest-first -- swift sft \\\n  --model" in sh
    assert "# --per_device_train_batch_size 4: claims experiment cap24-bs4" in sh
    status = json.loads((run_dir / "run.json").read_text())
    assert status["command"] == ctx["argv"] and status["launch_command"] == la
    assert status["key"]["launcher"] == {"mem_cap_gib": 24, "longest_first": True}


def test_the_notebook_runs_the_spec_the_runner_resolved(tmp_path, monkeypatch):
    """A resolved combination's launcher (tp-combo + --sdpa-padding-free) must reach the notebook's RunSpec: twice on
    2026-11-30 the notebook rebuilt the spec from the experiment's definition and the combination crashed in ms-swift.
    The notebook's parameter cell and spec cell run here in-process, with papermill's parameters injected."""
    import papermill as pm

    captured = {}
    monkeypatch.setattr(pm, "execute_notebook", lambda *a, **k: captured.update(k["parameters"]))
    launcher = {"sdpa_padding_free": True, "stop_after": 46, "profile_steps": 2, "profile_skip": 40}
    spec = runner.RunSpec(hw="h200", experiment="tp-combo", model="dummy", data=".data",
                          overrides={"padding_free": True, "attn_impl": "sdpa"}, launcher=launcher)
    runner.run_notebook(spec, tmp_path / "run", progress=False)
    assert json.loads(captured["launcher_json"]) == launcher
    cells = json.loads(runner.NOTEBOOK.read_text())["cells"]
    params = next(c for c in cells if "parameters" in (c.get("metadata", {}).get("tags") or []))
    spec_cell = next(c for c in cells if "runner.RunSpec(" in "".join(c["source"]))
    seen = {}

    class Stop(Exception):
        pass

    def fake_prepare(s, path):
        seen["spec"] = s
        raise Stop

    monkeypatch.setattr(runner, "prepare", fake_prepare)
    ns: dict = {}
    exec("".join(params["source"]), ns)
    ns.update(captured)  # what papermill injects after the parameters cell
    with pytest.raises(Stop):
        exec("".join(spec_cell["source"]), ns)
    assert seen["spec"].launcher == launcher and seen["spec"].overrides["padding_free"] is True
    # without a launcher the notebook falls back to the definition's (plain tp-pf keeps its own)
    captured.clear()
    runner.run_notebook(runner.RunSpec(hw="h200", experiment="tp-pf", model="dummy", data=".data"), tmp_path / "r2",
                        progress=False)
    ns = {}
    exec("".join(params["source"]), ns)
    ns.update({**captured, "launcher_json": ""})
    with pytest.raises(Stop):
        exec("".join(spec_cell["source"]), ns)
    assert seen["spec"].launcher == claims.experiment("tp-pf")["launcher"]


def test_run_claims_blocks_what_cannot_run_here(tmp_path):
    res = runner.run_claims("cpu", ["cap24", "tp-padding-free", "tp-combo"], progress=False,
                            results_dir=str(tmp_path))
    assert [r["status"] for r in res] == ["blocked"] * 3
    assert "CUDA" in res[0]["reason"] and "flash" in res[1]["reason"] and "run these first" in res[2]["reason"]
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
def test_run_all_claims_through_the_launcher_on_cpu(tmp_path):
    """A claims experiment end to end: run-all --claims, the notebook, the launcher, a real tiny swift sft."""
    from experiments.localdata import make_tiny_local_data

    data = tmp_path / "data"
    make_tiny_local_data(data, n=12)
    results = tmp_path / "results"
    cmd = [sys.executable, "-m", "experiments.runner", "run-all", "--hw", "cpu", "--model", "dummy:tiny",
           "--data", str(data), "--results", str(results), "--claims", "--experiments", "rank4", "--no-progress"]
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    (run_dir,) = list((results / "cpu" / "rank4").iterdir())
    status = json.loads((run_dir / "run.json").read_text())
    assert status["status"] == "ok" and status["key"]["launcher"] == {"longest_first": True, "stop_after": 2}
    assert status["launch_command"][1:6] == ["-m", "experiments.launch", "--longest-first", "--stop-after", "2"]
    assert "cut run (stopped after step 2 of the full schedule)" in claims.runs_by_experiment(
        results, hw="cpu")["rank4"][0]["labels"]
    assert (run_dir / "tokens.jsonl").is_file() and not (run_dir / "val_dataset.jsonl").exists()
    assert status["command"][:2] == ["swift", "sft"]
    assert (run_dir / "launch.json").is_file() and not list(run_dir.glob("checkpoint-*"))
    assert json.loads((run_dir / "launch.json").read_text())["longest_first"]["applied"]
    rows = claims.runs_by_experiment(results, hw="cpu")
    assert [r["path"] for r in rows["rank4"]] == [str(run_dir)]
    df = claims.claims_table(results).set_index("id")
    assert df.loc["lora-rank4"].verdict == "not run yet" and df.loc["lora-rank4"].hw == "cpu"  # workers4 missing
    second = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert second.returncode == 0 and "skip" in second.stderr
    assert len(list((results / "cpu" / "rank4").iterdir())) == 1
    shutil.rmtree(results)


@pytest.mark.slow
def test_sdpa_padding_free_trains_the_same_batches_as_padding(tmp_path):
    """--sdpa-padding-free: ms-swift packs each batch into one row; transformers' SDPA path builds a block-diagonal
    causal mask from the position_ids, so the first steps' losses equal the padded run's (same batches, float32)."""
    model, _, datasets = _tiny_inputs(tmp_path)
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "MODELSCOPE_OFFLINE": "1", "PYTHONPATH": str(runner.ROOT)}
    losses, toks = {}, {}
    for name, extra, launch_opts in (("padded", [], []),
                                      ("free", ["--padding_free", "true", "--attn_impl", "sdpa"],
                                       ["--sdpa-padding-free"])):
        out = tmp_path / name
        cmd = [sys.executable, "-m", "experiments.launch", *launch_opts, "--", "swift", "sft", "--model", model,
               "--tuner_type", "lora", "--dataset", *datasets, "--torch_dtype", "float32", "--max_steps", "3",
               "--per_device_train_batch_size", "4", "--gradient_accumulation_steps", "1", "--logging_steps", "1",
               "--output_dir", str(out), "--add_version", "false", "--check_model", "false", "--lora_dropout", "0",
               "--split_dataset_ratio", "0.05", "--dataloader_num_workers", "0", "--eval_steps", "50", *extra]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        lines = [json.loads(x) for x in (out / "logging.jsonl").read_text().splitlines()]
        losses[name] = [x["loss"] for x in lines if "loss" in x and "eval_loss" not in x]
        toks[name] = [json.loads(x) for x in (out / "tokens.jsonl").read_text().splitlines()]
    info = json.loads((tmp_path / "free" / "launch.json").read_text())
    assert info["sdpa_padding_free"]["applied"]
    assert len(losses["free"]) == len(losses["padded"]) == 3
    assert losses["free"] == pytest.approx(losses["padded"], abs=2e-4)
    # the same real tokens per step; packed rows carry no padding at all
    assert [t["tokens"] for t in toks["free"]] == [t["tokens"] for t in toks["padded"]]
    assert all(t["padded_tokens"] == t["tokens"] for t in toks["free"])
    assert all(t["padded_tokens"] > t["tokens"] for t in toks["padded"])


def test_sdpa_padding_free_patch_accepts_sdpa_only(monkeypatch):
    """ms-swift refuses padding_free without flash attention; the launcher's patch lets SDPA/eager through (the
    packed-sequence masks of transformers exist) and leaves every other case to ms-swift's own check."""
    from swift.arguments import SftArguments

    monkeypatch.setattr(SftArguments, "_check_padding_free", SftArguments._check_padding_free)
    probe = SimpleNamespace(padding_free=True, packing=False, attn_impl="sdpa")
    with pytest.raises(ValueError, match="flash attention"):
        SftArguments._check_padding_free(probe)
    info = launch.allow_sdpa_padding_free()
    assert info["applied"] and "find_packed_sequence_indices" in info["why"]
    SftArguments._check_padding_free(probe)  # accepted now
    packing = SimpleNamespace(padding_free=False, packing=True, attn_impl=None)
    SftArguments._check_padding_free(packing)
    assert packing.padding_free is True  # packing implies padding_free, as in ms-swift
    with pytest.raises(ValueError, match="flash attention"):
        SftArguments._check_padding_free(SimpleNamespace(padding_free=True, packing=False, attn_impl="flex_attention"))


# ------------------------------------------------------------------- measured tokens, peaks at a step, best recipes


def _tokens(run, per_step):
    (run / "tokens.jsonl").write_text("".join(
        json.dumps({"step": s, "micro_batches": 1, "tokens": t, "padded_tokens": t, "label_tokens": t // 2}) + "\n"
        for s, t in per_step.items()))


def test_throughput_counts_the_measured_tokens_of_the_steady_steps(tmp_path):
    """20 steps of exactly 1 s; odd steps hold 1,000 tokens, even steps 3,000. Steady intervals: 2->3 .. 19->20
    (1->2 is the first), 18 s and 9 x 1,000 + 9 x 3,000 = 36,000 tokens: 2,000 tokens/s. Without tokens.jsonl the
    data's mean length (127.739 x 16 samples per step) gives 2,043.8 tokens/s instead."""
    root = tmp_path / "results"
    lines, args = _synthetic(20, 1.0, 30.0, 10.0, jitter=0.0)
    run = _write_run(root, "tp-pf", lines=lines, args=args)
    row = claims.runs_by_experiment(root)["tp-pf"][0]
    est = claims.throughput(row)
    assert est["source"] == "mean length x samples per step"
    assert est["tokens_per_s"] == pytest.approx(127.739422 * 16, rel=1e-3)
    _tokens(run, {s: 1000 if s % 2 else 3000 for s in range(1, 21)})
    got = claims.throughput(row)
    assert got["source"] == "tokens.jsonl" and got["steady_steps"] == 18
    assert got["tokens_per_s"] == pytest.approx(2000.0, rel=1e-3)
    assert got["tokens_per_step"] == pytest.approx(2000.0)
    assert got["low"] < 2000 < got["high"]  # per-interval ratios are 1,000 or 3,000: the bootstrap spreads them
    # a profiled step is left out with its tokens: mark 20 as profiled -> 17 intervals, 8 x 3,000 + 9 x 1,000
    (run / "profile.json").write_text(json.dumps({"device": "cuda", "steps": [{"step": 20, "gpu_busy_frac": 0.5}]}))
    got = claims.throughput(row)
    assert got["steady_steps"] == 17 and got["tokens_per_s"] == pytest.approx(33000 / 17, rel=1e-3)


def test_peaks_are_compared_at_the_common_step(tmp_path):
    """memory(GiB) is ms-swift's running maximum: A (46 steps) grows 10 -> 55 GiB, B (23 steps) stays at 40.
    At B's last step A had reached 10 + 22 = 32 GiB, not its final 55."""
    root = tmp_path / "results"
    la, aa = _synthetic(46, 1.0, 0.0, 10.0)
    for i, x in enumerate(la[:46]):
        x["memory(GiB)"] = 10.0 + i
    lb, ab = _synthetic(23, 1.0, 40.0, 10.0)
    _write_run(root, "spread-s42", lines=la, args=aa)
    _write_run(root, "tp-nogc", lines=lb, args=ab)
    runs = claims.runs_by_experiment(root)
    ra, rb = runs["spread-s42"][0], runs["tp-nogc"][0]
    assert claims.peak_at(ra, None) == 55.0 and claims.peak_at(ra, 23) == 32.0
    assert claims.common_peaks(ra, rb) == (32.0, 40.0, 23)


def test_best_recipe_target_and_class_verdicts(tmp_path):
    """Seed recipe (the matrix's `seed` run): 16 samples x 127.739 tokens / 6.0 s = 340.6 tokens/s. tp-best:
    2,000 tokens per step in 0.4 s = 5,000 tokens/s = 14.68x. Seeds 10.00 / 10.02 / 10.05 at step 20 give the band
    (mean 10.0233, range 0.05); tp-best's 10.03 counts. Classes: tp-best is uncapped with a 35 GiB peak, so it
    counts for 40 GiB but not for 24 GiB, where best24-a (capped at 24 GiB) trained."""
    root = tmp_path / "results"
    for i, (exp, loss) in enumerate(zip(("spread-s42", "spread-s43", "spread-s44"), (10.00, 10.02, 10.05))):
        lines, args = _synthetic(20, 0.9, 60.0, loss, seed=i)
        _write_run(root, exp, lines=lines, args=args)
    lines, args = _synthetic(20, 6.0, 17.0, 10.4, jitter=0.0, bs=1, ga=16)
    seed_run = root / "h200" / "seed" / "20261130-000000"
    seed_run.mkdir(parents=True)
    (seed_run / "logging.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (seed_run / "args.json").write_text(json.dumps(args))
    (seed_run / "env.json").write_text(json.dumps({"hw": "h200", "gpu_name": "NVIDIA H200"}))
    (seed_run / "run.json").write_text(json.dumps({"status": "ok", "experiment": "seed", "dummy_weights": True}))
    for exp, peak, step_s in (("tp-best", 35.0, 0.4), ("best24-a", 17.4, 0.6)):
        lines, args = _synthetic(20, step_s, peak, 10.03, jitter=0.0)
        run = _write_run(root, exp, lines=lines, args=args)
        _tokens(run, {s: 2000 for s in range(1, 21)})
    df = claims.claims_table(root).set_index("id")
    target = df.loc["best-12x"]
    assert target.verdict == "holds"
    assert target.numbers["seed_tokens_per_s"] == pytest.approx(127.739422 * 16 / 6.0, rel=1e-3)
    assert target.numbers["ratio"] == pytest.approx(5000 / (127.739422 * 16 / 6.0), rel=1e-3)
    assert target.numbers["loss_dev_from_seed_mean"] == pytest.approx(0.0067, abs=1e-4)
    c24, c40 = df.loc["best-per-class-24"], df.loc["best-per-class-40"]
    assert c24.verdict == "holds" and c24.numbers["recipe"] == "best24-a"
    assert "uncapped peak 35.0 GiB > cap" in c24.detail
    assert c24.numbers["tokens_per_s"] == pytest.approx(2000 / 0.6, rel=1e-3)
    assert c40.verdict == "holds" and c40.numbers["recipe"] == "tp-best"
    assert "another host" not in target.detail and "against seed-w4" not in target.detail
    # the seed recipe again beside tp-best (seed-w4: 2,000 tokens per 5.0 s step = 400 tokens/s -> 12.5x, context
    # only), and the seed run from a host with other CPUs: both named, the verdict unchanged
    lines, args = _synthetic(20, 5.0, 17.0, 10.4, jitter=0.0, bs=1, ga=16)
    _tokens(_write_run(root, "seed-w4", lines=lines, args=args), {s: 2000 for s in range(1, 21)})
    (seed_run / "env.json").write_text(json.dumps({"hw": "h200", "cpu_model": "Xeon", "cpu_count": 16, "ram_gib": 125.9}))
    for run in (root / "h200").glob("*/*/"):
        if run != seed_run:
            (run / "env.json").write_text(json.dumps({"hw": "h200", "cpu_model": "Xeon", "cpu_count": 32, "ram_gib": 251.8}))
    target = claims.claims_table(root).set_index("id").loc["best-12x"]
    assert target.verdict == "holds" and target.numbers["ratio_vs_seed-w4"] == pytest.approx(12.5, rel=1e-3)
    assert "against seed-w4 (the same host, 400.0 tokens/s): 12.5x" in target.detail
    assert "another host than the seed run (Xeon x 32, 251.8 GiB RAM vs the seed run's Xeon x 16" in target.detail


def test_runs_cut_short_by_a_deadline_are_not_verdicts(tmp_path):
    """An interrupted run (the device call's deadline) is neither 'unsafe' nor 'slower': the claim stays unrun and
    says which run was cut short; a profile it completed before the cut still counts."""
    root = tmp_path / "results"
    lines, args = _synthetic(9, 6.0, 16.0, 12.0)
    _write_run(root, "workers4", lines=lines, args=args, status="failed", reason="timeout",
               profile={"device": "cuda", "steps": [{"step": 9, "wall_s": 9.9, "gpu_busy_frac": 0.0636}]})
    _write_run(root, "seed-w8", lines=None, args=None, status="failed", reason="interrupted", run_id="20261201-000001")
    df = claims.claims_table(root).set_index("id")
    w = df.loc["workers8"]
    assert w.verdict == "not run yet" and "cut short by a time limit" in w.detail and "seed-w8 (interrupted" in w.detail
    bound = df.loc["host-bound-seed"]
    assert bound.verdict == "holds" and bound.numbers["gpu_busy_frac"] == pytest.approx(0.064, abs=1e-3)
    assert "cut short: timeout" in bound.detail


def _timed(steps_s, peak=30.0, eval_loss=10.0):
    """A 4.x log whose step i took steps_s[i - 1] seconds (cumulative train_speed(s/it) = elapsed / step)."""
    t, lines, n = 0.0, [], len(steps_s)
    for s, dt in enumerate(steps_s, start=1):
        t += dt
        lines.append({"loss": 12 - 0.01 * s, "global_step/max_steps": f"{s}/{n}", "elapsed_time": f"{round(t)}s",
                      "memory(GiB)": peak, "train_speed(s/it)": round(t / s, 6)})
    lines.append({"eval_loss": eval_loss, "global_step/max_steps": f"{n}/{n}", "memory(GiB)": peak,
                  "train_speed(s/it)": round(t / n, 6)})
    return lines, {"per_device_train_batch_size": 16, "gradient_accumulation_steps": 1, "max_length": 2048,
                   "torch_dtype": "bfloat16", "lora_rank": 8, "num_train_epochs": 1, "max_steps": n}


def test_speedups_on_the_same_batches_are_paired_step_by_step(tmp_path):
    """Slow and fast steps alternate (3 s and 1 s for the same 2,000 tokens, as padding varies); the recipe takes
    0.8x each step's time. Paired, every step says 1 / 0.8 = +25 % and the range collapses onto it; unpaired, the
    667-vs-2,000 tokens/s spread of the steps makes the range wide. Batches that differ (other tokens per step) fall
    back to the unpaired ratio; another host is named."""
    root = tmp_path / "results"
    base_s = [3.0 if s % 2 else 1.0 for s in range(1, 21)]
    tokens = {s: 2000 for s in range(1, 21)}
    lines, args = _timed(base_s)
    _tokens(_write_run(root, "spread-s42", lines=lines, args=args), tokens)
    lines, args = _timed([0.8 * x for x in base_s])
    test_run = _write_run(root, "tp-liger", lines=lines, args=args)
    _tokens(test_run, tokens)
    runs = claims.runs_by_experiment(root)
    base, test = runs["spread-s42"][0], runs["tp-liger"][0]
    sp = claims._speedup(base, test)
    # steady intervals 2->3 .. 19->20 (1->2 is the first of the 20-step schedule): 18 pairs
    assert sp["paired_steps"] == 18 and sp["other_host"] is None
    assert sp["speedup_pct"] == pytest.approx(25.0, abs=0.01)
    assert sp["speedup_pct_low"] == pytest.approx(25.0, abs=0.05) and sp["speedup_pct_high"] == pytest.approx(25.0, abs=0.05)
    _tokens(test_run, {**tokens, 7: 1999})  # one batch differs: no pairing, the two runs' own ranges instead
    sp = claims._speedup(base, test)
    assert sp["paired_steps"] is None and sp["speedup_pct"] == pytest.approx(25.0, abs=0.5)
    assert sp["speedup_pct_high"] - sp["speedup_pct_low"] > 20
    env = json.loads((test_run / "env.json").read_text())
    env.update(cpu_model="Xeon", cpu_count=16, ram_gib=125.9)
    (test_run / "env.json").write_text(json.dumps(env))
    (root / "h200" / "spread-s42" / "20261201-000000" / "env.json").write_text(json.dumps(
        {**env, "cpu_count": 32, "ram_gib": 251.8}))
    runs = claims.runs_by_experiment(root)  # rows carry the env.json they were collected with
    base, test = runs["spread-s42"][0], runs["tp-liger"][0]
    assert claims._speedup(base, test)["other_host"] == "Xeon x 16, 125.9 GiB RAM vs the baseline's Xeon x 32, 251.8 GiB RAM"


def test_workers_verdict_from_the_committed_h200_pairs():
    """The committed seed-w4/seed-w8 runs (16 steps, one after the other) and the simultaneous -sim pair (20 steps).
    Hand computation from their logging.jsonl: elapsed at step s = train_speed(s/it) x s; the steady steps of the
    94-step schedule start after step 9.4, so the paired time is elapsed(last) - elapsed(10) for both runs."""
    root = claims.ROOT / "results"
    if not (root / "h200" / "seed-w4-sim").is_dir():
        pytest.skip("committed H200 results not present")

    def elapsed(exp, step):
        run = next((root / "h200" / exp).iterdir())
        for raw in (run / "logging.jsonl").read_text().splitlines():
            x = json.loads(raw)
            if "loss" in x and x.get("global_step/max_steps", "").split("/")[0] == str(step):
                return x["train_speed(s/it)"] * step

    hand = {last: (elapsed(b, last) - elapsed(b, 10)) / (elapsed(t, last) - elapsed(t, 10)) * 100 - 100
            for b, t, last in (("seed-w4", "seed-w8", 16), ("seed-w4-sim", "seed-w8-sim", 20))}
    claim = next(c for c in claims.load()["claims"] if c["id"] == "workers8")
    res = claims.rule_speedup(claim, claims.runs_by_experiment(root), claims.CLAIMS_FILE)
    assert res["numbers"]["speedup_pct"] == pytest.approx(hand[16], abs=0.01)  # 15.16
    assert res["numbers"]["speedup_pct_seed-w8-sim"] == pytest.approx(hand[20], abs=0.01)  # 3.05
    assert res["numbers"]["paired_steps"] == 6 and res["numbers"]["paired_steps_seed-w8-sim"] == 10
    # the first pair's range reaches 15 %, the simultaneous pair's stays below it: the rule wants both to agree
    assert res["verdict"] == "inconclusive"
    assert res["numbers"]["speedup_pct_high_seed-w8-sim"] < 15 < res["numbers"]["speedup_pct_high"]


def test_qlora_verdict_names_the_liger_fit_and_the_largest_batch(tmp_path):
    root = tmp_path / "results"
    _write_run(root, "qlora-cap24-bs8", lines=None, args=None, status="failed", reason="OOM: CUDA out of memory")
    lines, args = _synthetic(3, 1.0, 13.76, 11.0, bs=8)
    _write_run(root, "qlora-cap24-bs8-liger", lines=lines, args=args)
    lines, args = _synthetic(2, 1.0, 21.22, 11.0, bs=4)
    _write_run(root, "qcap24-bs4", lines=lines, args=args)
    _write_run(root, "qcap24-bs6", lines=None, args=None, status="failed", reason="OOM: CUDA out of memory")
    row = claims.claims_table(root).set_index("id").loc["qlora-7b-24gb"]
    assert row.verdict == "does not hold"
    assert "OOMed at ms-swift's defaults" in row.detail
    assert "qlora-cap24-bs8-liger (with Liger) trained, peak 13.76 GiB" in row.detail
    assert "qcap24: 24 GiB: bs 4 trains (21.22 GiB), bs 6 OOMs" in row.detail
    assert row.numbers["max_bs_qcap24"] == 4 and row.numbers["oom_bs_qcap24"] == 6
    assert row.numbers["qlora-cap24-bs8-liger_trained"] is True and len(row.runs) == 4
