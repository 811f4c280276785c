"""The recommended recipe's printed command, pasted into bash as a user would, trains: on the CPU with the tiny
random model and local data, `"$(swiftbench plugin)"` evaluated by the shell, no launcher. Flags that need a GPU are
set as the CPU can run them, and said so: Liger's Triton kernels off (--use_liger_kernel false), FlexAttention (no
backward on a CPU) replaced by SDPA's packed-row mask, float32 (bf16 is refused on a CPU)."""
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from committed import committed_results

from analysis.judge.answer import recommend
from analysis.parse.results import collect
from experiments.offline.localdata import make_tiny_local_data
from experiments.recipes import recipes
from experiments.run import prepare as run_prepare
from experiments.run import spec as run_spec

REPO = Path(__file__).resolve().parents[1]
GPU_ONLY = {"use_liger_kernel": "false", "torch_dtype": "float32"}  # what a CPU cannot run as printed


def _line_flag(line: str) -> str | None:
    text = line.strip().rstrip("\\").strip()
    return text.split()[0][2:] if text.startswith("--") else None


def cpu_command(printed: str, model: str, data: Path, out: Path) -> str:
    """PRINTED with the hub model and datasets replaced by local ones, the GPU-only flags set for a CPU, and a cut of
    3 steps; every other line (the plugin's among them) exactly as printed."""
    lines = printed.splitlines()
    files = [f"{data / name}#24" for name in ("alpaca-gpt4-zh.json", "alpaca-gpt4-en.json", "self-cognition.jsonl")]
    replace = {"model": shlex.join(["--model", model]), "dataset": shlex.join(["--dataset", *files]),
               "output_dir": shlex.join(["--output_dir", str(out)]),
               **{k: f"--{k} {v}" for k, v in GPU_ONLY.items()}}
    if "--attn_impl flex_attention" in printed:
        replace["attn_impl"] = "--attn_impl sdpa"
    kept = []
    for line in lines:
        flag = _line_flag(line)
        kept.append(f"  {replace[flag]} \\" if flag in replace else line)
    extra = "  --max_steps 3 --check_model false --dataloader_num_workers 0 --logging_steps 1 --add_version false"
    kept[-1] = kept[-1] + " \\"
    return "\n".join(kept + [extra])


@pytest.mark.slow
def test_the_printed_recommended_command_trains_with_padding_free_rows(tmp_path):
    rec = recommend.recommend(collect(committed_results()))
    assert rec.command and rec.command.startswith("swift sft") and "experiments.launch" not in rec.command
    data = tmp_path / "data"
    make_tiny_local_data(data, n=24)
    model, _, _ = run_prepare.resolve_model(run_spec.DUMMY_TINY, "cpu")
    out = tmp_path / "out"
    command = cpu_command(rec.command, str(model), data, out)
    assert f"--external_plugins {recipes.PLUGIN_SHELL}" in command  # the plugin line as printed
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}:{os.environ.get('PATH', '')}", "TOKENIZERS_PARALLELISM": "false",
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "MODELSCOPE_OFFLINE": "1"}
    p = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env, timeout=900, cwd=tmp_path)
    assert p.returncode == 0, (command, p.stdout[-3000:], p.stderr[-3000:])
    args = json.loads((out / "args.json").read_text())
    assert args["padding_free"] is True and args["attn_impl"] == "sdpa"  # ms-swift accepted it: the plugin
    assert args["external_plugins"] == [str(REPO / "experiments" / "recipes" / "swift_plugin.py")]
    printed_callbacks = shlex.split(next(x for x in rec.command.splitlines() if "--callbacks" in x).rstrip("\\"))[1:]
    assert args["callbacks"][:len(printed_callbacks)] == printed_callbacks
    losses = [json.loads(x) for x in (out / "logging.jsonl").read_text().splitlines()]
    assert len([x for x in losses if "loss" in x and "eval_loss" not in x]) == 3
    assert "swiftbench plugin: sdpa_no_cudnn" in p.stdout + p.stderr or "sdpa_no_cudnn" not in printed_callbacks
