"""Run folders: run.json read and written atomically, the runs of an experiment, the complete one, a new folder.

A folder is never reused: its name is the start time and the host id, so trees made on two machines merge.
"""
from __future__ import annotations

import datetime as dt
import functools
import json
import os
import socket
from pathlib import Path

from experiments.base import runfiles, userfiles
from experiments.base.runfolder import Fingerprint, Run
from experiments.run import reaper
from experiments.run.spec import RunSpec


def read_status(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / runfiles.RUN_JSON).read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def write_status(run_dir: Path, **changes) -> dict:
    """Update run.json atomically (a reader never sees half a file; a full disk leaves the old one and no temporary
    file, and is bad input naming run.json)."""
    status = {**read_status(run_dir), **changes}
    userfiles.write_atomic(run_dir / runfiles.RUN_JSON, json.dumps(status, indent=2, default=str))
    return status


def _pid_alive(pid: int | None, host: str | None) -> bool:
    if not pid or host != socket.gethostname():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def run_alive(status: dict) -> bool:
    """Is the process that runs this run still there? Its runner (run.json `runner`), else its kernel (`pid`), each
    told apart from a later process with the same pid by its start time where run.json has it (pids wrap around
    within minutes on a busy host)."""
    if status.get(Run.HOST) != socket.gethostname():
        return False
    runner = status.get("runner") or {}
    if runner.get("pid") and runner.get("started") is not None:
        return reaper.alive(runner["pid"], runner["started"])
    if status.get("pid_started") is not None:
        return reaper.alive(status.get(Run.PID), status["pid_started"])
    return _pid_alive(status.get(Run.PID), status.get(Run.HOST))


def experiment_runs(spec: RunSpec) -> list[Path]:
    folder = Path(spec.results_dir) / spec.hw / spec.experiment
    return sorted(p for p in folder.glob("*") if (p / runfiles.RUN_JSON).is_file()) if folder.is_dir() else []


def find_complete(spec: RunSpec) -> Path | None:
    """The newest run of this spec that finished ok, else None. Stale 'running' runs are marked failed."""
    found = None
    for run_dir in experiment_runs(spec):
        status = read_status(run_dir)
        if status.get(Run.STATUS) == "running" and not run_alive(status):
            write_status(run_dir, status="failed", reason="interrupted (its process is gone)")
            continue
        if status.get(Run.STATUS) == "ok" and status.get(Run.KEY) == spec.key() and made_here(run_dir):
            found = run_dir
    return found


@functools.lru_cache(maxsize=1)
def _this_host_id() -> str | None:
    from experiments.record import host

    try:
        return host.fingerprint()[Fingerprint.HOST_ID]
    except Exception:  # noqa: BLE001 - no fingerprint: every earlier run counts, as before host ids
        return None


def made_here(run_dir: Path) -> bool:
    """Whether RUN_DIR was made on this host (env.json's host id), so that it can stand for a run made now: a
    host-bound step moves with the host, and a ratio (a scaling efficiency, a speed-up) wants both runs from one
    host. Unknown on either side (runs from before host ids, no fingerprint here): it counts."""
    here = _this_host_id()
    if here is None:
        return True
    theirs = runfiles.host_id(runfiles.read_env_raw(run_dir))
    return theirs is None or theirs == here


def is_oom_status(status: dict) -> bool:
    return status.get(Run.STATUS) == "failed" and str(status.get(Run.REASON) or "").startswith("OOM")


def find_finished(spec: RunSpec) -> tuple[Path, str] | None:
    """(run folder, 'ok' | 'oom') of the newest run of this spec that trained or ran out of memory, else None.

    For claims experiments an OOM is a result (a capacity probe, GC off at bs16), not something to re-run."""
    found = None
    done = find_complete(spec)  # also marks stale 'running' runs as interrupted
    for run_dir in experiment_runs(spec):
        status = read_status(run_dir)
        if status.get(Run.KEY) != spec.key():
            continue
        if run_dir == done:
            found = (run_dir, "ok")
        elif is_oom_status(status):
            found = (run_dir, "oom")
    return found


def new_run_dir(spec: RunSpec) -> Path:
    """A fresh folder; an existing one is never reused. Its name ends in the host id (env.json's), so trees made on
    two machines merge without a collision (swiftbench tables A B, make fleet-collect)."""
    from experiments.record import host

    base = Path(spec.results_dir) / spec.hw / spec.experiment
    base.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S") + (f"-{spec.layout}" if spec.layout else "")
    hid = host.fingerprint()[Fingerprint.HOST_ID]
    stamp += f"-{hid}" if hid else ""
    for n in range(1000):
        run_dir = base / (stamp if n == 0 else f"{stamp}-{n}")
        try:
            run_dir.mkdir()
            return run_dir
        except FileExistsError:
            continue
    raise RuntimeError(f"no free run folder under {base}")
