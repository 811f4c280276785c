"""Writes experiments/run/sft.ipynb (the papermill experiment notebook) from the cells below.

Kept as code so the notebook's source is reviewable in diffs; re-run after editing:
`python experiments/run/make_notebook.py` (tests/test_notebooks.py fails while the committed notebook is stale).

The notebook runs one experiment through experiments.run (prepare.prepare, execute.execute) and shows the run's metrics
by running `swiftbench parse` in a process of its own: the experiments layer imports no analysis stage.
"""
import sys
from pathlib import Path

import nbformat as nbf

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # a checkout's script: its own packages first
from experiments.base import runfiles  # noqa: E402

CELLS = [
    ("markdown", """# swift sft experiment run

One run of one experiment of `experiments/recipes/recipes.yaml` on one GPU, executed by papermill from
`make run-all`. Everything it measures lands in the run folder (`run.json`, `env.json`, `command.sh`,
`nvml.csv`, `stdout.log`, ms-swift's `logging.jsonl` and `args.json`, and this executed notebook)."""),
    ("code", """# Parameters (papermill overrides these)
hw = "cpu"
experiment = "seed"
model = "Qwen/Qwen2.5-7B-Instruct"
data = ""            # folder of local stand-ins for the hub datasets (empty: the hub ids)
max_steps = 0        # > 0: a cut run
results_dir = "results"
run_dir = ""         # given by the runner (empty: a new folder under results_dir)
force_hw = False
timeout_s = 0
overrides_json = "{}"
launcher_json = ""   # experiments/launch/launcher.py options as JSON (empty: the claims definition's own)
gpus = 1             # data-parallel GPUs (global batch kept: grad-accum divided by this)
parallel = "ddp"     # ddp | zero2 | zero3
plain = False        # the printed command alone (bash command.sh), no launcher
profile = False      # profile two steps (recipes.yaml `profile`)
""", ["parameters"]),
    ("code", """import json
from pathlib import Path

import pandas as pd
from IPython.display import Markdown, display

from experiments.run import execute, folders, prepare, spec as run_spec

spec = run_spec.RunSpec(hw=hw, experiment=experiment, model=model, data=data or None,
                      max_steps=int(max_steps) or None, results_dir=results_dir, force_hw=bool(force_hw),
                      timeout_s=float(timeout_s) or None, overrides=json.loads(overrides_json),
                      launcher=json.loads(launcher_json) if launcher_json else None,
                      gpus=int(gpus), parallel=parallel, plain=bool(plain),
                      profile=bool(profile))
run_path = Path(run_dir) if run_dir else folders.new_run_dir(spec)
ctx = prepare.prepare(spec, run_path)
labels = [k for k, v in [("dummy weights", ctx["labels"]["dummy_weights"]),
                         ("offline data samples", ctx["labels"]["offline_data"]),
                         (f"cut run ({spec.max_steps} steps)", spec.max_steps),
                         ("FORCED hardware label", ctx["labels"]["forced_hw"])] if v]
display(Markdown(f"**{hw} / {experiment}** in `{run_path}` — ms-swift {ctx['labels']['swift_version']}"
                 + (" — " + ", ".join(labels) if labels else "")))
print((run_path / "command.sh").read_text())"""),
    ("code", """env = json.loads((run_path / "env.json").read_text())
pd.Series({k: env[k] for k in ("gpu_name", "gpu_count", "gpu_memory_mib", "driver", "cuda_driver", "cuda_torch",
                               "cpu_model", "cpu_count", "ram_gib", "python")}
          | {f"pkg {k}": v for k, v in env["packages"].items() if v}).to_frame("environment")"""),
    ("code", """status = execute.execute(ctx)
print(status["status"], status.get("reason") or "", f"({status['wall_s']} s)")"""),
    ("code", """import subprocess
import sys


def swiftbench_parse(*extra):
    \"\"\"`swiftbench parse RUN_PATH ...` in its own process; None when it cannot parse the run (the run is recorded
    in run.json either way).\"\"\"
    try:
        return subprocess.run([sys.executable, "-m", "analysis.cli", "parse", str(run_path), *extra],
                              capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"swiftbench parse did not run: {exc}")
        return None


parsed = swiftbench_parse()
if parsed is not None:
    print(parsed.stdout, end="")
    if parsed.returncode != 0:
        print(f"swiftbench parse failed (exit code {parsed.returncode}): {parsed.stderr.strip()[-2000:]}")"""),
    ("code", """import matplotlib.pyplot as plt

m = None  # the run's metrics as JSON (swiftbench parse --json), for the loss curves
as_json = swiftbench_parse("--json")
if as_json is not None and as_json.returncode == 0:
    try:
        m = json.loads(as_json.stdout)[0]
    except (ValueError, IndexError, KeyError):
        m = None
fig, axes = plt.subplots(1, 2, figsize=(11, 3.5))
title_note = ", ".join(labels) if labels else "real weights"
if m is not None and m.get("train_loss"):
    tl = pd.DataFrame(m["train_loss"], columns=["step", "loss"])
    axes[0].plot(tl.step, tl.loss, label="train")
    if m.get("eval_loss"):
        el = pd.DataFrame(m["eval_loss"], columns=["step", "loss"])
        axes[0].plot(el.step, el.loss, "o-", label="eval")
    axes[0].set(xlabel="optimizer step", ylabel="loss", title=f"loss ({title_note})")
    axes[0].legend()
nvml_file = run_path / "nvml.csv"
if nvml_file.is_file() and nvml_file.stat().st_size > 100:
    nv = pd.read_csv(nvml_file)
    nv0 = nv[nv.gpu == 0]
    axes[1].plot(nv0.time_s, nv0.util_gpu_pct, label="GPU util %")
    axes[1].plot(nv0.time_s, nv0.power_w / 7, label="power W / 7")
    axes[1].set(xlabel="seconds", title="GPU 0 (NVML, 1 s samples)")
    axes[1].legend()
else:
    axes[1].text(0.5, 0.5, "no NVML samples (no GPU)", ha="center")
fig.tight_layout()"""),
    ("code", """if status["status"] != "ok":
    raise RuntimeError(f"run failed: {status.get('reason')}")"""),
]


NOTEBOOK = Path(__file__).resolve().parent / runfiles.NOTEBOOK


def build() -> nbf.NotebookNode:
    nb = nbf.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for kind, src, *tags in CELLS:
        cell = nbf.v4.new_markdown_cell(src) if kind == "markdown" else nbf.v4.new_code_cell(src)
        if tags:
            cell.metadata["tags"] = tags[0]
        nb.cells.append(cell)
    # Stable cell ids keep the generated file identical from one run to the next (reviewable diffs).
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:02d}"
    return nb


def write(path: str | Path = NOTEBOOK) -> Path:
    """Write the notebook to PATH (default: experiments/run/sft.ipynb); returns the path."""
    path = Path(path)
    nbf.write(build(), path)
    return path


if __name__ == "__main__":
    print(write(sys.argv[1] if len(sys.argv) > 1 else NOTEBOOK))
