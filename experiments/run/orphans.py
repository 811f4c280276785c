"""Stopping: a training an earlier runner left behind (found, reported, or stopped when verified), the current run
on a signal to the runner, and the runner's own death under make.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
import socket
from pathlib import Path
from typing import cast

from experiments.base import runfiles
from experiments.base.errors import InputError
from experiments.base.runfolder import Run
from experiments.run import reaper
from experiments.run.cache import INTERRUPTED, drop_weights_and_data
from experiments.run.folders import read_status, write_status


def _int(value) -> int | None:
    """VALUE when run.json holds a whole number there (a pid, a start time), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _owner_alive(status: dict) -> bool:
    """Is the runner (or, for runs made before run.json named it, the notebook kernel) of a run still alive?"""
    owner = status.get("runner") or {"pid": status.get(Run.PID), "started": status.get("pid_started")}
    return reaper.alive(owner.get("pid"), owner.get("started"))


def find_orphans(results_dir: str | Path) -> list[tuple[Path, dict, str | None]]:
    """(run folder, run.json's `training`, why it cannot be verified or None) of every run of this host that says
    `running` while its runner is gone and its training may still run: a training an earlier runner left behind.

    Only a training that reaper.is_supervisor verifies (live pid with the recorded start time and boot id, leading
    its group, running reaper.py) may be stopped; a run.json that names a live pid or group it cannot verify (runs
    made before the supervisor recorded `training` name a bare `swift_pid`) is reported, never signalled."""
    out: list[tuple[Path, dict, str | None]] = []
    for status_file in sorted(Path(results_dir).glob("*/*/*/run.json")):
        status = read_status(status_file.parent)
        if status.get(Run.STATUS) != "running" or status.get(Run.HOST) != socket.gethostname():
            continue
        training = status.get("training")
        if not isinstance(training, dict):
            legacy = status.get("swift_pid")
            training = {"pid": legacy, "pgid": legacy} if isinstance(legacy, int) else None
        if not training or (training.get("boot_id") and training["boot_id"] != reaper.boot_id()):
            continue
        if _owner_alive(status):
            continue
        why = reaper.is_supervisor(training)
        if why is None:
            out.append((status_file.parent, training, None))
            continue
        leader, pgid, started = (_int(training.get(k)) for k in ("pid", "pgid", "started"))
        if reaper.alive(leader, started) or (not reaper.alive(leader) and reaper.group_alive(pgid)):
            out.append((status_file.parent, training, why))
    return out


def check_orphans(results_dir: str | Path, kill: bool, console=None) -> None:
    """Before anything starts: a training left behind by an earlier runner is reported (InputError: nothing starts
    beside it), or with KILL stopped and its run marked interrupted (it is then resumed like any interrupted run).
    A pid or process group that cannot be verified as that training is never signalled, KILL or not."""
    for run_dir, training, why in find_orphans(results_dir):
        pgid = training.get("pgid") or training.get("pid")
        if why is not None:
            raise InputError(run_dir / runfiles.RUN_JSON,
                             f"names live process group {pgid} as its training, which cannot be verified ({why}): "
                             "nothing was signalled; stop it yourself if it is yours, or mark the run failed")
        if not kill:
            raise InputError(run_dir, f"the training of an earlier runner is still running (process group {pgid}, "
                                      f"whose runner is gone): stop it (kill -TERM -- -{pgid}) or run again with "
                                      f"--kill-orphans")
        reaper.stop_group(cast(int, pgid), grace_s=10, root=training.get("pid"))  # an int: is_supervisor passed
        write_status(run_dir, status="failed", reason=f"{INTERRUPTED} (left behind by an earlier runner; stopped by "
                     "--kill-orphans)", finished=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))
        if console is not None:
            console.print(f"[yellow]stopped[/] the training an earlier runner left behind: {run_dir} "
                          f"(process group {pgid})")


def stop_run(run_dir: Path, why: str) -> None:
    """Stop what RUN_DIR's run started (this runner's notebook kernel first, so that it writes nothing after us; then
    the training's process group) and mark it failed: interrupted."""
    status = read_status(run_dir)
    kernel = status.get(Run.PID)
    if kernel and kernel != os.getpid() and reaper.alive(kernel) and (reaper._stat(kernel) or [b"", b"0"])[1] \
            == str(os.getpid()).encode():
        with contextlib.suppress(OSError):
            os.kill(kernel, signal.SIGKILL)
    training = status.get("training") or {}
    if reaper.is_supervisor(training) is None:  # only the supervisor this run recorded, never what has its pid now
        reaper.stop_group(training["pgid"], grace_s=5, root=training.get("pid"))  # `timeout -k 20` allows 20 s
    drop_weights_and_data(run_dir)
    if status.get(Run.STATUS) in (None, "running"):
        write_status(run_dir, status="failed", reason=f"{INTERRUPTED} ({why})",
                     finished=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP to the runner, raised like Ctrl-C so that one path stops the run (stop_run)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


STOPPING: dict = {"run_dir": None, "done": False}  # the run the runner is on (set around run_notebook)


def raise_interrupted(signum, _frame):
    """SIGINT / SIGTERM / SIGHUP to the runner: stop the current run right here, before papermill's clean-up talks to
    a kernel that is being shut down (its tracebacks), then unwind as Ctrl-C does. A second signal is ignored."""
    if STOPPING["done"]:
        return
    STOPPING["done"] = True
    if STOPPING["run_dir"] is not None:
        stop_run(STOPPING["run_dir"], f"the runner got {signal.Signals(signum).name}")
    raise Interrupted(signum)


def follow_make() -> None:
    """Under `make run-all` (MAKELEVEL is set), a SIGKILL of make reaches the runner as SIGTERM (PR_SET_PDEATHSIG),
    so the training stops with it; a runner started from a shell outlives its shell (nohup) as before."""
    if os.environ.get("MAKELEVEL") and os.getppid() != 1:
        reaper._prctl(reaper.PR_SET_PDEATHSIG, signal.SIGTERM)
