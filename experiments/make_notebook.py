"""Writes experiments/sft.ipynb (the papermill experiment notebook) from the cells below.

Kept as code so the notebook's source is reviewable in diffs; re-run after editing:
`python -m experiments.make_notebook`.
"""
from pathlib import Path

import nbformat as nbf

CELLS = [
    ("markdown", """# swift sft experiment run

One run of one experiment of `experiments/recipes.yaml` on one GPU, executed by papermill from
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
""", ["parameters"]),
    ("code", """import json
from pathlib import Path

import pandas as pd
from IPython.display import Markdown, display

from experiments import runner

spec = runner.RunSpec(hw=hw, experiment=experiment, model=model, data=data or None,
                      max_steps=int(max_steps) or None, results_dir=results_dir, force_hw=bool(force_hw),
                      timeout_s=float(timeout_s) or None, overrides=json.loads(overrides_json))
run_path = Path(run_dir) if run_dir else runner.new_run_dir(spec)
ctx = runner.prepare(spec, run_path)
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
    ("code", """status = runner.execute(ctx)
print(status["status"], status.get("reason") or "", f"({status['wall_s']} s)")"""),
    ("code", """m = runner.summarise(run_path)
if m is not None:
    st = m["step_time_s"]
    display(pd.Series({
        "steps": m["global_steps"], "complete": m["complete"],
        "step time median (s)": st["median"], "95% CI (s)": (st["ci95_low"], st["ci95_high"]),
        "steady intervals": st["n_intervals"], "ms per micro-step": m["micro_step_time_ms"],
        "tokens/s": m["tokens_per_s"], "samples/s": m["samples_per_s"], "peak GiB": m["peak_mem_gib"],
        "MFU": m["mfu"], "final train loss": m["final_train_loss"], "final eval loss": m["final_eval_loss"],
    }).to_frame("metrics"))"""),
    ("code", """import matplotlib.pyplot as plt

fig, axes = plt.subplots(1, 2, figsize=(11, 3.5))
title_note = ", ".join(labels) if labels else "real weights"
if m is not None and m["train_loss"]:
    tl = pd.DataFrame(m["train_loss"], columns=["step", "loss"])
    axes[0].plot(tl.step, tl.loss, label="train")
    if m["eval_loss"]:
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


def build() -> nbf.NotebookNode:
    nb = nbf.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for kind, src, *tags in CELLS:
        cell = nbf.v4.new_markdown_cell(src) if kind == "markdown" else nbf.v4.new_code_cell(src)
        if tags:
            cell.metadata["tags"] = tags[0]
        nb.cells.append(cell)
    return nb


if __name__ == "__main__":
    path = Path(__file__).resolve().parent / "sft.ipynb"
    nbf.write(build(), path)
    print(path)
