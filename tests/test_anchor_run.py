"""Issue 44's anchor workloads: the run-folder parser on hand-computed numbers, the stand-in tokenizer file, and the
torchtune runner end to end on CPU with a tiny Llama-3.1-shaped model (skipped where torchtune 0.6.1 is not importable:
install its carried wheels into a folder and put it on PYTHONPATH, experiments/cloud/anchor_gpu.sh says which)."""
from __future__ import annotations

import base64
import json
import math
from pathlib import Path

import pytest

from analysis.parse import anchor_run
from experiments.anchors import standin
from experiments.base.errors import InputError


def _write_run(folder: Path, steps: list[dict], warmup: int = 1, hw: str = "h200") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.json").write_text(json.dumps({
        "workload": "milabench-llm-lora-single", "hw": hw, "gpu_name": "NVIDIA H200", "label": standin.LABEL,
        "status": "done", "warmup_steps": warmup, "peak_allocated_gib": 30.5,
        "published": {"metric": "tokens_per_s_incl_padding", "h100": 7021.84, "h200": 7640.55}}))
    (folder / "steps.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
    return folder


STEPS = [
    {"step": 1, "wall_s": None, "tokens_padded": 900, "tokens_real": 450},
    {"step": 2, "wall_s": 2.0, "tokens_padded": 1000, "tokens_real": 600},
    {"step": 3, "wall_s": 4.0, "tokens_padded": 1000, "tokens_real": 500},
    {"step": 4, "wall_s": 1.0, "tokens_padded": 500, "tokens_real": 400},
]


def test_parse_hand_computed(tmp_path):
    r = anchor_run.parse(_write_run(tmp_path / "run", STEPS))
    # steady steps 2-4: padded rates 500, 250, 500; real rates 300, 125, 400
    assert (r.n_steady, r.steps_logged, r.warmup_steps) == (3, 4, 1)
    assert r.tokens_per_s_padded == 500.0
    assert r.tokens_per_s_real == 300.0
    assert math.isclose(r.tokens_per_s_padded_pooled, 2500 / 7)
    assert (r.tokens_per_s_padded_min, r.tokens_per_s_padded_max) == (250.0, 500.0)
    assert r.step_s_median == 2.0
    assert r.padded_tokens_per_step_median == 1000.0
    assert math.isclose(r.padding_overhead, 2500 / 1500 - 1)
    assert r.published == 7640.55
    assert r.vs_published is not None and math.isclose(r.vs_published, 500 / 7640.55 - 1)
    assert r.peak_allocated_gib == 30.5


def test_parse_warmup_override_and_cut_last_line(tmp_path):
    folder = _write_run(tmp_path / "run", STEPS, hw="rtx4090")
    with (folder / "steps.jsonl").open("a") as fh:
        fh.write('{"step": 5, "wall_')  # a run stopped mid-write
    r = anchor_run.parse(folder, warmup_steps=2)
    assert r.n_steady == 2 and r.tokens_per_s_padded == 375.0  # median of 250 and 500
    assert r.published is None and r.vs_published is None


def test_parse_no_steady_step(tmp_path):
    with pytest.raises(InputError, match="no steady step"):
        anchor_run.parse(_write_run(tmp_path / "run", STEPS[:2], warmup=2))


def test_standin_tokenizer_file(tmp_path):
    src = tmp_path / "fake.tiktoken"
    src.write_text("".join(f"{base64.b64encode(bytes([i % 256, i // 256])).decode()} {i}\n" for i in range(300)))
    out = standin.write_standin_tokenizer(tmp_path / "tokenizer.model", src, ranks=200)
    lines = out.read_text().splitlines()
    assert len(lines) == 200 and lines[-1].endswith(" 199")
    with pytest.raises(InputError, match="fewer than"):
        standin.write_standin_tokenizer(tmp_path / "t2.model", src, ranks=400)


def test_workloads_define_the_anchor_shapes():
    w = standin.workload("milabench-llm-lora-single")
    ov = w["overrides"]
    assert (ov["batch_size"], ov["gradient_accumulation_steps"], ov["compile"]) == (8, 8, False)
    assert ov["model"]["lora_attn_modules"] == ["q_proj", "v_proj"] and ov["model"]["lora_rank"] == 8
    assert ov["enable_activation_checkpointing"] is True and ov["dataset"]["packed"] is False
    assert w["published"]["h200"] == 7640.55 and w["published"]["h100"] == 7021.84
    packed = standin.workload("torchtune-readme-8b-lora-packed")["overrides"]
    assert (packed["batch_size"], packed["compile"], packed["tokenizer"]["max_seq_len"]) == (2, True, 2048)
    # the README's RTX A6000 row as its memory and speed say it ran: the same workload, checkpointing off
    no_ac = standin.workload("torchtune-readme-8b-lora-packed-no-ac")
    assert {k: v for k, v in no_ac["overrides"].items() if k not in ("enable_activation_checkpointing",
                                                                      "enable_activation_offloading")} == packed
    assert no_ac["overrides"]["enable_activation_checkpointing"] is False
    assert {k: v for k, v in no_ac["published"].items() if k != "metric"} == {"rtxa6000": 4699}
    with pytest.raises(InputError, match="no workload"):
        standin.workload("nope")


@pytest.mark.parametrize("workload", ["milabench-llm-lora-single", "torchtune-readme-8b-lora-packed"])
def test_runner_end_to_end_tiny_cpu(tmp_path, workload):
    pytest.importorskip("torchtune")
    pytest.importorskip("torchdata")
    from experiments.anchors import tt_run
    from experiments.offline.dummy import qwen_tiktoken_path

    try:
        tiktoken_file = qwen_tiktoken_path()
    except InputError:
        pytest.skip("qwen.tiktoken (dashscope) is not installed")
    data = tmp_path / "data"
    standin.write_standin_tokenizer(data / "tokenizer.model", tiktoken_file)
    rows = [{"instruction": f"Say {i} words.", "input": "" if i % 2 else "some input", "output": "word " * (i % 7 + 1)}
            for i in range(12)]
    (data / standin.DATA_FILE).write_text(json.dumps(rows))
    run = tmp_path / "run"
    sets = ["batch_size=2", "gradient_accumulation_steps=2", "tokenizer.max_seq_len=64"]
    rc = tt_run.main(["--workload", workload, "--out", str(run), "--data", str(data), "--device", "cpu",
                      "--tiny", "--steps", "3", "--warmup", "1", *(f"--set={s}" for s in sets)])
    assert rc == 0
    rec = json.loads((run / "run.json").read_text())
    assert rec["status"] == "done" and rec["label"].startswith(standin.LABEL) and rec["sets"] == sets
    assert rec["versions"]["torchtune"] and rec["data"]["rows"] == 12
    # 3 steps x 2 micro-batches x 2 rows need 12 rows: the 12 are repeated (ceil(12/12) + 1)
    assert rec["data_repeat"] == 2
    steps = anchor_run.read_steps(run / "steps.jsonl")
    assert [s["step"] for s in steps] == [1, 2, 3]
    for s in steps:
        assert s["micro_batches"] == 2 and len(s["shapes"]) == 2
        assert s["tokens_padded"] == sum(b * n for b, n in s["shapes"]) >= s["tokens_real"] > 0
        if workload.endswith("packed"):
            assert all(n == 64 for _, n in s["shapes"])
    parsed = anchor_run.parse(run)
    assert parsed.n_steady == 2 and parsed.tokens_per_s_padded > 0
    assert "torchtune.models.llama3_1.lora_llama3_1" in (run / "config.yaml").read_text()


def test_runner_profiles_steps_after_the_reported_ones_tiny_cpu(tmp_path):
    """--profile-steps: 1 step more under the profiler unmeasured, 1 profiled, after the 3 reported; profile.json in the
    launcher's format (on CPU: no GPU kernels), and the parser's steady steps leave the profiled ones out."""
    pytest.importorskip("torchtune")
    pytest.importorskip("torchdata")
    from experiments.anchors import tt_run
    from experiments.offline.dummy import qwen_tiktoken_path

    try:
        tiktoken_file = qwen_tiktoken_path()
    except InputError:
        pytest.skip("qwen.tiktoken (dashscope) is not installed")
    data = tmp_path / "data"
    standin.write_standin_tokenizer(data / "tokenizer.model", tiktoken_file)
    rows = [{"instruction": f"Say {i} words.", "input": "", "output": "word " * (i % 5 + 1)} for i in range(12)]
    (data / standin.DATA_FILE).write_text(json.dumps(rows))
    run = tmp_path / "run"
    sets = ["batch_size=1", "gradient_accumulation_steps=1", "tokenizer.max_seq_len=64"]
    rc = tt_run.main(["--workload", "milabench-llm-lora-single", "--out", str(run), "--data", str(data), "--device",
                      "cpu", "--tiny", "--steps", "3", "--warmup", "1", "--profile-steps", "1",
                      *(f"--set={s}" for s in sets)])
    assert rc == 0
    rec = json.loads((run / "run.json").read_text())
    assert rec["steps_total"] == 5 and rec["profile"]["excluded_steps"] == [4, 5]
    prof = json.loads((run / "profile.json").read_text())
    assert [(s["step"], bool(s.get("warmup"))) for s in prof["steps"]] == [(4, True), (5, False)]
    parsed = anchor_run.parse(run)
    assert parsed.steady_steps == (2, 3) and parsed.profile is not None and parsed.steps_logged == 5


def test_peak_is_the_highest_of_torchtunes_per_log_peaks(tmp_path):
    """torchtune resets the CUDA peak at every log, so run.json's end-of-run peak (30.5) misses the earlier steps'."""
    steps = [dict(s, peak_memory_alloc=p) for s, p in zip(STEPS, (12.0, 34.9, 20.0, 15.0))]
    assert anchor_run.parse(_write_run(tmp_path / "run", steps)).peak_allocated_gib == 34.9


def test_the_committed_no_checkpointing_run_peaks_twice_the_checkpointed_one():
    """The H100 runs of the torchtune README workload (call 25): activation checkpointing off peaks at 34.96 GiB in
    torchtune's own per-log figures, on 17.40 GiB; run.json's end-of-run figure said 15.19 for both."""
    root = Path(__file__).resolve().parents[1] / "results" / "anchors" / "h100"
    off = anchor_run.parse(next((root / "torchtune-readme-8b-lora-packed-no-ac").iterdir()))
    on = anchor_run.parse(root / "torchtune-readme-8b-lora-packed" / "20261206T032551Z-243730")
    assert off.peak_allocated_gib == pytest.approx(34.9589, abs=1e-4)
    assert on.peak_allocated_gib == pytest.approx(17.3993, abs=1e-4)
