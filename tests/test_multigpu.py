"""Several GPUs (issue 14): a run's GPU count and layout, the global batch kept, scaling efficiency, interconnect."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from committed import committed_results

from analysis.measure import compare, interconnect, throughput
from analysis.parse import bench
from analysis.parse.results import read_run
from experiments.base.errors import InputError
from experiments.recipes import recipes
from experiments.record import allreduce
from experiments.run import execute as run_execute
from experiments.run import prepare as run_prepare
from experiments.run.spec import RunSpec
from tests.fake_nvml import FakeNVML

REPO = Path(__file__).resolve().parents[1]
H200 = committed_results() / "h200"
HOST = "a2a43152259f"  # the nvidia-h200-x2 host of calls 12-14 (results/calls/2026-12-01-call12/README.md)
SEED1, SEED2 = H200 / "seed" / f"20261201-022030-{HOST}", H200 / "seed" / f"20261201-022616-2gpu-{HOST}"
BEST2_Z2 = H200 / "best" / f"20261201-022954-2gpu-zero2-{HOST}"


# ------------------------------------------------------------------------------------------ identity and batch


def test_gpu_count_and_layout_are_part_of_a_runs_identity():
    one, two, z3 = (RunSpec(hw="h200", experiment="seed", gpus=g, parallel=p)
                    for g, p in ((1, "ddp"), (2, "ddp"), (2, "zero3")))
    assert "gpus" not in one.key()  # runs made before multi-GPU support keep their keys (and stay 'complete')
    assert two.key()["gpus"] == 2 and two.key() != one.key() and z3.key() != two.key()
    assert (one.layout, two.layout, z3.layout) == ("", "2gpu", "2gpu-zero3")
    with pytest.raises(InputError):
        RunSpec(hw="h200", experiment="seed", gpus=0)
    with pytest.raises(InputError):
        RunSpec(hw="h200", experiment="seed", parallel="zero9")


def test_the_global_batch_is_kept():
    seed2 = RunSpec(hw="h200", experiment="seed", gpus=2)
    assert run_prepare.parallel_overrides(seed2, recipes.flags("seed")) == {"gradient_accumulation_steps": 8}
    best2 = RunSpec(hw="h200", experiment="best", gpus=2, parallel="zero2")  # grad-accum 1: the batch is split
    assert run_prepare.parallel_overrides(best2, recipes.flags("best")) == {"per_device_train_batch_size": 8,
                                                                        "deepspeed": "zero2"}
    with pytest.raises(InputError, match="global batch"):
        run_prepare.parallel_overrides(RunSpec(hw="h200", experiment="seed", gpus=3), recipes.flags("seed"))
    assert run_prepare.parallel_overrides(RunSpec(hw="h200", experiment="seed"), recipes.flags("seed")) == {}


def test_a_one_gpu_run_sees_one_gpu(monkeypatch):
    """ms-swift spreads a single process over every visible GPU (device_map auto): call 11's 1-GPU run on a 2-GPU
    host failed with Liger for that reason. The runner shows it the first N GPUs only."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    lib = FakeNVML(count=2)
    assert run_prepare.gpu_visibility(1, lib=lib) == {"CUDA_VISIBLE_DEVICES": "0"}
    assert run_prepare.gpu_visibility(2, lib=lib) == {}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert run_prepare.gpu_visibility(1, lib=lib) == {}


def test_committed_runs_record_their_gpus():
    s1, s2, z2 = read_run(SEED1), read_run(SEED2), read_run(BEST2_Z2)
    assert (s1.gpus, s1.parallel, s1.layout) == (1, "ddp", "1gpu")
    assert (s2.gpus, s2.parallel, s2.grad_accum, s2.samples_per_step) == (2, "ddp", 8, 16)
    assert (z2.gpus, z2.parallel, z2.per_device_batch, z2.samples_per_step) == (2, "zero2", 8, 16)
    assert (SEED2 / "command.sh").read_text().count("torch.distributed.run --standalone --nproc_per_node 2") == 1
    # tokens.jsonl of a 2-GPU run counts both ranks' micro-batches: 8 + 8 per optimizer step
    first = json.loads((SEED2 / "tokens.jsonl").read_text().splitlines()[0])
    assert first["micro_batches"] == 16 and first["ranks"] == 2


# ------------------------------------------------------------------------------------------ scaling


def test_scaling_efficiency_by_hand():
    one, two = read_run(SEED1), read_run(SEED2)
    sc = compare.scaling(one, two)
    # by hand: each run's steady tokens over its steady seconds, their ratio over the GPU ratio
    kt, _ = throughput.steady_tokens(two)
    kb, _ = throughput.steady_tokens(one)
    hand = (sum(t for _, t in kt) / sum(iv.seconds for iv, _ in kt)) / (
        sum(t for _, t in kb) / sum(iv.seconds for iv, _ in kb)) / 2
    assert sc.efficiency == pytest.approx(hand, rel=1e-12)
    assert sc.efficiency_low < sc.efficiency < sc.efficiency_high
    assert sc.hosts == compare.SAME_HOST and (sc.gpus_from, sc.gpus_to) == (1, 2)
    # MFU is per GPU: the 2-GPU run's MFU over the 1-GPU run's is the efficiency (same model, same flops per token)
    from analysis.measure import flops

    m1 = flops.mfu(one, throughput.throughput(one).tokens_per_s).mfu
    m2 = flops.mfu(two, throughput.throughput(two).tokens_per_s).mfu
    assert m2 / m1 == pytest.approx(sc.efficiency, rel=1e-9)


def test_one_and_two_gpu_runs_are_two_rows_and_a_scaling_row():
    from analysis.present.tables import tables

    t = tables(committed_results())
    seed = t.speedup[(t.speedup.experiment == "seed") & (t.speedup.host == HOST)]
    assert sorted(seed.gpus) == [1, 2]
    sc = t.scaling
    row = sc[(sc.experiment == "seed") & (sc.parallel == "ddp")].iloc[0]
    assert row.hosts == "same host" and row.gpus_to == 2 and 0 < row.efficiency_low < row.efficiency
    assert set(sc.parallel) >= {"ddp", "zero2"}


def test_no_scaling_across_hosts(tmp_path):
    import shutil

    for src in (SEED1, SEED2):
        shutil.copytree(src, tmp_path / "h200" / "seed" / src.name)
    env = json.loads((tmp_path / "h200" / "seed" / SEED2.name / "env.json").read_text())
    env["host"]["fingerprint"]["host_id"] = "0000another0"
    (tmp_path / "h200" / "seed" / SEED2.name / "env.json").write_text(json.dumps(env))
    recs = [read_run(p) for p in (tmp_path / "h200" / "seed").iterdir()]
    assert compare.scaling_pairs(recs) == []


# ------------------------------------------------------------------------------------------ interconnect


def test_busbw_formula_and_nccl_log():
    assert allreduce.busbw(100.0, 2) == 100.0 and allreduce.busbw(100.0, 8) == pytest.approx(175.0)
    log = ("vm:827:827 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 0.\n"
           "vm:827:827 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to SYS\n")
    assert bench.nccl_read_vars(log) == {"NCCL_IB_DISABLE": "0", "NCCL_P2P_LEVEL": "SYS"}
    assert allreduce.sizes_mib(1, 1024) == [2.0**i for i in range(11)]


def test_committed_sweeps_and_the_nccl_verdict_numbers():
    sweeps = bench.allreduce_runs(committed_results(), "h200")
    ((plain, env),) = interconnect.pairs(sweeps)
    raw = json.loads((plain.path / "allreduce.json").read_text())
    big = raw["sizes"][-1]
    largest = interconnect.busbw_at(plain)
    assert big["mib"] == 1024 and largest is not None and largest.busbw_gbs == big["busbw_gbs"]
    assert big["busbw_gbs"] == pytest.approx(big["bytes"] / (big["time_us"] / 1e6) / 1e9, rel=1e-3)  # 2 ranks: = algbw
    eff = interconnect.env_effect(plain, env)
    raw_env = json.loads((env.path / "allreduce.json").read_text())
    assert eff.gain_pct_small == pytest.approx(
        (raw["sizes"][0]["time_us"] / raw_env["sizes"][0]["time_us"] - 1) * 100)
    assert eff.ignored == ["NCCL_FASTRAK_ENABLE", "NCCL_NVSWITCH_USE"]
    assert eff.read == {"NCCL_IB_DISABLE": "0", "NCCL_P2P_LEVEL": "SYS"}


def test_claims_verdicts_for_seed_000():
    from analysis.judge.audit.verdicts import claims_table

    t = claims_table(committed_results()).set_index("id")
    assert t.loc["nccl-env", "verdict"] == "does not hold"
    assert t.loc["scaling-95", "verdict"] == "cannot be tested here"
    assert "seed at 2 GPUs" in t.loc["scaling-95", "detail"]


def test_launcher_under_torchrun_is_allowed_and_plain_nproc_refused():
    env = {"NPROC_PER_NODE": "2", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "experiments.launch", "--", "swift", "sft", "--model", "x"],
                         capture_output=True, text=True, env={**env, "PYTHONPATH": str(REPO)}, cwd=REPO, timeout=120)
    assert out.returncode == 2 and "torchrun --nproc_per_node N -m experiments.launch" in out.stderr
    from experiments.launch import profiler as launch_profiler

    assert launch_profiler.is_comm_kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL")
    assert not launch_profiler.is_comm_kernel("gemm")


def test_deepspeed_is_built_from_its_sdist_for_the_wheelhouse():
    from experiments.setup import wheelhouse as wh

    reqs = wh.load_requirements()
    env, why = reqs.build["deepspeed"]
    assert "DS_BUILD_OPS=0" in env and why
    with pytest.raises(wh.WheelhouseError, match="not pinned"):
        wh.parse_requirements("# build-from-sdist (nothere): A=1 -- reason\nfoo==1.0\n")
    with pytest.raises(wh.WheelhouseError, match="VAR=VALUE"):
        wh.parse_requirements("foo==1.0\n# build-from-sdist (foo): A -- reason\n")


def test_run_all_checks_the_gpu_before_papermill_and_leaves_no_folder(tmp_path):
    """HW=h200 on this CPU machine: one line, exit 2, no run folder (the notebook never starts)."""
    out = subprocess.run([sys.executable, "-m", "analysis.cli", "run-all", "--hw", "h200", "--model", "dummy",
                          "--results", str(tmp_path), "--experiments", "seed", "--no-progress"],
                         capture_output=True, text=True, cwd=REPO, timeout=300)
    assert out.returncode == 2, out.stderr[-2000:]
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "h200" in lines[0] and "Traceback" not in out.stderr
    assert not (tmp_path / "h200").exists()


def test_progress_comes_from_the_log(tmp_path):
    log = tmp_path / "logging.jsonl"
    log.write_text('{"loss": 1.0, "global_step/max_steps": "5/94", "elapsed_time": "10s"}\n'
                   '{"loss": 0.9, "global_step/max_steps": "10/94"}\n{"loss": 0.8, "global_st')
    assert run_execute.progress_from_log(log, 0) == (10, 94, 3)


def test_megatron_swift_log_is_read():
    """Megatron-SWIFT writes "iteration": "a/b" (swift/megatron/callbacks/print.py); the fixture has its keys."""
    from analysis.parse.logs import read_log
    from analysis.parse.megatron import normalise

    log = read_log(REPO / "tests" / "megatron" / "logging.jsonl")
    assert log.log_format == "megatron"
    assert normalise({"iteration": "5/20"})["global_step/max_steps"] == "5/20"
    assert normalise({"global_step/max_steps": "1/2", "iteration": "9/9"})["global_step/max_steps"] == "1/2"
    rec = read_run(REPO / "tests" / "megatron")
    assert (rec.global_steps, rec.max_steps, rec.peak_mem_gib) == (20, 20, 21.47)
    assert [s for s, _ in rec.eval_loss] == [10, 20]


def test_planner_memory_per_gpu_by_hand():
    """ZeRO-2 partitions gradients, optimizer states and an fp32 master copy and adds two 2e8-element bf16 buckets;
    ZeRO-3 also the weights; DDP adds one copy of the gradients (its buckets)."""
    from analysis.estimate import planner
    from analysis.estimate.planner import GIB

    shapes = planner.resolve_model("Qwen2.5-7B-Instruct")
    mem = planner.memory(shapes, "lora", 593, 1, True, 8)
    one = planner.per_gpu_memory(mem, 1, "ddp")
    assert one.peak_mem_gib == pytest.approx(mem.peak_mem_gib)
    ddp = planner.per_gpu_memory(mem, 2, "ddp")
    assert ddp.sharding_extra_gib == pytest.approx(mem.gradients_gib)
    z2 = planner.per_gpu_memory(mem, 2, "zero2")
    lora = mem.params.lora
    assert z2.optimizer_gib == pytest.approx(mem.optimizer_gib / 2)
    assert z2.sharding_extra_gib == pytest.approx((lora * 4 / 2 + 2 * 2e8 * 2) / GIB)
    z3 = planner.per_gpu_memory(mem, 2, "zero3")
    per_layer = mem.weights_gib / shapes["num_hidden_layers"]
    assert z3.weights_gib == pytest.approx(mem.weights_gib / 2 + 2 * per_layer)
    with pytest.raises(InputError):
        planner.per_gpu_memory(mem, 2, "fsdp9")


def test_planner_per_gpu_peak_against_the_2_gpu_seed_run():
    from analysis.estimate.validate import estimates_vs_measurements

    df = estimates_vs_measurements(committed_results())
    row = df[df.run == SEED2.name].iloc[0]
    assert row.gpus == 2 and row.check == "reserved peak" and bool(row.within_10pct)
    assert row.measured_peak_gib == read_run(SEED2).peak_mem_gib == 16.61


def _resume_check(folder: Path, restart_s: float, repeated: list[tuple[int, float, float]], **extra) -> Path:
    folder.mkdir(parents=True)
    (folder / "resume_check.json").write_text(json.dumps({
        "signal": "SIGKILL", "killed_after_step": 25, "left_behind": [], "weights_in_results": [], "second_exit": 0,
        "status": "ok", "resume": {"from_step": 20, "first_step_s": restart_s},
        "repeated_steps": [{"step": s, "loss_before_kill": a, "loss_after_resume": b} for s, a, b in repeated],
        "first_step_since_train_begin_s": 1.5, **extra}))
    return folder


def test_the_resume_claim_by_hand(tmp_path):
    from analysis.judge.audit import config
    from analysis.judge.audit.rules_cluster import rule_resume_time
    from analysis.judge.band import Runs

    claim = config.claim_of({"id": "resume", "origin": "finding", "claim": "", "source": {"file": "f", "claim": "c"},
                             "rule": {"kind": "resume_time", "max_s": 10}})
    runs = Runs(records=[], results_dir=tmp_path, hw="h200")
    assert rule_resume_time(claim, runs).verdict == "not run yet"
    _resume_check(tmp_path / "h200" / "best" / "r1", 8.0, [(21, 12.0, 12.006), (22, 11.0, 11.0)])
    out = rule_resume_time(claim, runs)
    assert out.verdict == "holds"
    assert out.numbers["checks"][0]["max_loss_drift"] == pytest.approx(0.006 / 12.0)  # |12.006 - 12| / 12
    assert "within 0.05% of the first attempt's" in out.detail
    _resume_check(tmp_path / "h200" / "best" / "r2", 12.0, [])
    out = rule_resume_time(claim, runs)
    assert out.verdict == "inconclusive"  # one within 10 s, one not
    # a check without repeated steps is still described in full
    assert "12.0 s from the restart to the first resumed step, 1.5 s of it after the trainer started" in out.detail
    assert out.detail.count("SIGKILL after step 25") == 2
    (tmp_path / "h200" / "best" / "r1" / "resume_check.json").write_text("{not json")
    with pytest.warns(UserWarning, match="skipped, not a resume check"):
        assert rule_resume_time(claim, runs).verdict == "does not hold"
    # a check that left weights in results/ never holds, however fast
    _resume_check(tmp_path / "h200" / "best" / "r3", 5.0, [], weights_in_results=["checkpoint-20"])
    (tmp_path / "h200" / "best" / "r2" / "resume_check.json").unlink()
    assert rule_resume_time(claim, runs).verdict == "inconclusive"


def test_the_committed_h200_resume_check():
    from analysis.judge.audit.verdicts import claims_table
    from analysis.parse import resume

    (check,) = resume.resume_checks(committed_results(), "h200")
    raw = json.loads((check["path"] / "resume_check.json").read_text())
    status = json.loads((check["path"] / "run.json").read_text())
    assert check["restart_to_first_step_s"] == raw["resume"]["first_step_s"] == status["resumes"][-1]["first_step_s"]
    assert check["finished"] and check["left_behind"] == 0 and check["weights_in_results"] == 0
    # the resumed training's first step from the trainer's start: ms-swift's train_speed x steps since the resume
    lines = [json.loads(x) for x in (check["path"] / "logging.jsonl").read_text().splitlines() if x.strip()]
    first = next(d for d in lines[status["resumes"][-1]["log_lines_before"]:]
                 if "train_speed(s/it)" in d and "loss" in d)
    step = int(first["global_step/max_steps"].split("/")[0])
    assert check["trainer_to_first_step_s"] == round(first["train_speed(s/it)"] * (step - check["from_step"]), 2)
    t = claims_table(committed_results()).set_index("id")
    assert t.loc["resume-10s", "verdict"] == ("holds" if check["restart_to_first_step_s"] <= 10 else "does not hold")
    assert f"{check['restart_to_first_step_s']:.1f} s from the restart" in t.loc["resume-10s", "detail"]
