"""Run a training command so that it never outlives the process that started it.

    python -m experiments.run.reaper [--watch PID[:START]]... [--grace S] -- <command...>

The runner starts `swift sft` (or `python -m experiments.launch ...`) through this small supervisor, started with
`start_new_session=True`, so it is the leader of the training's session and process group. `swift sft` starts a
second Python itself, the data loader starts workers, torchrun starts workers in sessions of their own: a kill of one
pid leaves the rest training. So the supervisor

- is a child subreaper (PR_SET_CHILD_SUBREAPER): every descendant whose parent dies is re-parented to it, not to
  pid 1, and stays findable as its descendant;
- gets a signal when its parent (the notebook kernel) dies (PR_SET_PDEATHSIG), and also polls twice a second that
  its parent and every --watch process (the runner) are alive: the death signal fires on the exit of the parent
  *thread*, and a kernel is gone within a second of a SIGKILLed runner;
- on SIGTERM / SIGINT / SIGHUP, or when a watched process is gone: SIGTERM to its whole group and every descendant,
  SIGKILL to what is left after --grace seconds;
- when the command ends by itself: SIGKILL to any descendant still there (a straggling loader worker), then it exits
  as the command did (the same exit code, or the same signal), so the caller sees the command's own result.

Linux only (prctl, /proc); elsewhere it still kills its process group. The helpers below (`start_time`, `alive`,
`group_alive`, `stop_group`) are what the runner uses to find and stop a training left behind by an earlier runner.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import cast

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PARENT_DEATH_SIGNAL = signal.SIGUSR1  # its handler checks the parent really changed (a thread's exit fires it too)
POLL_S = 0.5


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _stat(pid: int) -> list[bytes] | None:
    """/proc/PID/stat after the command name: [state, ppid, pgrp, session, ...]; None when there is no such process."""
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return data[data.rindex(b")") + 2:].split()


def start_time(pid: int) -> int | None:
    """When PID started (clock ticks after boot): a pid reused by another process has another start time."""
    fields = _stat(pid)
    return int(fields[19]) if fields and len(fields) > 19 else None


def boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def alive(pid: int | None, started: int | None = None) -> bool:
    """Is PID a live process (not a zombie), and the same one that had start time STARTED when that is given?"""
    if not pid or pid <= 0:
        return False
    fields = _stat(pid)
    if fields is None:
        if Path("/proc/self/stat").exists():
            return False
        try:  # no /proc: ask the kernel
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True
    if fields[0] == b"Z":
        return False
    return started is None or int(fields[19]) == started


def cmdline(pid: int) -> list[str] | None:
    """PID's argv from /proc (None when unreadable)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]


def is_supervisor(training: object) -> str | None:
    """None when TRAINING (run.json's `training`) names a live supervisor of this script on this boot: the pid is
    alive with the recorded start time, it leads its own process group, and its command line runs reaper.py. Else
    the reason it does not, in a few words.

    A run.json is data from anywhere (trees merged from other machines carry theirs verbatim); a signal may only go
    to the process it recorded, never to whatever holds that pid or process group now."""
    if not isinstance(training, dict):
        return "run.json names no training"
    pid, pgid, started, boot = (training.get(k) for k in ("pid", "pgid", "started", "boot_id"))
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (pid, pgid, started)):
        return "run.json's training has no pid, process group and start time"
    if pgid != pid:
        return f"process group {pgid} is not led by the recorded supervisor {pid}"
    if not isinstance(boot, str) or boot != boot_id():
        return "recorded on another boot"
    if not alive(pid, started):
        return f"process {pid} is gone or is another process now (start time differs)"
    fields = _stat(cast(int, pid))  # an int: checked above
    if fields is None or int(fields[2]) != pid:
        return f"process {pid} does not lead process group {pid}"
    argv = cmdline(pid) or []
    if not any(Path(a).name == Path(__file__).name for a in argv[1:3]) or "--" not in argv:
        return f"process {pid} is not a training supervisor ({' '.join(argv)[:80] or 'no command line'})"
    return None


def _all_stats() -> dict[int, list[bytes]]:
    out = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields is not None and fields[0] != b"Z":
                out[int(entry.name)] = fields
    return out


def members(pgid: int, root: int | None = None) -> set[int]:
    """Live processes of process group PGID, and (ROOT given) every live descendant of ROOT, whatever its group."""
    if not Path("/proc/self/stat").exists():
        return set()
    stats = _all_stats()
    found = {pid for pid, f in stats.items() if int(f[2]) == pgid}
    if root is not None:
        children: dict[int, list[int]] = {}
        for pid, f in stats.items():
            children.setdefault(int(f[1]), []).append(pid)
        todo = [root]
        while todo:
            for child in children.get(todo.pop(), []):
                if child not in found:
                    found.add(child)
                    todo.append(child)
    return found


def group_alive(pgid: int | None) -> bool:
    """Does process group PGID still have a live member?"""
    if not pgid or pgid <= 0:
        return False
    if Path("/proc/self/stat").exists():
        return bool(members(pgid))
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal_all(pids, sig) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def stop_group(pgid: int, grace_s: float = 10.0, root: int | None = None, spare: int | None = None) -> bool:
    """SIGTERM to process group PGID (and ROOT's descendants), SIGKILL to what is left after GRACE_S seconds; SPARE
    (the caller itself) is never signalled. True when nothing of it is left."""
    me = spare if spare is not None else os.getpid()

    def targets():
        return members(pgid, root) - {me}

    try:
        if me not in members(pgid) or not Path("/proc/self/stat").exists():
            os.killpg(pgid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
    _signal_all(targets(), signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while targets() and time.monotonic() < deadline:
        _reap()
        time.sleep(0.1)
    for _ in range(50):  # re-parented grandchildren show up one round later
        left = targets()
        if not left:
            return True
        _signal_all(left, signal.SIGKILL)
        _reap()
        time.sleep(0.1)
    return not targets()


_REAPING: dict = {"on": False, "skip": None}  # set by main(): only the supervisor collects its adopted children


def _reap() -> None:
    """Collect exited children other than the command itself (a subreaper adopts the orphans, and their zombies);
    the command's own exit status stays for Popen.wait."""
    if not _REAPING["on"]:
        return
    me = os.getpid()
    try:
        entries = [int(e.name) for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return
    for pid in entries:
        fields = _stat(pid)
        if fields is None or int(fields[1]) != me or pid == _REAPING["skip"]:
            continue
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


# ------------------------------------------------------------------------------------------- the supervisor


def _watch_arg(text: str) -> tuple[int, int | None]:
    pid, _, started = text.partition(":")
    return int(pid), int(started) if started else None


def _set_child_death_signal() -> None:  # runs in the child between fork and exec
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.run.reaper", description=__doc__.splitlines()[0])
    p.add_argument("--watch", action="append", default=[], type=_watch_arg, metavar="PID[:START]",
                   help="stop the command when this process is gone (START: its /proc start time)")
    p.add_argument("--grace", type=float, default=10.0, help="seconds between SIGTERM and SIGKILL")
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args(sys.argv[1:] if argv is None else argv)
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        p.error("no command after --")
    me = os.getpid()
    if os.getpgrp() != me:
        try:
            os.setpgid(0, 0)
        except OSError:
            pass
    parent = os.getppid()
    stop: dict = {"why": None, "signal": None}

    def on_signal(signum, _frame):
        if stop["why"] is None:
            stop["why"], stop["signal"] = f"got {signal.Signals(signum).name}", signum

    def on_parent_death(_signum, _frame):
        if os.getppid() != parent and stop["why"] is None:
            stop["why"] = f"its parent {parent} exited"

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, on_signal)
    signal.signal(PARENT_DEATH_SIGNAL, on_parent_death)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, PARENT_DEATH_SIGNAL)
    if os.getppid() != parent:  # died between fork and prctl
        stop["why"] = f"its parent {parent} exited"
    child = subprocess.Popen(cmd, preexec_fn=_set_child_death_signal)
    _REAPING.update(on=True, skip=child.pid)
    rc = None
    while rc is None:
        if stop["why"] is None:
            if os.getppid() != parent:
                stop["why"] = f"its parent {parent} exited"
            for pid, started in a.watch:
                if not alive(pid, started):
                    stop["why"] = f"the runner {pid} is gone"
        if stop["why"] is not None:
            print(f"reaper: {stop['why']}: stopping the training (process group {me})", flush=True)
            stop_group(me, a.grace, root=me, spare=me)
            rc = child.wait()
            break
        try:
            rc = child.wait(timeout=POLL_S)
        except subprocess.TimeoutExpired:
            rc = None
            _reap()
    left = members(me, me) - {me}
    if left:  # the command is gone: whatever it left running goes too
        _signal_all(left, signal.SIGKILL)
    _reap()
    sig = stop["signal"] or (-rc if rc < 0 else None)
    if sig:  # end as the command (or we) were ended: the caller sees the signal, as without a supervisor
        sys.stdout.flush()
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_DFL)
        os.kill(me, sig)
        time.sleep(1)
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    sys.exit(main())
