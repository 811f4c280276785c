"""Claims runs (issue 5): the launcher (memory-cap arithmetic, patches, a real in-process run) and the runner's
claims experiments end to end. The verdicts themselves are tests/test_judge.py's, the catalog
tests/test_catalog.py's."""
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from analysis.judge.audit.verdicts import claims_table
from analysis.judge.band import runs_by_experiment
from experiments.launch import launcher as launch
from experiments.launch import options as launch_options
from experiments.launch import profiler as launch_profiler
from experiments.recipes import recipes
from experiments.run import prepare as run_prepare
from experiments.run import spec as run_spec

MIB = 2**20
H200_TOTAL = 143_771 * MIB  # ../shared/GPU-HOST.md


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
    opts, swift = launch_options.parse(["--mem-cap-gib", "24", "--longest-first", "--profile-steps", "2", "--",
                                "swift", "sft", "--output_dir", "/r/x", "--lora_rank", "4"])
    assert opts.mem_cap_gib == 24 and opts.longest_first and opts.profile_steps == 2 and opts.profile_skip == 1
    assert swift == ["--output_dir", "/r/x", "--lora_rank", "4"]
    assert launch_options.swift_flag(swift, "output_dir") == "/r/x"
    for bad in (["--mem-cap-gib", "24"], ["--", ], ["--mem-cap-gib", "-1", "--", "--x"]):
        with pytest.raises(SystemExit):
            launch_options.parse(bad)
    d = {"mem_cap_gib": 40, "profile_steps": 2, "profile_skip": 18, "longest_first": True, "pad_to": 2048}
    opts, _ = launch_options.parse(launch_options.option_argv(d) + ["--", "--x", "1"])
    assert (opts.mem_cap_gib, opts.profile_steps, opts.profile_skip, opts.longest_first, opts.pad_to) == \
        (40, 2, 18, True, 2048)
    assert launch_options.option_argv({}) == []


def test_experiment_env_reaches_the_key_and_not_the_launcher():
    """What changes the training is the recipe's (swift flags, the plugin's callbacks, the command's environment):
    fast-compile's accelerate switches and Liger config are its `env`, part of its run key, none a launcher option."""
    spec = run_spec.RunSpec(hw="h200", experiment="fast-compile", model="dummy", data=".data")
    assert spec.env == {"ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION": "1", "ACCELERATE_DYNAMO_USE_DYNAMIC": "1",
                        "SWIFTBENCH_LIGER_CONFIG": '{"cross_entropy": true, "fused_linear_cross_entropy": false}'}
    assert spec.key()["env"] == spec.env
    assert spec.overrides["callbacks"] == ["liger_config"] and spec.overrides["external_plugins"] == "swiftbench"
    argv = launch_options.option_argv(spec.launcher)
    assert not any(a in argv for a in ("--env", "--liger-config", "--sdpa-padding-free", "--sdp-backends"))
    assert "env" not in run_spec.RunSpec(hw="h200", experiment="tp-best", model="dummy").key()
    for old in (["--env", "A=1"], ["--sdpa-padding-free"], ["--sdp-backends", "flash"], ["--liger-config", "{}"]):
        with pytest.raises(SystemExit):
            launch_options.parse(old + ["--", "--x", "1"])


def test_gpu_busy_union_and_longest_first_order():
    assert launch_profiler.union_ns([(0, 10), (5, 15), (20, 30), (25, 26), (40, 40)]) == 25
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
    from experiments.offline import localdata

    model, _, _ = run_prepare.resolve_model(run_spec.DUMMY_TINY, "cpu")
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
           "MODELSCOPE_OFFLINE": "1", "PYTHONPATH": str(run_spec.ROOT)}
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "--mem-cap-gib 24 is not applied" in p.stdout
    from analysis.measure.loss import final_eval_loss
    from analysis.parse.record import read_log_record

    rec = read_log_record(out)
    assert rec.complete and rec.global_steps == 2 and final_eval_loss(rec) is not None
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


@pytest.mark.slow
def test_run_all_claims_through_the_launcher_on_cpu(tmp_path):
    """A claims experiment end to end: run-all --claims, the notebook, the launcher, a real tiny swift sft."""
    from experiments.offline.localdata import make_tiny_local_data

    data = tmp_path / "data"
    make_tiny_local_data(data, n=12)
    results = tmp_path / "results"
    cmd = [sys.executable, "-m", "experiments.run.runner", "run-all", "--hw", "cpu", "--model", "dummy:tiny",
           "--data", str(data), "--results", str(results), "--claims", "--experiments", "rank4", "--no-progress"]
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    (run_dir,) = list((results / "cpu" / "rank4").iterdir())
    status = json.loads((run_dir / "run.json").read_text())
    assert status["status"] == "ok" and status["key"]["launcher"] == {"longest_first": True, "stop_after": 2}
    assert status["launch_command"][1:6] == ["-m", "experiments.launch", "--longest-first", "--stop-after", "2"]
    assert "cut run (stopped after step 2 of the full schedule)" in runs_by_experiment(
        results, hw="cpu").get("rank4")[0].labels
    assert (run_dir / "tokens.jsonl").is_file() and not (run_dir / "val_dataset.jsonl").exists()
    assert status["command"][:2] == ["swift", "sft"]
    assert (run_dir / "launch.json").is_file() and not list(run_dir.glob("checkpoint-*"))
    assert json.loads((run_dir / "launch.json").read_text())["longest_first"]["applied"]
    runs = runs_by_experiment(results, hw="cpu")
    assert [r.path for r in runs.get("rank4")] == [str(run_dir)]
    df = claims_table(results).set_index("id")
    assert df.loc["lora-rank4"].verdict == "not run yet" and df.loc["lora-rank4"].hw == "cpu"  # workers4 missing
    second = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert second.returncode == 0 and "skip" in second.stderr
    assert len(list((results / "cpu" / "rank4").iterdir())) == 1
    shutil.rmtree(results)


@pytest.mark.slow
def test_sdpa_padding_free_trains_the_same_batches_as_padding(tmp_path):
    """The plugin's padding-free SDPA: ms-swift packs each batch into one row; transformers' SDPA path builds a
    block-diagonal causal mask from the position_ids, so the first steps' losses equal the padded run's (same batches,
    float32)."""
    model, _, datasets = _tiny_inputs(tmp_path)
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "MODELSCOPE_OFFLINE": "1", "PYTHONPATH": str(run_spec.ROOT)}
    losses, toks = {}, {}
    plugin = str(recipes.plugin_path())
    for name, extra in (("padded", []),
                        ("free", ["--padding_free", "true", "--attn_impl", "sdpa", "--external_plugins", plugin])):
        out = tmp_path / name
        cmd = [sys.executable, "-m", "experiments.launch", "--", "swift", "sft", "--model", model,
               "--tuner_type", "lora", "--dataset", *datasets, "--torch_dtype", "float32", "--max_steps", "3",
               "--per_device_train_batch_size", "4", "--gradient_accumulation_steps", "1", "--logging_steps", "1",
               "--output_dir", str(out), "--add_version", "false", "--check_model", "false", "--lora_dropout", "0",
               "--split_dataset_ratio", "0.05", "--dataloader_num_workers", "0", "--eval_steps", "50", *extra]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        lines = [json.loads(x) for x in (out / "logging.jsonl").read_text().splitlines()]
        losses[name] = [x["loss"] for x in lines if "loss" in x and "eval_loss" not in x]
        toks[name] = [json.loads(x) for x in (out / "tokens.jsonl").read_text().splitlines()]
    assert len(losses["free"]) == len(losses["padded"]) == 3
    assert losses["free"] == pytest.approx(losses["padded"], abs=2e-4)
    # the same real tokens per step; packed rows carry no padding at all
    assert [t["tokens"] for t in toks["free"]] == [t["tokens"] for t in toks["padded"]]
    assert all(t["padded_tokens"] == t["tokens"] for t in toks["free"])
    assert all(t["padded_tokens"] > t["tokens"] for t in toks["padded"])


@pytest.mark.parametrize("attn", ["sdpa", "flex_attention"])
def test_packed_rows_attend_only_to_their_own_sample(attn, monkeypatch):
    """What padding-free training (tp-best, issue 18's fast-flex) rests on: three samples packed into one row, with
    position_ids restarting at each, give every sample the logits it has alone, under SDPA's block-diagonal mask and
    FlexAttention's document mask alike (transformers' find_packed_sequence_indices; forward only: FlexAttention has
    no CPU backward).

    FlexAttention runs uncompiled here: torch 2.13's compiled CPU kernel gave wrong outputs on an AMD EPYC machine
    (2026-12-01) for plain causal masks too (max error 1.7-2.8 against SDPA at 4 heads x 16 wide x 24 tokens), and
    uncompiled matches SDPA to 2e-7. The mask is what this test checks; the GPU kernel is checked by fast-flex's eval
    loss."""
    import torch
    from torch.nn.attention.flex_attention import flex_attention
    from transformers import AutoModelForCausalLM
    from transformers.integrations import flex_attention as hf_flex

    def eager_flex(query, key, value, training=False, **kwargs):
        return flex_attention(query, key, value, **kwargs)

    monkeypatch.setattr(hf_flex, "compile_friendly_flex_attention", eager_flex)
    path, _, _ = run_prepare.resolve_model(run_spec.DUMMY_TINY, "cpu")
    alone = AutoModelForCausalLM.from_pretrained(path, attn_implementation="sdpa", dtype=torch.float32).eval()
    model = AutoModelForCausalLM.from_pretrained(path, attn_implementation=attn, dtype=torch.float32).eval()
    gen = torch.Generator().manual_seed(0)
    seqs = [torch.randint(0, 1000, (n,), generator=gen) for n in (7, 12, 5)]
    packed = torch.cat(seqs)[None]
    with torch.no_grad():
        ref = torch.cat([alone(input_ids=s[None], use_cache=False).logits[0] for s in seqs])
        pos = torch.cat([torch.arange(len(s)) for s in seqs])[None]
        got = model(input_ids=packed, position_ids=pos, use_cache=False).logits[0]
        # an explicit 2-D mask turns the packed-row detection off: one causal row over the three samples
        leaky = model(input_ids=packed, position_ids=pos, attention_mask=torch.ones_like(packed),
                      use_cache=False).logits[0]
    assert torch.allclose(got, ref, atol=1e-5)
    assert torch.allclose(leaky[:7], ref[:7], atol=1e-5)     # the first sample has nothing before it
    assert not torch.allclose(leaky[7:], ref[7:], atol=1e-2)  # the later ones see it


@pytest.mark.slow
def test_regional_compile_with_dynamic_shapes_trains_the_same_losses(tmp_path):
    """Issue 18's fast-compile on the CPU (no Liger there): padding-free SDPA with gradient checkpointing off,
    compiled by accelerate region by region with dynamic shapes (its `env`), trains the same losses as
    uncompiled, and the packed row's new length at every step does not recompile: steps 2-4 together take less than
    step 1."""
    model, _, datasets = _tiny_inputs(tmp_path)
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "MODELSCOPE_OFFLINE": "1", "PYTHONPATH": str(run_spec.ROOT)}
    lines = {}
    for name, extra in (("eager", []), ("compiled", ["--torch_compile", "true"])):
        out = tmp_path / name
        env.update(ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION="1", ACCELERATE_DYNAMO_USE_DYNAMIC="1")
        cmd = [sys.executable, "-m", "experiments.launch",
               "--", "swift", "sft", "--model", model, "--tuner_type", "lora", "--dataset", *datasets,
               "--torch_dtype", "float32", "--max_steps", "4", "--per_device_train_batch_size", "4",
               "--gradient_accumulation_steps", "1", "--logging_steps", "1", "--output_dir", str(out),
               "--add_version", "false", "--check_model", "false", "--lora_dropout", "0",
               "--split_dataset_ratio", "0.05", "--dataloader_num_workers", "0", "--eval_steps", "50",
               "--padding_free", "true", "--attn_impl", "sdpa", "--external_plugins", str(recipes.plugin_path()),
               "--gradient_checkpointing", "false", *extra]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, cwd=tmp_path)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        lines[name] = [x for x in map(json.loads, (out / "logging.jsonl").read_text().splitlines())
                       if "loss" in x and "eval_loss" not in x]
    assert len(lines["compiled"]) == len(lines["eager"]) == 4
    assert [x["loss"] for x in lines["compiled"]] == pytest.approx([x["loss"] for x in lines["eager"]], abs=1e-4)
    # cumulative s/it x steps: each step's own time
    ends = [x["train_speed(s/it)"] * (i + 1) for i, x in enumerate(lines["compiled"])]
    steps = [ends[0]] + [b - a for a, b in zip(ends, ends[1:])]
    assert sum(steps[1:]) < steps[0], steps


def test_profiler_warmup_window_is_recorded_and_left_out(tmp_path):
    """--profile-warmup 1 with skip 3 and 2 steps: step 3 runs under the profiler unmeasured, steps 4-5 are the
    measured windows (here on the CPU: host operators), and every figure of the analysis leaves step 3 out."""
    from types import SimpleNamespace as NS

    import torch

    from analysis.measure.profile import busy_fraction, profiled_steps

    out = tmp_path / "profile.json"
    record = {}
    cb = launch_profiler.make_profiler_callback(2, 3, out, record, "cuda", warmup=1)
    state = NS(global_step=0)
    cb.on_train_begin(None, state, None)
    for g in range(1, 8):
        torch.ones(64, 64).matmul(torch.ones(64, 64))
        state.global_step = g
        cb.on_step_end(None, state, None)
    cb.on_train_end(None, state, None)
    data = json.loads(out.read_text())
    assert [(s["step"], bool(s.get("warmup"))) for s in data["steps"]] == [(3, True), (4, False), (5, False)]
    assert data["profile_warmup"] == 1
    assert data["median_wall_s"] == pytest.approx(statistics.median(s["wall_s"] for s in data["steps"][1:]))
    # the analysis: a GPU-busy figure per measured step only (CPU runs have none: a hand-made GPU profile instead)
    gpu = {"steps": [{"step": 10, "wall_s": 9.0, "gpu_busy_s": 0.9, "gpu_busy_frac": 0.1, "warmup": True},
                     {"step": 11, "wall_s": 6.0, "gpu_busy_s": 0.6, "gpu_busy_frac": 0.1},
                     {"step": 12, "wall_s": 5.0, "gpu_busy_s": 1.0, "gpu_busy_frac": 0.2}]}
    rec = NS(profile=gpu)
    assert [s["step"] for s in profiled_steps(rec)] == [11, 12]
    assert busy_fraction(rec) == pytest.approx(0.15)
    # with skip 0 there is no step before the first: no warm-up window
    cb0 = launch_profiler.make_profiler_callback(1, 0, tmp_path / "p0.json", {}, "cuda", warmup=1)
    state = NS(global_step=0)
    cb0.on_train_begin(None, state, None)
    state.global_step = 1
    cb0.on_step_end(None, state, None)
    assert [s["step"] for s in json.loads((tmp_path / "p0.json").read_text())["steps"]] == [1]


# ------------------------------------------------------------------------------------------ issue 32


def test_claims_does_not_import_ms_swift():
    """`swiftbench claims` printed ms-swift's `[INFO:swift] Successfully registered ...` first and took 7 s: the tooling
    claims (does --disable_cuda_graph exist? padding_free with sdpa?) imported ms-swift. They read its answers from
    data/swift_sft.json now (of the installed version)."""
    import subprocess
    import sys

    results = Path(__file__).resolve().parents[1] / "results"
    code = ("import sys; from analysis import cli\n"
            f"rc = cli.main(['claims', {str(results)!r}])\n"
            "print(sorted(m for m in ('swift', 'transformers', 'torch') if m in sys.modules)); sys.exit(rc)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-500:]
    assert p.stdout.strip().splitlines()[-1] == "[]"
    assert "INFO" not in p.stderr and p.stdout.startswith("The seed articles' claims")


def test_the_ms_swift_snapshot_is_what_the_installed_ms_swift_says():
    """data/swift_sft.json against the installed ms-swift (it imports ms-swift: seconds). A claims.yaml that
    asks a new flag, or another ms-swift, makes this fail until `swiftbench claims swift-facts` rewrites
    it."""
    import json

    from analysis.judge.audit import swift_info

    if swift_info.swift_version() is None:
        pytest.skip("ms-swift is not installed")
    committed = json.loads(swift_info.FACTS_FILE.read_text())
    if committed["swift_version"] != swift_info.swift_version():
        pytest.fail(f"data/swift_sft.json is of ms-swift {committed['swift_version']}, the installed one is "
                    f"{swift_info.swift_version()}: run swiftbench claims swift-facts")
    assert json.loads(json.dumps(swift_info.snapshot().as_json(), default=str)) == committed
    for key, report in committed["flag_reports"].items():  # and the reports the claims get are the snapshot's
        flag, _, value = key.partition("=")
        assert swift_info.flag_report(flag, value or None) == swift_info.FlagReport.from_json(report)
