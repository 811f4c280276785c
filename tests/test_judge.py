"""The judge stage (analysis/judge/): claims.yaml as data, verdicts from the installed ms-swift and from synthetic
run trees with hand-computed numbers, the recipe tables, the resolved combination and `swiftbench claims`."""
import argparse
import importlib.util
import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from committed import committed_results

from analysis.core.seeds import DEFAULT_SEEDS_DIR, load_seed
from analysis.judge import band, cli
from analysis.judge.audit import (
    combo,
    config,
    frames,
    quote,
    rules_memory,
    rules_speed,
    rulespec,
    select,
    swift_info,
)
from analysis.judge.audit.rules import RULES
from analysis.judge.audit.verdicts import claims_table
from analysis.measure.memory import common_peaks, peak_at
from analysis.measure.steps import step_time
from analysis.measure.throughput import throughput
from experiments.base.errors import InputError
from experiments.launch import launcher as launch
from experiments.recipes import catalog, recipes
from experiments.run import spec as run_spec


def _table(root, **kw):
    return claims_table(root, **kw).set_index("id")


def _runs(root, hw=None):
    return band.runs_by_experiment(root, hw)


# ------------------------------------------------------------------------------------------ claims.yaml as data


def test_claim_sources_exist_in_the_seed_files_and_thresholds_match_them():
    seeds = {p.name: load_seed(p) for p in DEFAULT_SEEDS_DIR.glob("*.yaml")}
    data = config.load()
    figures = {f["id"]: f for s in seeds.values() for f in s.get("figures", [])}
    assert set(RULES) == set(config.RULE_KINDS)
    for c in data.claims:
        assert c.kind in RULES and isinstance(c.rule, rulespec.KINDS[c.kind])
        src = c.source
        if src.file in seeds:
            ids = {x["id"] for x in seeds[src.file]["claims"]}
            assert src.claim in ids, c.id
            assert set(src.also) <= ids
            assert set(src.figures) <= set(figures), c.id
        for exp in c.experiments:
            assert catalog.experiment(exp) is not None or catalog.search(exp) is not None, exp
        # an article claim is one of a seed article's; everything else is the project's own finding
        assert (c.origin == "article") == (src.file in seeds), c.id
    rules = {c.id: c.rule for c in data.claims}
    workers8, rank4 = rules["workers8"], rules["lora-rank4"]
    assert isinstance(workers8, rulespec.Speedup) and isinstance(rank4, rulespec.MemoryLossPair)
    assert workers8.min_speedup_pct == figures["all.dataloader_workers8_speedup_pct_min"]["value"] == 15
    assert rank4.min_mem_saving_pct <= figures["all.lora_rank4_mem_saving_pct"]["value"] == 25
    assert figures["all.lora_7b_sufficient_gpu_mem_gb"]["value"] == 24
    # the tables' run lists are claims experiments (the seed runs may also be the matrix's `seed`)
    known = set(catalog.load()["experiments"])
    fig = data.recipes
    assert set(fig.runs) | set(fig.spread) | {fig.baseline} <= known
    assert set(data.time_breakdown.runs) <= known
    assert set(fig.seed_runs) <= known | set(recipes.experiments(matrix_only=False))


def test_claims_yaml_keys_survive_yaml_1_1():
    """`on:` / `off:` would load as booleans; rules must use plain keys."""
    raw = yaml.safe_load(config.CLAIMS_FILE.read_text())
    for c in raw["claims"]:
        assert all(isinstance(k, str) for k in c["rule"]), c["id"]


def _claims_file(tmp_path, mutate):
    raw = yaml.safe_load(config.CLAIMS_FILE.read_text())
    mutate(raw)
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d["claims"][0]["rule"].update(kind="vibes"), "unknown rule kind 'vibes'"),
    (lambda d: d["claims"][0]["rule"].pop("min_mem_saving_pct"), "rule memory_loss_pair needs min_mem_saving_pct"),
    (lambda d: d["claims"][0]["rule"].update(min_mem_saving=20), "rule memory_loss_pair reads no min_mem_saving"),
    (lambda d: next(c for c in d["claims"] if c["rule"]["kind"] == "speedup")["rule"]["repeats"][0].update(
        {"one per GPU": None}), "unexpected keyword argument 'one per GPU'"),
    (lambda d: d["claims"][0].update(experiments=["nope"]), "unknown claims experiment(s) nope"),
    (lambda d: d["claims"][1].update(id=d["claims"][0]["id"]), "id used twice"),
    (lambda d: d["claims"][0]["rule"].update({True: 1}), "are not strings"),
    (lambda d: d.pop("figures"), "missing top-level key 'figures'"),
    (lambda d: d["figures"]["recipes"].update(runs="spread-s42"), "figures.recipes.runs: must be a list of names"),
    (lambda d: d.pop("claims"), "missing top-level key 'claims'"),
    (lambda d: d["claims"][0].pop("origin"), "no `origin`"),
    (lambda d: d["claims"][0].update(origin="issue 5"), "`origin` must be one of article, finding"),
    (lambda d: d["claims"][0].update(key="{} saved"), "`key`: must be a string with named fields"),
    (lambda d: d["key_numbers"].update(vibes="{x}"), "key_numbers: unknown rule kind 'vibes'"),
    (lambda d: d["key_numbers"].update(recipe="{ratio"), "key_numbers.recipe: "),
])
def test_bad_claims_files_name_the_file(tmp_path, mutate, message):
    path = _claims_file(tmp_path, mutate)
    with pytest.raises(InputError, match=re.escape(message)) as exc:
        config.load(path)
    assert exc.value.path == str(path)


# ------------------------------------------------------------------------------ verdicts from the installed ms-swift


def test_flag_claim_is_decided_by_the_installed_swift(tmp_path):
    version = swift_info.swift_version()
    row = _table(tmp_path / "none").loc["flags-cuda-graph-flash-attn"]
    assert row.verdict == "does not hold"
    assert f"--disable_cuda_graph: does not exist in ms-swift {version}" in row.detail
    assert f"--disable_flash_attn: does not exist in ms-swift {version}" in row.detail
    assert row.numbers == {"--disable_cuda_graph": "does not exist", "--disable_flash_attn": "does not exist",
                           "--attn_impl": "exists"}
    # The same parser `swift sft` uses leaves the unknown flags over (swift then raises remaining_argv).
    assert swift_info.flag_report("disable_cuda_graph", "true").parser_accepts is False
    # The article's other spelling advice: --torch_dtype bf16 is not a choice; bfloat16 is.
    assert swift_info.flag_report("torch_dtype", "bf16").parser_accepts is False
    assert swift_info.flag_report("torch_dtype", "bfloat16").parser_accepts is True
    assert swift_info.flag_report("gradient_checkpointing").default is True
    assert swift_info.flag_report("group_by_length").exists and swift_info.flag_report("use_liger_kernel").exists


def test_padding_free_and_packing_need_flash_attention_in_this_swift(tmp_path):
    rep = swift_info.padding_free_report(["padding_free", "packing"], "sdpa")
    pf = rep.features["padding_free"]
    assert not pf.allowed and pf.message is not None and "flash attention" in pf.message
    assert not rep.features["packing"].allowed
    assert swift_info.padding_free_report(["padding_free"], "flash_attention_2").features["padding_free"].allowed
    row = _table(tmp_path / "none").loc["packing"]
    if not rep.flash_attn_importable:  # ms-swift alone refuses it; the claim says the shipped plugin lifts that
        assert row.verdict == "not run yet" and row.detail.startswith("the shipped plugin allows --packing")
    for name in ("tp-padding-free", "tp-packing"):
        assert catalog.experiment(name)["blocked"]


def test_the_plugin_lifts_the_padding_free_check_the_packing_claim_names():
    """claims.yaml's `plugin: true` (the packing claim) is a fact about the shipped plugin: with it imported, ms-swift's
    own SftArguments check accepts --packing and --padding_free with sdpa (in a process of its own: the plugin
    registers itself on import)."""
    pytest.importorskip("swift.arguments")
    code = ("from types import SimpleNamespace as N\n"
            "from swift.arguments import SftArguments\n"
            "import experiments.recipes.swift_plugin\n"
            "for pf, pk in ((True, False), (False, True)):\n"
            "    SftArguments._check_padding_free(N(padding_free=pf, packing=pk, attn_impl='sdpa'))\n"
            "print('ok')\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=Path(__file__).resolve().parents[1], timeout=300)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stderr[-2000:]
    claim = config.claim("packing")
    assert claim is not None
    spec = claim.rule_as(rulespec.Supported)
    assert spec.plugin is True and spec.attn_impl == "sdpa" and spec.flags == ("packing",)


def test_qlora_package_part_says_what_was_found(tmp_path):
    row = _table(tmp_path / "none").loc["qlora-7b-24gb"]
    rec = config.claim("qlora-7b-24gb").package_check
    assert rec["name"] == "bitsandbytes" and "cuda130" in rec["kernels"] and rec["file"].endswith(".whl")
    # the wheelhouse pins (and slims) bitsandbytes now: the QLoRA run is possible, just not made yet
    assert swift_info.shipped_version("bitsandbytes") == "0.50.2"
    assert row.verdict == "not run yet" and "in the GPU wheelhouse" in row.detail
    assert row.numbers["package_importable_here"] is (importlib.util.find_spec("bitsandbytes") is not None)
    assert swift_info.shipped_version("no-such-package") is None


def test_unrun_claims_name_their_planned_experiments(tmp_path):
    df = _table(tmp_path / "none")
    assert set(df.verdict) <= set(config.VERDICTS)
    assert df.loc["lora-rank4"].verdict == "not run yet"
    assert "workers4, rank4" in df.loc["lora-rank4"].detail and "GPU min" in df.loc["lora-rank4"].detail
    assert "already defaults to true" in df.loc["gradient-checkpointing"].detail
    assert df.loc["convergence-spread"].numbers["published_spread"] == pytest.approx(0.065)


# ---------------------------------------------------------------------------- verdicts from synthetic run trees


H200_BYTES = 150109880320  # an H200's total memory as torch reports it


def launch_record(cap_gib: float, total: int = H200_BYTES) -> dict:
    """launch.json's allocator-cap record as experiments/launch/launcher.py apply_memory_cap writes it on a GPU."""
    fraction = launch.memory_fraction(cap_gib, total)
    return {"requested_gib": cap_gib, "applied": True, "device": 0, "total_bytes": total, "fraction": fraction,
            "cap_bytes": int(fraction * total), "device_name": "NVIDIA H200"}


def _write_run(root, exp, *, lines, args, status="ok", reason=None, dummy=True, profile=None, run_id="20261201-000000",
               cap="defined"):
    """A run folder as the runner leaves it, with a run.json key equal to what the runner computes; CAP: the allocator
    cap its launch.json records (default: its definition's mem_cap_gib, as the launcher applies it; None: none)."""
    spec = run_spec.RunSpec(hw="h200", experiment=exp, model="dummy", data=".data")
    run = root / "h200" / exp / run_id
    run.mkdir(parents=True)
    cap = (spec.launcher or {}).get("mem_cap_gib") if cap == "defined" else cap
    if cap is not None:
        (run / "launch.json").write_text(json.dumps({"mem_cap": launch_record(cap)}))
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
    row = _table(root).loc["lora-rank4"]
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
    row = _table(root).loc["lora-rank4"]
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
    assert _table(root).loc["lora-rank4"].verdict == "not run yet"
    runs = _runs(root)
    assert "rank4" not in runs and [r.experiment for r in runs.get("workers4")] == ["workers4"]
    # the machine's own flags (dtype, model check) are not part of the definition
    status["key"]["overrides"].update(lora_rank=4, torch_dtype="float32", check_model=False)
    (run / "run.json").write_text(json.dumps(status))
    assert band.defined_as(band.records_of(root)[0], "rank4")


def test_capacity_verdicts(tmp_path):
    """cap24: bs 2 trains (22.1 GiB), bs 3 OOMs; cap40: bs 6 trains, bs 8 OOMs; cap80: only bs 16 ran."""
    root = tmp_path / "results"
    for exp, peak in (("cap24-bs2", 22.1), ("cap40-bs6", 37.0), ("cap80-bs16", 61.0)):
        lines, args = _synthetic(3, 1.0, peak, 11.0, bs=int(exp.rsplit("bs", 1)[1]))
        _write_run(root, exp, lines=lines, args=args)
    for exp in ("cap24-bs3", "cap40-bs8"):
        _write_run(root, exp, lines=None, args=None, status="failed", reason="OOM: CUDA out of memory")
    df = _table(root)
    # searches under 24 GiB and more are bigger cards than a 24 GB one (22.35 GiB): named, never deciding
    row = df.loc["lora-7b-24gb"]
    assert row.verdict == "inconclusive" and row.numbers == {"card_gb": 24, "capacity_gib": 22.35}
    assert row.detail.startswith("no run capped at <= 22.35 GiB exists yet")
    searches = {n: rules_memory.search_result(n, _runs(root)) for n in ("cap24", "cap40", "cap80")}
    cap24 = searches["cap24"]
    assert (cap24.cap_gib, cap24.largest_ok, cap24.first_oom, cap24.peak_gib_at_largest) == (24, 2, 3, 22.1)
    assert not searches["cap80"].bracketed and "not finished" in row.detail  # cap80: only bs 16 ran
    assert rules_memory.capacity_lines([cap24]) in row.detail  # the sentence is the search's, formatted once
    assert row.runs == []
    half = df.loc["lora-half-48gb"]
    assert half.verdict == "does not hold" and "24 GiB cap" in half.detail
    assert df.loc["batch-from-memory-controller"].verdict == "does not hold"  # 2 -> 6 with capacity alone
    cap = frames.capacity_frame(root)
    assert list(zip(cap.search, cap.batch, cap.outcome)) == [
        ("cap24", 2, "trained"), ("cap24", 3, "OOM"), ("cap40", 6, "trained"), ("cap40", 8, "OOM"),
        ("cap80", 16, "trained")]
    assert cap.peak_gib.iloc[0] == 22.1 and cap.setting.iloc[0] == "24 GiB cap"


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
    df = _table(root)
    row = df.loc["tp-bs8"]
    assert row.verdict == "holds"
    assert row.numbers["speedup_pct"] == pytest.approx(20.0, abs=2.5)
    assert row.numbers["speedup_pct_low"] > 0
    assert row.numbers["seed_range"] == pytest.approx(0.05) and row.numbers["loss_dev_from_seed_mean"] == \
        pytest.approx(0.0067, abs=1e-4)
    # 20 points -> 19 intervals - the first - 8 in the warm-up (starting before step 9.4, 10 % of the 94-step epoch
    # of 1,489 samples at 16 a step) - the profiled (3x slower) steps 19-20 = 8.
    base = _runs(root).get("spread-s42")[0]
    st = step_time(base)
    assert st.n_intervals == 8 and st.median == pytest.approx(0.90, rel=0.02)
    assert st.ci95_high < 0.95
    spread = df.loc["convergence-spread"]
    assert spread.verdict == "cannot be tested here"  # dummy weights
    assert spread.numbers["seed_range"] == pytest.approx(0.05) and spread.numbers["published_spread"] == \
        pytest.approx(0.065)
    bound = df.loc["gpu-bound-bs16"]
    assert bound.verdict == "holds" and bound.numbers["gpu_busy_frac"] == pytest.approx(0.94)
    # the recipes table: the same numbers, the seed band, the baseline's label; no seed recipe run: no multiple
    rf = frames.recipes_frame(root).set_index("recipe")
    assert list(rf.index) == ["spread-s42", "tp-bs8"]
    assert rf.loc["spread-s42", "label"] == "spread-s42 (bs16 baseline)"
    assert rf.loc["spread-s42", "flags"] == "(bs16 baseline)"
    assert rf.loc["tp-bs8", "flags"] == "per_device_train_batch_size=8, gradient_accumulation_steps=2"
    assert rf.loc["tp-bs8", "loss_counts"] and rf.loc["tp-bs8", "eval_step"] == 20
    assert rf.loc["tp-bs8", "steady_x_seed"] is None and rf.attrs["seed_tokens_per_s"] is None
    assert rf.loc["tp-bs8", "tokens_per_s"] == pytest.approx(127.739422 * 16 / 0.75, rel=0.02)
    # steady steps 11-18 (the warm-up ends at step 9.4 of the 94-step epoch; 19-20 are profiled)
    assert rf.loc["tp-bs8", "steady_steps"] == 8 and rf.loc["tp-bs8", "gpu_busy_frac"] == 0.9
    # where a step's time goes: the profiled steps with a GPU busy time (none recorded here: no rows)
    assert frames.time_breakdown(root).empty


def test_recipe_outside_the_seed_band_does_not_count(tmp_path):
    root = tmp_path / "results"
    _throughput_tree(root, recipe_loss=10.2)  # |10.2 - 10.0233| = 0.177 > 0.05
    row = _table(root).loc["tp-bs8"]
    assert row.verdict == "does not hold" and "OUTSIDE the seed band" in row.detail
    assert frames.recipes_frame(root).set_index("recipe").loc["tp-bs8", "loss_counts"] == False  # noqa: E712


def test_combo_takes_the_recipes_that_helped(tmp_path):
    root = tmp_path / "results"
    _throughput_tree(root)
    got = combo.resolve_combo("tp-combo", root, "h200")
    assert got.used == ["tp-bs8"]
    assert got.overrides["per_device_train_batch_size"] == 8 and got.overrides["logging_steps"] == 1
    assert "not run yet" in got.reason
    assert combo.resolve_combo("tp-combo", tmp_path / "empty", "h200").overrides is None
    with pytest.raises(InputError, match="not a `combine` experiment"):
        combo.resolve_combo("tp-bs8", root, "h200")


def test_combo_carries_the_launcher_options_its_recipes_train_with(tmp_path):
    # tp-pf (0.60 s/step: +50 %) beats tp-bs8 (0.75 s/step: +20 %) over the 0.90 s/step baseline. tp-pf only
    # trains with the plugin (ms-swift refuses --padding_free with SDPA otherwise): the combination must carry its
    # --external_plugins, while the stop and profiler options stay tp-combo's own.
    root = tmp_path / "results"
    _throughput_tree(root)
    lines, args = _synthetic(20, 0.60, 40.0, 10.03, seed=7)
    _write_run(root, "tp-pf", lines=lines, args=args)
    got = combo.resolve_combo("tp-combo", root, "h200")
    assert got.used == ["tp-pf", "tp-bs8"]
    assert got.overrides["padding_free"] is True and got.overrides["per_device_train_batch_size"] == 8
    assert got.overrides["external_plugins"] == "swiftbench"
    assert got.launcher == catalog.experiment("tp-combo")["launcher"]


def _claims_cli(argv):
    p = argparse.ArgumentParser(prog="swiftbench")
    cli.register(p.add_subparsers(dest="command", required=True))
    a = p.parse_args(argv)
    return a.func(a)


def test_claims_resolve_writes_the_file_and_keeps_a_different_one(tmp_path, capsys):
    """`claims resolve NAME --hw HW` writes what the runner reads; run again on the same results it changes nothing;
    when the results say something else, the file already there stays unless --force."""
    root = tmp_path / "results"
    _throughput_tree(root)
    path = catalog.resolved_path(root, "h200", "tp-combo")
    assert _claims_cli(["claims", "resolve", "tp-combo", "--hw", "h200", "--results", str(root)]) == 0
    assert capsys.readouterr().out.startswith(f"written {path} (tp-combo on h200: combined tp-bs8")
    first = catalog.read_resolved(root, "h200", "tp-combo")  # the runner's reader accepts it
    assert first["experiment"] == "tp-combo" and first["used"] == ["tp-bs8"]
    assert first["overrides"] == combo.resolve_combo("tp-combo", root, "h200").overrides
    assert first["made"].endswith("Z") and "T" in first["made"]
    text = path.read_text()
    # the same resolution again: nothing written (positional RESULTS, as experiments/cloud/claims_gpu.sh passes it)
    assert _claims_cli(["claims", "resolve", "--all", "--hw", "h200", str(root)]) == 0
    assert capsys.readouterr().out.startswith(f"unchanged {path}")
    assert path.read_text() == text
    # tp-pf runs and wins: a different resolution; the old file is kept and the command says so in one line
    lines, args = _synthetic(20, 0.60, 40.0, 10.03, seed=7)
    _write_run(root, "tp-pf", lines=lines, args=args)
    assert _claims_cli(["claims", "resolve", "tp-combo", "--hw", "h200", "--results", str(root)]) == 1
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith(f"kept {path}") and "--force" in out
    assert path.read_text() == text
    assert _claims_cli(["claims", "resolve", "tp-combo", "--hw", "h200", "--results", str(root), "--force"]) == 0
    assert capsys.readouterr().out.startswith(f"replaced {path}")
    assert catalog.read_resolved(root, "h200", "tp-combo")["used"] == ["tp-pf", "tp-bs8"]
    # nothing to combine yet writes no file: a later resolve, once the members ran, is not blocked by it
    empty = tmp_path / "empty"
    empty.mkdir()
    out = combo.write_resolved("tp-combo", empty, "h200")
    assert out.action == "not resolved" and "run these first" in out.message
    assert not catalog.resolved_path(empty, "h200", "tp-combo").exists()
    with pytest.raises(SystemExit):
        _claims_cli(["claims", "resolve", "tp-combo"])  # --hw is required
    with pytest.raises(InputError, match="no such results folder"):
        _claims_cli(["claims", "resolve", "tp-combo", "--hw", "h200", "--results", str(tmp_path / "nope")])


def test_claims_command_prints_article_claims_first_then_findings(tmp_path, capsys):
    """The seed articles' claims under their heading, each line with the claim's text and a key number; the
    project's own findings under a heading of their own; the GPU plan only with --plan."""
    root = tmp_path / "results"
    _throughput_tree(root)
    assert _claims_cli(["claims", str(root), "--hw", "h200"]) == 0
    out = capsys.readouterr().out.splitlines()
    articles = [c for c in config.claims() if c.origin == "article"]
    findings = [c for c in config.claims() if c.origin == "finding"]
    lines = {re.match(r"\[[^]]+\] (\S+): ", x).group(1): i for i, x in enumerate(out) if x.startswith("[")}
    heads = [i for i, x in enumerate(out) if x.startswith("The ")]
    assert [out[i].split(":")[0] for i in heads] == [config.ORIGINS["article"], config.ORIGINS["finding"]]
    assert out[heads[0]].startswith(f"{config.ORIGINS['article']}: {len(articles)} (")
    assert list(lines) == [c.id for c in articles + findings]
    assert heads[0] < min(lines[c.id] for c in articles) < max(lines[c.id] for c in articles) < heads[1]
    assert heads[1] < min(lines[c.id] for c in findings)
    for c in articles + findings:  # the claim's text, shortened only to fit the line, then the key number
        line = out[lines[c.id]]
        assert len(line) <= cli.LINE_WIDTH
        shown = line.split(": ", 1)[1].rsplit(" — ", 1)[0]
        assert " ".join(c.claim.split()).startswith(shown.removesuffix(" …")) and len(shown) >= 20, line
    assert out[lines["tp-bs8"]].startswith("[holds] tp-bs8: Per-device batch 8 x ga 2 is faster")
    assert re.search(r" — speed-up \d+\.\d+ % \(95 % range [\d.]+ \.\. [\d.]+ %\)$", out[lines["tp-bs8"]])
    assert out[lines["lora-7b-24gb"]].endswith("— no run capped at <= 22.35 GiB exists yet (cap22-seed-bs1 not run)")
    assert not any(x.startswith("call ") for x in out)  # no plan unless asked
    assert _claims_cli(["claims", str(root), "--plan", "--hw", "h200"]) == 0
    planned = capsys.readouterr().out.splitlines()
    assert planned[:len(out)] == out and any(x.startswith("call 21 gpu 0a  plan:21a ") for x in planned)
    assert planned[-1].startswith("all calls: ~")
    assert _claims_cli(["claims", str(root), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows] == list(lines) and rows[0]["hw"] == "h200"
    assert [r["origin"] for r in rows] == ["article"] * len(articles) + ["finding"] * len(findings)
    by_id = {r["id"]: r for r in rows}
    assert by_id["tp-bs8"]["key"].startswith("speed-up ") and by_id["lora-7b-24gb"]["key"] is None
    assert _claims_cli(["claims", str(root), "--json", "--plan"]) == 0
    both = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in both["claims"]] == list(lines) and both["plan"][-1].startswith("all calls: ~")
    with pytest.raises(SystemExit):
        _claims_cli(["claims", str(root), "--force"])
    with pytest.raises(SystemExit):
        _claims_cli(["claims", "resolve", "tp-combo", "--hw", "h200", "--plan"])


def test_gc_tradeoff_with_an_oom(tmp_path):
    root = tmp_path / "results"
    lines, args = _synthetic(20, 0.9, 75.8, 10.0)
    _write_run(root, "spread-s42", lines=lines, args=args)
    _write_run(root, "tp-nogc", lines=None, args=None, status="failed", reason="OOM: CUDA out of memory")
    row = _table(root).loc["gradient-checkpointing"]
    assert row.verdict == "holds" and "OOMed" in row.detail and "defaults to true" in row.detail


# ------------------------------------------------------------------- measured tokens, peaks at a step, best recipes


def _tokens(run, per_step):
    (run / "tokens.jsonl").write_text("".join(
        json.dumps({"step": s, "micro_batches": 1, "tokens": t, "padded_tokens": t, "label_tokens": t // 2}) + "\n"
        for s, t in per_step.items()))


def test_throughput_counts_the_measured_tokens_of_the_steady_steps(tmp_path):
    """20 steps of exactly 1 s; odd steps hold 1,000 tokens, even steps 3,000. Steady intervals: 10->11 .. 19->20
    (1->2 is the first, those starting before step 9.4 are the warm-up of the 94-step epoch), 10 s and 5 x 1,000 +
    5 x 3,000 = 20,000 tokens: 2,000 tokens/s. Without tokens.jsonl the data's mean length (127.739 x 16 samples per
    step) gives 2,043.8 tokens/s instead."""
    root = tmp_path / "results"
    lines, args = _synthetic(20, 1.0, 30.0, 10.0, jitter=0.0)
    run = _write_run(root, "tp-pf", lines=lines, args=args)
    est = throughput(_runs(root).get("tp-pf")[0])
    assert est.source == "mean length x samples per step"
    assert est.tokens_per_s == pytest.approx(127.739422 * 16, rel=1e-3)
    _tokens(run, {s: 1000 if s % 2 else 3000 for s in range(1, 21)})
    got = throughput(_runs(root).get("tp-pf")[0])  # a record holds the side files it was read with
    assert got.source == "tokens.jsonl" and got.steady_steps == 10
    assert got.tokens_per_s == pytest.approx(2000.0, rel=1e-3)
    assert got.tokens_per_step == pytest.approx(2000.0)
    assert got.low < 2000 < got.high  # per-interval ratios are 1,000 or 3,000: the bootstrap spreads them
    # a profiled step is left out with its tokens: mark 20 as profiled -> 9 intervals, 4 x 3,000 + 5 x 1,000
    (run / "profile.json").write_text(json.dumps({"device": "cuda", "steps": [{"step": 20, "gpu_busy_frac": 0.5}]}))
    got = throughput(_runs(root).get("tp-pf")[0])
    assert got.steady_steps == 9 and got.tokens_per_s == pytest.approx(17000 / 9, rel=1e-3)


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
    runs = _runs(root)
    ra, rb = runs.get("spread-s42")[0], runs.get("tp-nogc")[0]
    assert peak_at(ra, None) == 55.0 and peak_at(ra, 23) == 32.0
    assert common_peaks(ra, rb) == (32.0, 40.0, 23)


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
    # the 12x bar from a same-host pair: pair-seed (6.0 s per step) and pair-best (0.4 s) trained the same
    # 2,000 tokens at every step on one host, so the speed-up is paired step by step: 6.0 / 0.4 = 15.0x exactly
    host_a = {"fingerprint": {"host_id": "aaaaaaaaaaaa"}, "probe": {"python_loop": {"value": 58.0}}}
    pair = {}
    for exp, step_s, bs, ga in (("pair-seed", 6.0, 1, 16), ("pair-best", 0.4, 16, 1)):
        lines, args = _synthetic(20, step_s, 17.0 if bs == 1 else 35.0, 10.03, jitter=0.0, bs=bs, ga=ga)
        pair[exp] = _write_run(root, exp, lines=lines, args=args)
        _tokens(pair[exp], {s: 2000 for s in range(1, 21)})
        env = json.loads((pair[exp] / "env.json").read_text())
        (pair[exp] / "env.json").write_text(json.dumps({**env, "host": host_a}))
    df = _table(root)
    target = df.loc["best-12x"]
    assert target.verdict == "holds", target.detail
    assert target.numbers["ratio"] == pytest.approx(15.0, abs=0.005)
    assert target.numbers["ratio_low"] == pytest.approx(15.0, abs=0.005)
    assert target.numbers["hosts"] == "same host" and target.numbers["how"] == "paired steps"
    assert target.numbers["loss_dev_from_seed_mean"] == pytest.approx(0.0067, abs=1e-4)
    assert "same host (host aaaaaaaaaaaa / host aaaaaaaaaaaa)" in target.detail
    # the same pair from two hosts decides nothing: a cross-host ratio is labelled, with both hosts' probes
    env = json.loads((pair["pair-best"] / "env.json").read_text())
    env["host"] = {"fingerprint": {"host_id": "bbbbbbbbbbbb"}, "probe": {"python_loop": {"value": 41.0}}}
    (pair["pair-best"] / "env.json").write_text(json.dumps(env))
    crossed = _table(root).loc["best-12x"]
    assert crossed.verdict == "inconclusive" and crossed.numbers["hosts"] == "cross-host"
    assert "the rule needs one host, the pair is cross-host" in crossed.detail
    assert "Python 41 ns/iter" in crossed.detail and "Python 58 ns/iter" in crossed.detail
    (pair["pair-best"] / "env.json").write_text(json.dumps({**env, "host": host_a}))
    c24, c40 = df.loc["best-per-class-24"], df.loc["best-per-class-40"]
    assert c24.verdict == "holds" and c24.numbers["recipe"] == "best24-a"
    assert c24.numbers["capacity_gib"] == 22.35 and c24.numbers["cap_gib"] == 24
    assert "tp-best trained uncapped, reserved peak 35.0 GiB >= the card's 22.35 GiB: says nothing" in c24.detail
    assert c24.numbers["tokens_per_s"] == pytest.approx(2000 / 0.6, rel=1e-3)
    assert c40.verdict == "holds" and c40.numbers["recipe"] == "tp-best"
    assert "another host" not in target.detail
    # the recipes table holds tp-best against the seed run: 5,000 / 340.6 tokens/s = 14.68x
    rf = frames.recipes_frame(root)
    assert rf.attrs["seed_run"].endswith("h200/seed/20261130-000000")
    assert rf.set_index("recipe").loc["tp-best", "steady_x_seed"] == pytest.approx(5000 / (127.739422 * 16 / 6.0),
                                                                                    abs=0.01)
    # the rule unpaired, as the first 12x verdict was made (tp-best over the matrix's seed run: 14.68x), with the seed
    # recipe again beside tp-best (seed-w4: 2,000 tokens per 5.0 s step = 400 tokens/s -> 12.5x, context only), and
    # the seed run from a host with other CPUs: both named, the verdict unchanged
    lines, args = _synthetic(20, 5.0, 17.0, 10.4, jitter=0.0, bs=1, ga=16)
    _tokens(_write_run(root, "seed-w4", lines=lines, args=args), {s: 2000 for s in range(1, 21)})
    (seed_run / "env.json").write_text(json.dumps({"hw": "h200", "cpu_model": "Xeon", "cpu_count": 16,
                                                   "ram_gib": 125.9}))
    for run in (root / "h200").glob("*/*/"):
        if run != seed_run:
            (run / "env.json").write_text(json.dumps({"hw": "h200", "cpu_model": "Xeon", "cpu_count": 32,
                                                      "ram_gib": 251.8}))
    unpaired = config.claim_of({
        "id": "x", "origin": "finding", "claim": "", "source": {"file": "f", "claim": "c"}, "experiments": ["tp-best"],
        "rule": {"kind": "target_speedup", "run": "tp-best", "seed_runs": ["seed", "workers4"], "factor": 12,
                 "spread": ["spread-s42", "spread-s43", "spread-s44"], "also_against": ["seed-w4"]}})
    target = rules_speed.rule_target_speedup(unpaired, _runs(root, "h200"))
    assert target.numbers["ratio"] == pytest.approx(5000 / (127.739422 * 16 / 6.0), abs=0.01)
    assert target.verdict == "holds" and target.numbers["ratio_vs_seed-w4"] == pytest.approx(12.5, rel=1e-3)
    assert "against seed-w4 (the same host, 400.0 tokens/s): 12.5x" in target.detail
    assert "another host than the seed run (Xeon x 32, 251.8 GiB RAM vs the seed run's Xeon x 16" in target.detail


def test_runs_cut_short_by_a_deadline_are_not_verdicts(tmp_path):
    """An interrupted run (the device call's deadline) is neither 'unsafe' nor 'slower': the claim stays unrun and
    says which run was cut short; a profile it completed before the cut still counts."""
    root = tmp_path / "results"
    lines, args = _synthetic(9, 6.0, 16.0, 12.0)
    _write_run(root, "workers4", lines=lines, args=args, status="failed", reason="timeout",
               profile={"device": "cuda", "steps": [{"step": 9, "wall_s": 9.9, "gpu_busy_s": 0.63,
                                                     "gpu_busy_frac": 0.0636}]})
    _write_run(root, "seed-w8", lines=None, args=None, status="failed", reason="interrupted", run_id="20261201-000001")
    df = _table(root)
    w = df.loc["workers8"]
    assert w.verdict == "not run yet" and "cut short by a time limit" in w.detail and "seed-w8 (interrupted" in w.detail
    bound = df.loc["host-bound-seed"]
    assert bound.verdict == "holds" and bound.numbers["gpu_busy_frac"] == pytest.approx(0.064, abs=1e-3)
    assert "cut short: timeout" in bound.detail
    runs = _runs(root)
    assert "workers4" not in runs and [r.run for r in runs.cut_short["workers4"]] == ["20261201-000000"]
    tb = frames.time_breakdown(root)
    assert list(tb.run) == ["workers4"] and tb.host_s.iloc[0] == pytest.approx(9.27)
    assert tb.note.iloc[0] == "run cut short afterwards (timeout)"


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

    def numbers():
        runs = _runs(root)  # records carry the side files and env.json they were read with
        return quote.speedup_numbers(runs.get("spread-s42")[0], runs.get("tp-liger")[0])

    sp = numbers()
    # steady intervals 2->3 .. 19->20 (1->2 is the first of the 20-step schedule): 18 pairs
    assert sp.paired_steps == 18 and sp.other_host is None
    assert sp.speedup_pct == pytest.approx(25.0, abs=0.01)
    assert sp.speedup_pct_low == pytest.approx(25.0, abs=0.05)
    assert sp.speedup_pct_high == pytest.approx(25.0, abs=0.05)
    _tokens(test_run, {**tokens, 7: 1999})  # one batch differs: no pairing, the two runs' own ranges instead
    sp = numbers()
    assert sp.paired_steps is None and sp.speedup_pct == pytest.approx(25.0, abs=0.5)
    assert sp.speedup_pct_high is not None and sp.speedup_pct_low is not None
    assert sp.speedup_pct_high - sp.speedup_pct_low > 20
    env = json.loads((test_run / "env.json").read_text())
    env.update(cpu_model="Xeon", cpu_count=16, ram_gib=125.9)
    (test_run / "env.json").write_text(json.dumps(env))
    (root / "h200" / "spread-s42" / "20261201-000000" / "env.json").write_text(json.dumps(
        {**env, "cpu_count": 32, "ram_gib": 251.8}))
    assert numbers().other_host == "Xeon x 16, 125.9 GiB RAM vs the baseline's Xeon x 32, 251.8 GiB RAM"


def test_workers_verdict_from_the_committed_h200_pairs():
    """The committed seed-w4/seed-w8 runs (16 steps, one after the other) and the simultaneous -sim pair (20 steps).
    Hand computation from their logging.jsonl: elapsed at step s = train_speed(s/it) x s; the steady steps of the
    94-step schedule start after step 9.4, so the paired time is elapsed(last) - elapsed(10) for both runs."""
    root = committed_results()
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
    res = rules_speed.rule_speedup(config.claim("workers8"), _runs(root))
    assert res.numbers["speedup_pct"] == pytest.approx(hand[16], abs=0.01)  # 15.16
    assert res.numbers["speedup_pct_seed-w8-sim"] == pytest.approx(hand[20], abs=0.01)  # 3.05
    assert res.numbers["paired_steps"] == 6 and res.numbers["paired_steps_seed-w8-sim"] == 10
    # the first pair's range reaches 15 %, the simultaneous pair's stays below it: the rule wants both to agree
    assert res.verdict == "inconclusive"
    assert res.numbers["speedup_pct_high_seed-w8-sim"] < 15 < res.numbers["speedup_pct_high"]
    # run folders named as read: here the committed copy (a folder inside a checkout is named relative to it)
    assert res.runs and all(r.startswith(str(root / "h200" / "seed-w")) for r in res.runs), res.runs


def test_qlora_verdict_names_the_liger_fit_and_the_largest_batch(tmp_path):
    root = tmp_path / "results"
    _write_run(root, "qlora-cap24-bs8", lines=None, args=None, status="failed", reason="OOM: CUDA out of memory")
    lines, args = _synthetic(3, 1.0, 13.76, 11.0, bs=8)
    _write_run(root, "qlora-cap24-bs8-liger", lines=lines, args=args)
    lines, args = _synthetic(2, 1.0, 21.22, 11.0, bs=4)
    _write_run(root, "qcap24-bs4", lines=lines, args=args)
    _write_run(root, "qcap24-bs6", lines=None, args=None, status="failed", reason="OOM: CUDA out of memory")
    row = _table(root).loc["qlora-7b-24gb"]
    assert row.verdict == "does not hold"
    # judged at a 24 GB card's 22.35 GiB: an OOM under 24 GiB does not fit it; peaks below 22.35 GiB do
    assert row.detail.startswith("qlora-cap24-bs8 OOMed under a 24 GiB cap, >= the card's 22.35 GiB")
    assert "qlora-cap24-bs8-liger (with Liger) trained under a 24 GiB cap" in row.detail
    assert row.numbers["qlora-cap24-bs8-liger_fits"] is True and row.numbers["card_bs_qcap24"] == 4
    q = rules_memory.card_search("qcap24", _runs(root), 22.35)
    assert q == rules_memory.CardSearch("qcap24", fits=4, does_not_fit=6, unknown=[], peak_gib=21.22)
    assert q.line(22.35) in row.detail
    assert row.numbers["max_bs_qcap24"] == 4 and row.numbers["oom_bs_qcap24"] == 6
    assert row.numbers["qlora-cap24-bs8-liger_trained"] is True and len(row.runs) == 4


def test_seed_baseline_prefers_the_candidates_host():
    """Two fast-seed runs are committed, on hosts dc93a79a73d2 (call 29) and df773cc3ad55 (call 31): each candidate is
    held against the one made on its own host, not the newest (a cross-host ratio of host-bound runs is no verdict);
    a candidate from a host without a seed run gets the newest."""
    from analysis.parse.results import records_under

    recs = [r for r in records_under(committed_results() / "h200") if r.experiment in ("fast-seed", "fast-best",
                                                                                     "fast-compile-nocudnn")]
    runs = band.runs_by_experiment(None, "h200", recs)
    assert {r.host_id for r in runs.get("fast-seed")} >= {"dc93a79a73d2", "df773cc3ad55"}
    for name, host in (("fast-best", "dc93a79a73d2"), ("fast-compile-nocudnn", "df773cc3ad55")):
        # the newest candidate run that has a fast-seed run on its host (call 46's compiled run on 363c2fc28e7a has
        # none: it must not push call 30's paired one out of the 20x claim)
        rec = select.pick_paired(runs, name, ["fast-seed"])
        assert rec.host_id == host
        assert select.seed_baseline(["fast-seed"], runs, host_id=rec.host_id).host_id == host
    newest = select.seed_baseline(["fast-seed"], runs)
    assert newest.run == max(r.run for r in runs.get("fast-seed"))
    assert select.seed_baseline(["fast-seed"], runs, host_id="nowhere").run == newest.run
