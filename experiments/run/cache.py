"""The run's cache folder outside results/ (checkpoints, ms-swift's copy of the eval split) and resuming from it.

ms-swift writes everything into --output_dir: its log, args.json and TensorBoard events, and also checkpoints
(adapters, optimizer states) and its copy of the eval split, which must never sit in results/ (a SIGKILLed runner
cleans nothing up). So output_dir is a cache folder outside results/ (work_dir), and the names below are links there
into the run folder: the measurements land in results/ as they are written, weights and data never do. An allow
list on purpose: a file written there that is not named here stays in the cache (a new measurement file of the
launcher must be added), so nothing unknown, such as a copy of the data, ever reaches results/.

The runner deletes only the cache folder it derives itself (remove_work_dir): a run.json is data from anywhere.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import re
import shutil
import sys
from pathlib import Path

from experiments.base import runfiles
from experiments.base.runfolder import Run
from experiments.run.folders import experiment_runs, read_status
from experiments.run.spec import CACHE, RunSpec


def drop_weights_and_data(run_dir: Path) -> None:
    """No weights and no training data in results: checkpoints, adapters, optimizer states, and ms-swift's copy of
    the eval split (the data may be licensed content that must not be committed)."""
    for ckpt in run_dir.glob("checkpoint-*"):
        shutil.rmtree(ckpt, ignore_errors=True)
    for name in ("adapter_model.safetensors", "optimizer.pt", "val_dataset.jsonl", "last-checkpoint"):
        (run_dir / name).unlink(missing_ok=True)
    for name in LINKED_DIRS:  # made for ms-swift's links; nothing was written into them
        with contextlib.suppress(OSError):
            (run_dir / name).rmdir()


CHECKPOINTS = CACHE / "checkpoints"


LINKED_FILES = (runfiles.LOGGING, runfiles.ARGS_JSON, runfiles.TOKENS, runfiles.PROFILE_JSON, runfiles.LAUNCH_JSON,
                runfiles.SCHEDULE,
                runfiles.GPM)


LINKED_DIRS = ("runs", "images")


INTERRUPTED = "interrupted"  # the failure reason of a run stopped from outside: it is resumed, not started again


def work_dir(run_dir: Path) -> Path:
    """The run's --output_dir: .cache/checkpoints/<hw>-<experiment>-<run>-<hash of the run folder's path>."""
    run_dir = Path(run_dir).resolve()
    tag = hashlib.sha256(str(run_dir).encode()).hexdigest()[:10]
    return CHECKPOINTS / f"{'-'.join(run_dir.parts[-3:])}-{tag}"


def remove_work_dir(run_dir: Path) -> bool:
    """Delete RUN_DIR's cache folder: the one path the runner ever deletes wholesale, derived by work_dir() and
    checked to be a real folder directly inside CHECKPOINTS after resolving every link. True when it was removed."""
    work = work_dir(run_dir)
    root = CHECKPOINTS.resolve()
    if work.is_symlink() or not work.is_dir() or work.resolve().parent != root:
        return False
    shutil.rmtree(work, ignore_errors=True)
    return True


def link_outputs(work: Path, run_dir: Path) -> None:
    """WORK/<name> -> RUN_DIR/<name> for what belongs in results (a link that exists is replaced)."""
    work.mkdir(parents=True, exist_ok=True)
    for name in LINKED_FILES + LINKED_DIRS:
        target = Path(run_dir).resolve() / name
        if name in LINKED_DIRS:
            target.mkdir(exist_ok=True)
        link = work / name
        if link.is_symlink():
            link.unlink()
        elif link.exists():
            continue
        link.symlink_to(target)


def last_checkpoint(work: Path) -> tuple[Path, int] | None:
    """(folder, step) of the newest complete checkpoint in WORK: transformers writes trainer_state.json last, so a
    checkpoint whose trainer_state.json reads as JSON was written to the end."""
    best = None
    for d in Path(work).glob("checkpoint-*"):
        m = re.fullmatch(r"checkpoint-(\d+)", d.name)
        if not m or d.is_symlink() or (best and int(m[1]) <= best[1]):
            continue
        try:
            json.loads((d / runfiles.TRAINER_STATE).read_text())
        except (OSError, ValueError):
            continue
        best = (d, int(m[1]))
    return best


def find_resumable(spec: RunSpec) -> dict | None:
    """The newest run of SPEC that was interrupted and left a complete checkpoint: {run_dir, checkpoint, step}.
    Interrupted runs without one lose their cache folder (they start again in a new run folder)."""
    for run_dir in reversed(experiment_runs(spec)):
        status = read_status(run_dir)
        if status.get(Run.KEY) != spec.key() or status.get(Run.STATUS) != "failed" \
                or not str(status.get(Run.REASON) or "").startswith((INTERRUPTED, "killed by signal")):
            continue
        work = work_dir(run_dir)  # derived here, never run.json's `work_dir`: a merged tree's run.json names any path
        found = last_checkpoint(work) if work.is_dir() else None
        if found is not None:
            return {"run_dir": run_dir, "checkpoint": str(found[0]), "step": found[1]}
        what = sorted(p.name for p in work.glob("checkpoint-*")) if work.is_dir() else "no cache folder"
        print(f"interrupted run {run_dir} left no complete checkpoint ({what or 'none'}): a new run starts",
              file=sys.stderr, flush=True)
        remove_work_dir(run_dir)
    return None


def trim_torn_tail(path: Path) -> int:
    """Cut a last line that has no newline (a process killed while writing it) off PATH, so that lines appended on a
    resume start on a line of their own; returns the lines left."""
    try:
        with open(path, "rb+") as f:
            data = f.read()
            keep = data.rfind(b"\n") + 1
            if keep < len(data):
                f.truncate(keep)
            return data.count(b"\n")
    except FileNotFoundError:
        return 0
