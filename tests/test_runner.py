"""The runner: run folders, resumption, failure reasons, and a real `swift sft` smoke run on the CPU."""
import json
import os
import subprocess
import sys

import pytest

from analysis.metrics import parse_path
from analysis.tables import speedup_table
from experiments import runner


def test_run_dirs_are_never_reused(tmp_path):
    spec = runner.RunSpec(hw="h200", experiment="seed", results_dir=str(tmp_path))
    dirs = {runner.new_run_dir(spec) for _ in range(3)}
    assert len(dirs) == 3 and all(d.parent == tmp_path / "h200" / "seed" for d in dirs)


def test_complete_runs_are_found_only_for_the_same_inputs(tmp_path):
    spec = runner.RunSpec(hw="h200", experiment="seed", results_dir=str(tmp_path), model="dummy", data="/d",
                          max_steps=30)
    d = runner.new_run_dir(spec)
    runner.write_status(d, status="ok", key=spec.key())
    assert runner.find_complete(spec) == d
    other = runner.RunSpec(**{**spec.__dict__, "max_steps": 40})
    assert runner.find_complete(other) is None


def test_stale_running_run_is_marked_interrupted(tmp_path):
    spec = runner.RunSpec(hw="h200", experiment="seed", results_dir=str(tmp_path))
    d = runner.new_run_dir(spec)
    runner.write_status(d, status="running", key=spec.key(), pid=2**22 + 12345, host="elsewhere")
    assert runner.find_complete(spec) is None
    assert json.loads((d / "run.json").read_text())["reason"].startswith("interrupted")


@pytest.mark.parametrize("rc,tail,timed_out,expect", [
    (1, "RuntimeError: CUDA out of memory. Tried to allocate", False, "OOM"),
    (-9, "", False, "killed by signal 9"),
    (None, "", True, "timeout"),
    (1, "Traceback\nValueError: bad flag --disable_cuda_graph\n", False, "crash (exit code 1): ValueError: bad flag"),
])
def test_failure_reasons(rc, tail, timed_out, expect):
    assert runner._failure_reason(rc, tail, timed_out).startswith(expect)


def test_bad_hardware_name_exits_2(tmp_path):
    p = subprocess.run([sys.executable, "-m", "experiments.runner", "run-all", "--hw", "tpu9"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "unknown hardware 'tpu9'" in p.stderr and p.stderr.count("\n") == 1


@pytest.mark.slow
def test_cpu_smoke_run_all_twice(tmp_path):
    """Real swift sft through run-all, the notebook and the runner on a tiny random Qwen2 model (float32)."""
    from experiments.localdata import make_tiny_local_data

    data = tmp_path / "data"
    make_tiny_local_data(data, n=24)
    results = tmp_path / "results"
    cmd = [sys.executable, "-m", "experiments.runner", "run-all", "--hw", "cpu", "--model", "dummy:tiny",
           "--data", str(data), "--max-steps", "6", "--results", str(results), "--experiments", "seed",
           "--set", "logging_steps=1", "--set", "gradient_accumulation_steps=2", "--no-progress"]
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    (run_dir,) = list((results / "cpu" / "seed").iterdir())
    status = json.loads((run_dir / "run.json").read_text())
    assert status["status"] == "ok" and status["dummy_weights"] and status["offline_data"] and status["max_steps"] == 6
    env_json = json.loads((run_dir / "env.json").read_text())
    assert env_json["hw"] == "cpu" and env_json["gpu_count"] == 0 and env_json["packages"]["ms-swift"] == "4.6.0"
    command = (run_dir / "command.sh").read_text()
    assert "--tuner_type lora" in command and "--split_dataset_ratio 0.01" in command
    assert "--max_steps 6" in command and "export HF_HUB_OFFLINE=1" in command
    assert (run_dir / "sft.ipynb").is_file() and (run_dir / "model_config.json").is_file()
    assert not list(run_dir.glob("checkpoint-*")) and not (run_dir / "val_dataset.jsonl").exists()
    m = parse_path(run_dir)[0]
    assert m["complete"] and m["global_steps"] == 6 and m["swift_version"] == "4.6.0"
    assert m["per_device_batch"] == 1 and m["grad_accum"] == 2 and m["samples_per_step"] == 2
    assert m["step_time_s"]["n_intervals"] >= 3 and m["step_time_s"]["median"] > 0
    assert m["tokens_per_s"] == pytest.approx(m["train_tokens_mean"] * 2 / m["step_time_s"]["median"])
    assert len(m["train_loss"]) == 6 and m["final_eval_loss"] is not None
    df = speedup_table(results)
    row = df[(df.hw == "cpu") & (df.source == "measured")].iloc[0]
    assert "dummy weights" in row.labels and "cut run (6 steps)" in row.labels

    second = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert second.returncode == 0 and "skip" in second.stderr
    assert len(list((results / "cpu" / "seed").iterdir())) == 1
