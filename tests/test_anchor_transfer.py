"""Issue 44: an anchor run's profile carried to the anchor's other GPUs (analysis.estimate.anchor_transfer), on hand
computations; the profiler window tt_run.py drives writes a profile.json the time model's parser accepts."""
from __future__ import annotations

import json
import math
import statistics
import time
from pathlib import Path

import pytest

from analysis.estimate import anchor_transfer, time_checks, transfer
from analysis.parse import anchor_run
from experiments.base import hardware
from experiments.base.errors import InputError

MILABENCH = {"metric": "tokens_per_s_incl_padding", "h100": 7021.84, "h200": 7640.55}
README = {"metric": "tokens_per_s", "rtx4090": 3083, "rtxa6000": 4699}
KERNELS = ["CUDA:CONCURRENT_KERNEL", "CUDA:GPU_MEMCPY", "CUDA:GPU_MEMSET"]
# one profiled step: 0.6 s of GEMM (100 calls), 0.2 s of attention (10), 0.1 s elementwise (1,000); busy 1.0 s, so
# 0.1 s of other kernels (memory-bound) with no calls left over
OPS = [{"op": "nvjet_sm90_tst_gemm", "gpu_ms": 600.0, "calls": 100},
       {"op": "flash_fwd_kernel", "gpu_ms": 200.0, "calls": 10},
       {"op": "vectorized_elementwise_kernel", "gpu_ms": 100.0, "calls": 1000}]


def _write(folder: Path, published: dict, notes: dict | None = None, profile: dict | None = None) -> Path:
    """Steps 1-4 reported (1 warm-up), 5 under the profiler unmeasured, 6-7 profiled; steady walls 2 s."""
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({
        "workload": "w", "hw": "h100", "label": "test", "status": "done", "warmup_steps": 1, "published": published,
        "published_notes": notes or {}, "profile": {"excluded_steps": [5, 6, 7]}}))
    walls = {1: None, 2: 2.0, 3: 2.0, 4: 2.0, 5: 9.0, 6: 1.2, 7: 1.2}  # profiled steps far off: never steady
    real = {2: 800, 3: 600, 4: 700}
    lines = [{"step": s, "wall_s": w, "tokens_padded": 1000, "tokens_real": real.get(s, 500)} for s, w in walls.items()]
    (folder / "steps.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    if profile is None:
        window = {"wall_s": 1.2, "gpu_busy_s": 1.0, "gpu_busy_frac": 0.83, "gpu_events": 1110, "top_gpu_ops": OPS}
        profile = {"device": "cuda", "activities": KERNELS,
                   "steps": [{"step": 5, "wall_s": 9.0, "warmup": True}, {"step": 6, **window}, {"step": 7, **window}]}
    if profile:
        (folder / "profile.json").write_text(json.dumps(profile))
    return folder


def _hand_step(dst: str) -> float:
    """The hand computation: host (median 2.0 - busy 1.0) + each group's floor (1.5 us a call) + its work x ratio."""
    r = transfer.kind_ratios("h100", dst)
    floor = 1.5e-6
    groups = [(0.6, 100, r.gemm), (0.2, 10, r.attention), (0.1, 1000, r.memory), (0.1, 0, r.memory)]
    return 1.0 + sum(n * floor + (s - n * floor) * ratio for s, n, ratio in groups)


def test_ratios_are_the_spec_sheets():
    """H100 -> H200: the same dense peak and GEMM share, bandwidth 3,350 -> 4,800 GB/s (hardware.yaml)."""
    r = transfer.kind_ratios("h100", "h200")
    assert (r.gemm, r.attention) == (1.0, 1.0) and r.memory == pytest.approx(3350 / 4800)
    a6000 = hardware.require("rtx-a6000")
    assert (a6000.bf16_dense_tflops, a6000.bandwidth_gbs, a6000.memory_gb) == (154.8, 768, 48)
    assert hardware.resolve("rtxa6000") == hardware.resolve("RTX A6000") == "rtx-a6000"


def test_milabench_on_ratio_to_the_run_class(tmp_path):
    run = anchor_run.parse(_write(tmp_path / "h100" / "w" / "r1", MILABENCH))
    assert run.steady_steps == (2, 3, 4) and run.excluded_steps == (5, 6, 7) and run.step_s_median == 2.0
    assert run.published == 7021.84
    step = anchor_transfer.anchor_step(run)
    assert step.hw == "h100" and step.token_scale == 1.0 and step.windows == 2
    assert step.busy_s == pytest.approx(1.0) and step.host_s == pytest.approx(1.0)
    preds = {p.dst: p for p in anchor_transfer.predict(run)}
    assert list(preds) == ["h200", "a10", "a100"]  # the run's own class is the reproduction, not a prediction
    h200 = preds["h200"]
    assert h200.src_step_s == pytest.approx(2.0)  # the model gives the steady median back on its own class
    assert h200.step_s == pytest.approx(_hand_step("h200"))
    assert h200.tokens_per_s == pytest.approx(1000 / _hand_step("h200"))  # padded: the metric counts padding
    assert h200.basis == "ratio" and h200.published_ratio == pytest.approx(7640.55 / 7021.84)
    assert h200.error == pytest.approx((2.0 / _hand_step("h200")) / (7640.55 / 7021.84) - 1)
    a10 = preds["a10"]
    assert a10.step_s == pytest.approx(_hand_step("a10")) and a10.error is None and a10.basis is None


def test_readme_on_absolute_tokens_per_s_with_its_note(tmp_path):
    notes = {"rtx4090": "memory savers"}
    run = anchor_run.parse(_write(tmp_path / "h100" / "w" / "r1", README, notes))
    preds = {p.dst: p for p in anchor_transfer.predict(run)}
    assert list(preds) == ["rtx4090", "rtx-a6000", "a10", "a100"]
    a6000 = preds["rtx-a6000"]
    tokens = statistics.fmean([800, 600, 700])  # labelled tokens: torchtune's tokens_per_second_per_gpu counts these
    assert a6000.tokens_per_step == tokens and a6000.published_src is None and a6000.basis == "absolute"
    assert a6000.tokens_per_s == pytest.approx(tokens / _hand_step("rtx-a6000"))
    assert a6000.error == pytest.approx(tokens / _hand_step("rtx-a6000") / 4699 - 1)
    assert preds["rtx4090"].note == "memory savers" and a6000.note is None


def test_a_run_without_a_profile_says_so(tmp_path):
    operators = {"device": "cuda", "activities": ["CPU", "CUDA"], "steps": [
        {"step": 6, "wall_s": 1.2, "gpu_busy_s": 1.0, "top_gpu_ops": [{"op": "aten::mm", "gpu_ms": 5, "calls": 1}]}]}
    runs = [anchor_run.parse(_write(tmp_path / "h100" / "w" / "r1", MILABENCH, profile={})),
            anchor_run.parse(_write(tmp_path / "h100" / "w" / "r2", MILABENCH, profile=operators))]
    assert runs[0].profile is None
    with pytest.raises(InputError, match="no profiled step"):
        anchor_transfer.predict(runs[0])
    out = time_checks.carried(runs)
    assert out[0].missing == anchor_transfer.NO_PROFILE and out[0].run == "h100/w/r1" and not out[0].predictions
    assert out[1].missing.startswith(anchor_transfer.NO_PROFILE) and "operators" in out[1].missing


def test_profiler_window_writes_what_the_parser_reads(tmp_path, monkeypatch):
    """tt_run.py's hook (StepLogger -> the launcher's step profiler) over a fake step loop, the GPU faked: the
    profile.json it writes is taken apart by transfer.step_from_profile."""
    torch = pytest.importorskip("torch")
    from experiments.anchors import tt_run
    from experiments.launch import profiler as launch_profiler
    from experiments.record import gpm

    class FakeProf:
        def __init__(self, **kw):
            pass

        def start(self):
            pass

        def stop(self):
            pass

    by_name = {"nvjet_sm90_gemm": [3_000_000, 4], "vectorized_elementwise_kernel": [1_000_000, 40]}
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(torch.profiler, "profile", FakeProf)
    monkeypatch.setattr(gpm.Gpm, "open", classmethod(lambda cls, lib=None, index=None: (None, "no GPM")))
    monkeypatch.setattr(launch_profiler, "_device_intervals",
                        lambda prof: ([(0, 3_000_000), (3_000_000, 4_500_000)], 0, [], by_name))
    out = tmp_path / "h100" / "w" / "r1"
    plan = tt_run.ProfilePlan(base=3, steps=2, warmup=1)
    assert (plan.skip, plan.total, plan.excluded) == (4, 6, [4, 5, 6])
    record = {"workload": "w", "hw": "h100", "warmup_steps": 1, "published": MILABENCH, "status": "done"}
    prof = tt_run._profiler(plan, out, record, "cuda", "kernels")
    logger = tt_run.StepLogger(str(out / "steps.jsonl"))
    logger.profiler = prof
    prof.begin()
    for step in range(1, plan.total + 1):
        time.sleep(0.01)  # a step's wall above the faked 4.5 ms of GPU work
        logger.micro.append((2, 100, 150))
        logger.log_dict({"loss": 1.0}, step)
    prof.end()
    logger.close()
    (out / "run.json").write_text(json.dumps(record))
    data = json.loads((out / "profile.json").read_text())
    assert [(s["step"], bool(s.get("warmup"))) for s in data["steps"]] == [(4, True), (5, False), (6, False)]
    assert record["profile"]["excluded_steps"] == [4, 5, 6]
    run = anchor_run.parse(out)
    assert run.steady_steps == (2, 3)  # the steps under the profiler count in no tokens/s figure
    step = anchor_transfer.anchor_step(run)
    assert step.windows == 2 and step.profiled_busy_s == pytest.approx(0.0045)
    assert {g.name: (g.kind, g.calls) for g in step.groups} == {
        "nvjet_sm90_gemm": ("gemm", 4), "vectorized_elementwise_kernel": ("memory", 40), "other kernels": ("memory", 0)}
    assert math.isclose(sum(g.seconds for g in step.groups), 0.0045)  # 3 + 1 ms named, 0.5 ms the rest


README_RUN = (Path(__file__).resolve().parents[1] / "results/anchors/h100/torchtune-readme-8b-lora-packed"
              / "20261206T032551Z-243730")


def test_a_published_figure_above_the_card_s_peak_is_no_check():
    """The committed profiled README run (config.yaml: Llama-3.1-8B, LoRA r8 on q/v/output_proj and the MLP,
    checkpointing on). By hand: LoRA 8 x ((4096+4096) + (4096+1024) + (4096+4096) + 3 x (4096+14336)) x 32 layers =
    19,660,800; matmul weights 7,504,658,432 (models.yaml); hardware FLOPs/token 4 x 7,504,658,432 + 6 x 19,660,800
    + 2 x 7,504,658,432 = 45,145,915,392. The RTX A6000's 4,699 tokens/s need 4,699 x 45.146e9 / 154.8e12 = 137.0 %
    of its dense bf16 peak: no check; the RTX 4090's 3,083 need 3,083 x 45.146e9 / 165.2e12 = 84.3 %."""
    run = anchor_run.parse(README_RUN)
    assert run.model is not None and run.model.checkpointing and run.model.lora_rank == 8
    shapes = hardware.lookup_model(run.model.builder)
    assert shapes is not None and anchor_transfer.lora_params(run.model, shapes) == 19_660_800
    assert anchor_transfer.hardware_flops_per_token(run) == 45_145_915_392
    by_dst = {p.dst: p for p in anchor_transfer.predict(run)}
    assert by_dst["rtx-a6000"].published_use == pytest.approx(4699 * 45_145_915_392 / 154.8e12)
    assert by_dst["rtx-a6000"].published_use == pytest.approx(1.370, abs=5e-4) and not by_dst["rtx-a6000"].feasible
    assert by_dst["rtx4090"].published_use == pytest.approx(0.8425, abs=5e-4) and by_dst["rtx4090"].feasible
    assert by_dst["a10"].published_use is None and by_dst["a10"].feasible  # no figure: nothing to judge


def test_a_run_without_config_yaml_has_no_use_figure(tmp_path):
    run = anchor_run.parse(_write(tmp_path / "r", README))
    assert run.model is None and anchor_transfer.hardware_flops_per_token(run) is None
    assert all(p.published_use is None and p.feasible for p in anchor_transfer.predict(run))


def test_a_config_yaml_that_is_not_yaml_is_bad_input_with_its_line(tmp_path):
    folder = _write(tmp_path / "r", README)
    (folder / "config.yaml").write_text("model:\n  lora_rank: 8\n  x: [unclosed\n")
    with pytest.raises(InputError) as e:
        anchor_run.parse(folder)
    assert "config.yaml" in str(e.value) and "not YAML" in str(e.value)


def _prediction(**kw) -> anchor_transfer.AnchorPrediction:
    base = dict(workload="w", run="r", src="h100", dst="rtx-a6000", metric="tokens_per_s", tokens_per_step=1000.0,
                src_step_s=0.1, step_s=0.5, published=None, published_src=None)
    return anchor_transfer.AnchorPrediction(**{**base, **kw})


def test_band_error_is_the_fast_over_slow_ratio_error_whichever_way_the_run_was_carried():
    """By hand. Absolute: the run's class measures 10,000 tokens/s, the model gives the slower class 2,000 where 4,000
    are published: throughput -50 %, and the model's fast/slow ratio 5 against 2.5 published, +100 %: a time carried
    from the faster class to the slower stands for T / 2 .. T. Ratio, the class predicted faster: model 1.2, published
    1.1 (+9.09 %); the class predicted slower: model 0.5, published 0.4 -> fast/slow 2 against 2.5 (-20 %)."""
    absolute = _prediction(published=4000.0)
    assert absolute.error == pytest.approx(-0.5) and absolute.band_error == pytest.approx(1.0)
    faster = _prediction(dst="h200", step_s=0.1 / 1.2, published=1.1, published_src=1.0)
    assert faster.error == pytest.approx(1.2 / 1.1 - 1) and faster.band_error == pytest.approx(1.2 / 1.1 - 1)
    slower = _prediction(dst="a100", step_s=0.2, published=0.4, published_src=1.0)
    assert slower.error == pytest.approx(0.5 / 0.4 - 1) and slower.band_error == pytest.approx(2.0 / 2.5 - 1)
    assert _prediction().band_error is None
