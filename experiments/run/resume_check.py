"""Kill a real `run-all` during training, run it again, and record what the resume did (seed 001's claim that
resuming from a checkpoint takes at most 10 s).

    python -m experiments.run.resume_check --hw h200 --model dummy --data ../shared/data --experiment bs16 \
        --max-steps 40 --save-steps 10 --kill-at 25 [--signal KILL] [--results results]

1. starts `python -m analysis.cli run-all --hw HW --experiments EXPERIMENT --max-steps N --set save_steps=S ...`;
2. when logging.jsonl has a training line of step >= KILL_AT (so a checkpoint at a multiple of S below it is
   complete), sends SIGNAL to the runner process alone (KILL: nothing of it can clean up);
3. checks the process table: no process the runner started (they carry its pid in SWIFTBENCH_RUNNER) may be left
   after 60 s, and results/ must hold no weights;
4. runs the same run-all again, which resumes the run folder from its last checkpoint;
5. writes resume_check.json into the run folder and prints it: run.json's resume record (`first_step_s`: seconds from
   the resumed process's start to its first step's log line; `first_step_since_train_begin_s`: the same step from
   the trainer's start, after the model and the checkpoint are loaded, by the line's own speed), and every step both
   attempts logged with its loss before the kill (the uninterrupted training up to there) and after the resume.
Exit status 0 when nothing was left behind, no weights are in results/, and the second run-all resumed and finished.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from experiments.base import runfiles
from experiments.base.runfolder import Resume, Run
from experiments.base.runfolder import ResumeCheck as Check

ROOT = Path(__file__).resolve().parents[2]
WEIGHTS = ("checkpoint-", "optimizer.pt", "adapter_model", "val_dataset.jsonl", "rng_state", "scheduler.pt",
           "training_args.bin", "last-checkpoint")


def left_behind(runner_pid: int) -> list[str]:
    """Live processes whose environment names RUNNER_PID as their runner (the kernel, supervisor, swift, workers)."""
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            env = Path(f"/proc/{entry.name}/environ").read_bytes()
            state = Path(f"/proc/{entry.name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state != b"Z" and f"SWIFTBENCH_RUNNER={runner_pid}:".encode() in env:
            cmd = Path(f"/proc/{entry.name}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            out.append(f"{entry.name} {cmd[:160]}")
    return out


def logged_steps(log: Path) -> list[dict]:
    out = []
    for raw in log.read_text(errors="replace").splitlines() if log.is_file() else []:
        try:
            d = json.loads(raw)
        except ValueError:
            continue
        if isinstance(d, dict) and "loss" in d and "global_step/max_steps" in d:
            out.append(d)
    return out


def _runner_of(run_dir: Path) -> int | None:
    try:
        return (json.loads((run_dir / runfiles.RUN_JSON).read_text()).get("runner") or {}).get("pid")
    except (OSError, ValueError):
        return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.run.resume_check", description=__doc__.splitlines()[0])
    p.add_argument("--hw", required=True)
    p.add_argument("--experiment", default="bs16")
    p.add_argument("--model", default="dummy")
    p.add_argument("--data", default=None)
    p.add_argument("--max-steps", type=int, default=40)
    p.add_argument("--save-steps", type=int, default=10)
    p.add_argument("--kill-at", type=int, default=25, help="kill once a training line of this step is logged")
    p.add_argument("--signal", default="KILL", choices=["KILL", "TERM", "INT"])
    p.add_argument("--results", default="results")
    p.add_argument("--set", action="append", default=[], metavar="FLAG=VALUE", help="more swift flags (run-all --set)")
    a = p.parse_args(argv)
    cmd = [sys.executable, "-m", "analysis.cli", "run-all", "--hw", a.hw, "--model", a.model, "--experiments",
           a.experiment, "--max-steps", str(a.max_steps), "--results", a.results, "--set",
           f"save_steps={a.save_steps}", *[x for s in a.set for x in ("--set", s)], "--no-progress",
           *(["--data", a.data] if a.data else [])]
    folder = Path(a.results) / a.hw / a.experiment
    first = subprocess.Popen(cmd, cwd=ROOT)
    run_dir, step = None, 0
    while step < a.kill_at:
        if first.poll() is not None:
            print(f"resume_check: run-all ended (exit {first.returncode}) before step {a.kill_at}", file=sys.stderr)
            return 1
        if run_dir is None:  # the run folder this runner works in (run.json names it as the run's `runner`)
            run_dir = next((d for d in sorted(folder.glob("*")) if _runner_of(d) == first.pid), None)
        steps = logged_steps(run_dir / runfiles.LOGGING) if run_dir else []
        step = max((int(d["global_step/max_steps"].split("/")[0]) for d in steps), default=0)
        time.sleep(0.5)
    t_kill = time.time()
    os.kill(first.pid, getattr(signal, f"SIG{a.signal}"))
    first.wait()
    deadline = time.monotonic() + 60
    while (left := left_behind(first.pid)) and time.monotonic() < deadline:
        time.sleep(0.5)
    left_s = round(time.time() - t_kill, 1)
    weights = [str(x) for x in Path(a.results).rglob("*") if x.name.startswith(WEIGHTS)]
    second = subprocess.run(cmd, cwd=ROOT)
    assert run_dir is not None  # the loop above left it only after steps were logged there
    status = json.loads((run_dir / runfiles.RUN_JSON).read_text())
    resume = (status.get(Run.RESUMES) or [None])[-1]
    lines = [json.loads(x) for x in (run_dir / runfiles.LOGGING).read_text().splitlines() if x.strip()]
    cut = resume[Resume.LOG_LINES_BEFORE] if resume else len(lines)

    def losses(part):
        return {int(d["global_step/max_steps"].split("/")[0]): d["loss"] for d in part
                if isinstance(d, dict) and "loss" in d and "global_step/max_steps" in d}

    old, new = losses(lines[:cut]), losses(lines[cut:])
    report = {
        Check.COMMAND: cmd, Check.RUN_DIR: str(run_dir), Check.SIGNAL: f"SIG{a.signal}", Check.KILLED_AFTER_STEP: step,
        Check.LEFT_BEHIND: left, Check.LEFT_BEHIND_CHECKED_AFTER_S: left_s, Check.WEIGHTS_IN_RESULTS: weights,
        Check.SECOND_EXIT: second.returncode, Check.STATUS: status.get(Run.STATUS), Check.RESUME: resume,
        Check.REPEATED_STEPS: [{Check.STEP: s, Check.LOSS_BEFORE_KILL: old[s], Check.LOSS_AFTER_RESUME: new[s]}
                               for s in sorted(set(old) & set(new))],
        Check.FIRST_RESUMED_STEP: min((s for s in new if resume and s > resume[Resume.FROM_STEP]), default=None),
    }
    first_line = next((d for d in lines[cut:] if isinstance(d, dict) and "loss" in d and "train_speed(s/it)" in d),
                      None)
    if resume and first_line:  # ms-swift's own clock: from the trainer's start (after model and checkpoint load)
        n = int(first_line["global_step/max_steps"].split("/")[0]) - resume[Resume.FROM_STEP]
        report[Check.FIRST_STEP_SINCE_TRAIN_BEGIN_S] = round(float(first_line["train_speed(s/it)"]) * n, 2)
    (run_dir / runfiles.RESUME_CHECK).write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    ok = not left and not weights and second.returncode == 0 and resume is not None and status.get("status") == "ok"
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
