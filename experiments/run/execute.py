"""Running the training: swift sft (or the launcher) under the supervisor, NVML sampling, progress, a time limit,
and the reason a run failed.
"""
from __future__ import annotations

import datetime as dt
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

from experiments.base import runfiles
from experiments.base.runfolder import Resume, Run
from experiments.record import gpu
from experiments.run import reaper
from experiments.run.cache import INTERRUPTED, drop_weights_and_data, remove_work_dir
from experiments.run.folders import read_status, write_status
from experiments.run.spec import OOM_PATTERNS, ROOT, RunSpec

# what the supervisor prints when it stops a training whose runner (or notebook kernel) is gone
# (experiments/run/reaper.py)
REAPER_STOP = re.compile(r"^reaper: (.+): stopping the training", re.M)


def failure_reason(rc: int | None, log_tail: str, timed_out: bool, runner_gone: int | None = None) -> str:
    """Why a training ended badly. A training its supervisor stopped because the runner died (RUNNER_GONE: the dead
    runner's pid, as this kernel sees it; else the supervisor's line in the log) is interrupted, whatever exit code
    ms-swift then gave (a SIGKILLed runner whose kernel outlived it: the run is resumed, not failed)."""
    if timed_out:
        return "timeout"
    if runner_gone is not None:
        return f"{INTERRUPTED} (the runner {runner_gone} is gone)"
    if any(p in log_tail for p in OOM_PATTERNS):
        return "OOM: CUDA out of memory"
    stopped = REAPER_STOP.search(log_tail)
    if stopped:
        return f"{INTERRUPTED} (the supervisor stopped the training: {stopped[1]})"
    if rc is not None and rc < 0:
        return f"killed by signal {-rc}"
    last = [ln for ln in log_tail.splitlines() if ln.strip()]
    err = next((ln for ln in reversed(last) if re.search(r"(Error|Exception)\b", ln)), last[-1] if last else "")
    return f"crash (exit code {rc}): {err.strip()[:300]}"


def progress_from_log(log: Path, seen: int) -> tuple[int, int | None, int]:
    """(latest step, max steps, lines read) from logging.jsonl as it grows."""
    step, total = 0, None
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()  # a line may be half written
    except OSError:
        return step, total, seen
    for raw in lines[seen:]:
        m = re.search(r'"global_step/max_steps": "(\d+)/(\d+)"', raw)
        if m:
            step, total = int(m.group(1)), int(m.group(2))
    return step, total, len(lines)


def swift_argv(argv: list[str]) -> list[str]:
    """Run `swift` from the interpreter's own environment (a venv's bin is often not on a kernel's PATH)."""
    if argv[0] != "swift":
        return argv
    beside = Path(sys.executable).parent / "swift"
    if beside.is_file():
        return [str(beside), *argv[1:]]
    return [sys.executable, "-m", "swift.cli.main", *argv[1:]]


def execute(ctx: dict, progress: bool = True, lib=None) -> dict:
    """Run swift sft with NVML sampling, a progress bar, a time limit; record ok or failed with the reason."""
    from tqdm.auto import tqdm

    run_dir: Path = ctx["run_dir"]
    spec: RunSpec = ctx["spec"]
    env = {**os.environ, **ctx["env"], "PYTHONUNBUFFERED": "1"}
    argv = swift_argv(ctx["argv"])
    if ctx.get("launch_argv"):  # `python -m experiments.launch` must find this repository from any cwd
        argv = ctx["launch_argv"]
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    elif ctx.get("plain_sh"):  # the printed command through bash; its `swift` is this interpreter's (a venv's bin)
        argv = ["bash", ctx["plain_sh"]]
        env["PATH"] = os.pathsep.join(p for p in (str(Path(sys.executable).parent), env.get("PATH")) if p)
    log = run_dir / runfiles.LOGGING
    t0 = time.monotonic()
    timed_out = False
    bar = tqdm(total=spec.max_steps or None, desc=f"{spec.hw}/{spec.experiment}", unit="step", disable=not progress)
    resume = ctx.get("resume")
    if resume and (run_dir / runfiles.NVML_CSV).is_file():  # the interrupted attempt's samples stay beside the new ones
        attempts = len(read_status(run_dir).get(Run.RESUMES) or [])
        os.replace(run_dir / runfiles.NVML_CSV, run_dir / f"nvml.{attempts}.csv")
    sampler = gpu.Sampler(run_dir / runfiles.NVML_CSV, lib=lib)
    with (run_dir / runfiles.STDOUT).open("a" if resume else "w") as out, sampler:
        t_wall = time.time()
        proc = _start_supervised(argv, out, env)
        write_status(run_dir, training=_training_info(proc.pid))
        seen = resume[Resume.LOG_LINES_BEFORE] if resume else 0  # a resume's first step is the first line after these
        try:
            while proc.poll() is None:
                time.sleep(0.25 if resume and "first_step_s" not in resume else 2)
                step, total, seen = progress_from_log(log, seen)
                if resume and "first_step_s" not in resume and step > resume["step"]:
                    _record_first_resumed_step(run_dir, log, step, t_wall, resume)
                if total and bar.total != total:
                    bar.total = total
                if step > bar.n:
                    bar.update(step - bar.n)
                if spec.timeout_s and time.monotonic() - t0 > spec.timeout_s:
                    timed_out = True
                    reaper.stop_group(proc.pid, grace_s=30, root=proc.pid)
        except BaseException:
            reaper.stop_group(proc.pid, grace_s=10, root=proc.pid)
            drop_weights_and_data(run_dir)  # an interrupted run is kept, but never with weights or data
            write_status(run_dir, status="failed", reason=INTERRUPTED)
            raise
    rc = proc.wait()
    bar.close()
    wall = time.monotonic() - t0
    tail = (run_dir / runfiles.STDOUT).read_text(errors="replace")[-20000:]
    ok = rc == 0 and not timed_out and log.is_file() and '"log_history"' in log.read_text(encoding="utf-8")[-2_000_000:]
    drop_weights_and_data(run_dir)
    runner = runner_info().get("runner")
    gone = runner["pid"] if runner and not reaper.alive(runner["pid"], runner["started"]) else None
    reason = None if ok else failure_reason(rc, tail, timed_out, runner_gone=gone)
    if not str(reason or "").startswith(INTERRUPTED):  # finished or failed for good: nothing to resume from
        remove_work_dir(run_dir)
    return write_status(run_dir, status="ok" if ok else "failed", reason=reason, returncode=rc,
                        wall_s=round(wall, 1), nvml_rows=sampler.rows,
                        finished=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))


RUNNER_ENV = "SWIFTBENCH_RUNNER"  # "<pid>:<start time>" of the run-all process, for the kernel it starts


REAPER = Path(__file__).resolve().parent / "reaper.py"


def runner_info() -> dict:
    """run.json's `runner`: the run-all process that owns this run (what the orphan check asks about)."""
    pid, _, started = os.environ.get(RUNNER_ENV, "").partition(":")
    if not pid.isdigit():
        return {}
    return {"runner": {"pid": int(pid), "started": int(started) if started.isdigit() else None}}


def _start_supervised(argv: list[str], out, env: dict) -> subprocess.Popen:
    """ARGV under experiments/run/reaper.py, the leader of a new session and process group that takes the whole
    training down when this process (the kernel) or the runner dies (a SIGKILLed runner cannot do it itself)."""
    watch = []
    runner = runner_info().get("runner")
    if runner:
        watch = ["--watch", f"{runner['pid']}:{runner['started']}" if runner["started"] else str(runner["pid"])]
    return subprocess.Popen([sys.executable, str(REAPER), "--grace", "20", *watch, "--", *argv], stdout=out,
                            stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _training_info(pid: int) -> dict:
    """run.json's `training`: the supervisor, leader of the training's process group (pgid = pid), and what tells
    this process apart from a later one with the same pid (its start time, this boot)."""
    return {"pid": pid, "pgid": pid, "started": reaper.start_time(pid), "host": socket.gethostname(),
            "boot_id": reaper.boot_id()}


def _record_first_resumed_step(run_dir: Path, log: Path, step: int, t_wall: float, resume: dict) -> None:
    """Seconds from the resumed process's start to the log line of its first step (the line's write time: the log
    file's mtime when the runner sees it, polled every 0.25 s until then), into the resume's entry in run.json."""
    try:
        written = log.stat().st_mtime
    except OSError:
        written = time.time()
    resume["first_step_s"] = round(max(written, t_wall) - t_wall, 2)
    status = read_status(run_dir)
    resumes = status.get(Run.RESUMES) or [{}]
    resumes[-1] = {**resumes[-1], "first_step": step, "first_step_s": resume["first_step_s"],
                   "first_step_seen_s": round(time.time() - t_wall, 2)}
    write_status(run_dir, resumes=resumes)
