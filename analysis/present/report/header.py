"""Header section: what the report is, which run folders it read and used (and why not the others), and, folded
under the answer, what each label on its numbers means."""
from __future__ import annotations

import datetime as dt
import subprocess

from analysis.judge.answer import published as P
from analysis.judge.answer.run_use import run_use
from analysis.present.report.context import Context
from analysis.present.report.html import e, join, style
from experiments.base import paths
from experiments.base.runfolder import Env, Run

# why a run folder is not behind the report's numbers, in the order the header lists them
NOT_USED = {
    "OOM": "ran out of GPU memory (only the capacity probes use them: what does not fit)",
    "interrupted": "killed or timed out before the end",
    "failed": "crashed before training",
    "superseded": "a shorter or older run of the same experiment, GPU and host (only in Run-to-run spread and the "
                  "loss figure)",
}


def label_meanings(ctx: Context) -> list[tuple[str, str]]:
    """What each label means, in the words the report prints (analysis.parse.results.labels makes the labels)."""
    epoch_steps = P.epoch(ctx.pub).steps
    return [
        ("dummy weights", "random weights with the exact Qwen2.5-7B-Instruct shapes and the real tokenizer "
         "(experiments/offline/dummy.py): step time, throughput and memory are what the real model gives; loss and "
         "accuracy are meaningless."),
        ("offline data samples", "local copies of the recipe's three datasets (alpaca-gpt4-data-zh/en, "
         "self-cognition, #500 each) turned into what ms-swift makes of the hub datasets "
         "(experiments/offline/localdata.yaml); the hosts here cannot reach ModelScope or Hugging Face."),
        ("cut run", "--max_steps N: the run stops after N optimizer steps instead of one epoch"
         + (f" ({epoch_steps} steps)" if epoch_steps else "") + "; speed and memory come from the steps that ran, "
         "convergence does not cover an epoch."),
        ("forced hw label", "FORCE=1: the GPU did not match the hardware label (its NVML name is given); the "
         "numbers belong to that GPU, not to the label."),
        ("ms-swift", "the ms-swift version that ran (env.json); the recipe is rendered for it "
         "(experiments/recipes/recipes.yaml adaptations)."),
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


def runs_line(ctx: Context) -> str:
    """'50 run folders read in results/, 36 used; not used: 7 OOM (...), ...'."""
    use = run_use(ctx.records)
    why = [f"<b>{len(v)} {e(k)}</b> ({e(NOT_USED[k])})" for k, v in use.not_used() if v]
    roots = ctx.results_dir if isinstance(ctx.results_dir, (tuple, list)) else [ctx.results_dir]
    where = ", ".join(f"<code>{e(paths.relative(r))}</code>" for r in roots)
    return (f"<b>{len(ctx.records)} run folders</b> read in {where}, "
            f"<b>{len(use.used)} used</b>" + ("; not used: " + "; ".join(why) if why else "") + ".")


def header(ctx: Context) -> str:
    versions = sorted({v for r in ctx.records
                       if (v := (r.env.get(Env.PACKAGES) or {}).get("ms-swift") or r.swift_version) is not None})
    started = sorted(s for r in ctx.records if (s := r.run_status.get(Run.STARTED)))
    # a class is measured by this project's runs; an imported log's GPU is its owner's word ("Your runs")
    measured_hw = sorted({r.hw for r in ctx.records if r.hw and not r.run_status.get(Run.IMPORTED)}, key=ctx.hw_rank)
    yours = sorted({r.hw for r in ctx.records if r.hw and r.run_status.get(Run.IMPORTED)}, key=ctx.hw_rank)
    commit = git_commit()
    article_hw = in_words([P.short(h) for h in P.hardware_with(ctx.pub, "ms_per_step")])
    return join([
        style(),
        '<ul class="sb-head">'
        f"<li>{runs_line(ctx)}</li>"
        f"<li>Measured on {e(', '.join(measured_hw) or 'no hardware')}"
        + (f" (imported logs, their GPU as their owner says: {e(', '.join(yours))})" if yours else "")
        + (f" from {e(started[0][:10])} to {e(started[-1][:10])}" if started else "")
        + f"; ms-swift version(s) measured: {e(', '.join(versions) or 'unknown')} (the article's is illegible); "
        f"beside the figures the ms-swift hardware article publishes for {e(article_hw)}. Generated "
        f"{dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}"
        + (f" from commit {e(commit)}" if commit else "") + " by <code>report.ipynb</code> (next to this page) from "
        "the committed raw files (results/, seeds/).</li></ul>",
    ])


def definitions(ctx: Context) -> str:
    """The labels every row and figure carries, with their meaning and counts, and how each number is defined;
    folded."""
    rows = ctx.matrix
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
    return join([
        '<details class="sb-box"><summary><b>How these numbers were obtained</b>: the labels on every row and figure '
        f"({e(', '.join(k for k, _ in meanings))}) and the definitions of step time, tokens/s, speed-up, memory "
        "and MFU</summary><ul>" + "".join(items) + "</ul>"
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
        "</details>",
    ])
