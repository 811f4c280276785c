"""Header section: what the report is, where its runs come from, and what each label on its numbers means."""
from __future__ import annotations

import datetime as dt
import subprocess

from analysis.core import hardware, paths
from analysis.judge import published as P
from analysis.present.report.context import Context
from analysis.present.report.html import e, join, style


def label_meanings(ctx: Context) -> list[tuple[str, str]]:
    """What each label means, in the words the report prints (analysis.parse.results.labels makes the labels)."""
    epoch_steps = P.epoch(ctx.pub)["steps"]
    return [
        ("dummy weights", "random weights with the exact Qwen2.5-7B-Instruct shapes and the real tokenizer "
         "(experiments/dummy.py): step time, throughput and memory are what the real model gives; loss and "
         "accuracy are meaningless."),
        ("offline data samples", "local copies of the recipe's three datasets (alpaca-gpt4-data-zh/en, "
         "self-cognition, #500 each) turned into what ms-swift makes of the hub datasets "
         "(experiments/localdata.yaml); the hosts here cannot reach ModelScope or Hugging Face."),
        ("cut run", "--max_steps N: the run stops after N optimizer steps instead of one epoch"
         + (f" ({epoch_steps} steps)" if epoch_steps else "") + "; speed and memory come from the steps that ran, "
         "convergence does not cover an epoch."),
        ("forced hw label", "FORCE=1: the GPU did not match the hardware label (its NVML name is given); the "
         "numbers belong to that GPU, not to the label."),
        ("ms-swift", "the ms-swift version that ran (env.json); the recipe is rendered for it "
         "(experiments/recipes.yaml adaptations)."),
        ("published", "a number printed in the ms-swift hardware article (seeds/ms_swift_hw_test.yaml), "
         "not measured here; only fully legible digits are numbers."),
    ]


def git_commit() -> str | None:
    """The checkout's short commit, marked when it has uncommitted changes; None outside a git checkout."""
    try:
        sha = subprocess.run(["git", "-C", str(paths.ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(paths.ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return (sha + (" (with uncommitted changes)" if dirty else "")) if sha else None


def in_words(names: list[str]) -> str:
    """'a, b and c'."""
    if not names:
        return "none"
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def header(ctx: Context) -> str:
    rows = ctx.matrix
    versions = sorted({(r.env.get("packages") or {}).get("ms-swift") or r.swift_version for r in rows} - {None})
    started = sorted(r.run_status.get("started") for r in rows if r.run_status.get("started"))
    measured_hw = sorted({r.hw for r in rows}, key=ctx.hw_rank)
    meanings = label_meanings(ctx)
    counts: dict[str, int] = {}
    for r in rows:
        for lab in r.labels:
            key = next((k for k, _ in meanings if lab.startswith(k)), lab)
            counts[key] = counts.get(key, 0) + 1
    items = []
    for key, meaning in meanings:
        n = len(ctx.pub) if key == "published" else counts.get(key, 0)
        where = ("rows of the published article" if key == "published"
                 else f"{n} of {len(rows)} runs" if n else "no run here")
        items.append(f"<li><b>{e(key)}</b> ({where}): {e(meaning)}</li>")
    commit = git_commit()
    article_hw = in_words([P.short(h) for h in P.hardware_with(ctx.pub, "ms_per_step")])
    return join([
        style(),
        "<p><b>What this is.</b> swiftbench's comparison of GPUs for LoRA fine-tuning of Qwen2.5-7B-Instruct "
        "with ms-swift: step time, throughput, memory, convergence and GPU utilisation of every run in the "
        f"results folder, beside the numbers the ms-swift hardware article publishes for {e(article_hw)}. Every "
        "number is parsed from committed raw files (results/, seeds/); the notebook that made this page is "
        "<code>report.ipynb</code> next to it.</p>",
        "<ul>"
        f"<li>Report generated: {dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}"
        + (f" from commit {e(commit)}" if commit else "") + "</li>"
        f"<li>Runs: {len(rows)} in <code>{e(ctx.results_dir)}</code> on {e(', '.join(measured_hw) or 'no hardware')}"
        + (f", started {e(started[0][:10])} to {e(started[-1][:10])}" if started else "") + "</li>"
        f"<li>ms-swift version(s) measured: {e(', '.join(versions) or 'unknown')}; the article's version "
        "is illegible in its extracted text (seeds/ms_swift_hw_test.yaml, environment.ms_swift).</li>"
        f"<li>Speedup baseline: {e(ctx.baseline)} ({e(hardware.describe(ctx.baseline))}); where it has "
        "no run (or no tokens/s to compare with), the slowest measured run of each experiment that has one is the "
        "baseline.</li>"
        "</ul>",
        '<div class="sb-box"><p><b>How these numbers were obtained.</b> Every table row and figure carries '
        "the labels of the runs behind it:</p><ul>" + "".join(items) + "</ul>"
        "<p>Step time is the median over the steady-state log intervals (not the first interval, not the "
        "warm-up: the first 10 % of the full epoch's steps, at most 10, the same steps for a full and a cut run; not "
        "an interval with an eval or a checkpoint save, not a profiled step), with a "
        "Student-t 95 % interval of the mean (analysis/measure/steps.py); tokens/s = tokens of the steady steps / "
        "their time, a ratio of sums with a 95 % bootstrap range (counted tokens from tokens.jsonl where the run has "
        "them, else samples per optimizer step x mean tokens per sample of the training set; "
        "analysis/measure/throughput.py); speed-up = the baseline's time / this run's for the same work (paired "
        "step times where both trained the same batches, else the tokens/s ratio; analysis/measure/compare.py); "
        "memory is ms-swift's <code>memory(GiB)</code>, the peak memory torch reserved; MFU = tokens/s x model "
        "FLOPs per token (4 x matmul weights + 6 x trainable) / dense BF16 peak (analysis/measure/flops.py).</p>"
        "</div>",
    ])
