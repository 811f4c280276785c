"""What the fault tests share: a results tree of two committed runs to break, `swiftbench` in this process under a
time limit (a hang fails the test instead of stopping the suite), and file permissions in force for root."""
from __future__ import annotations

import contextlib
import ctypes
import io
import shutil
import signal
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SEED_RUN = REPO / "results" / "h200" / "seed" / "20261201-002632"   # 30 steps, logging every 5, with the launcher
GOOD_RUN = REPO / "results" / "h200" / "bs16" / "20261201-003102"   # another experiment: must stay as it is
IGNORE = shutil.ignore_patterns("runs", "sft.ipynb", "stdout.log", "nvml*.csv")


def tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    """results/ with a copy of SEED_RUN (the one to break) and of GOOD_RUN: (root, bad, good)."""
    root = tmp_path / "results"
    bad = root / "h200" / "seed" / SEED_RUN.name
    good = root / "h200" / "bs16" / GOOD_RUN.name
    shutil.copytree(SEED_RUN, bad, ignore=IGNORE)
    shutil.copytree(GOOD_RUN, good, ignore=IGNORE)
    return root, bad, good


class Hung(BaseException):
    """A command ran past its time limit (a BaseException: the CLI's error boundary does not catch it)."""


def cli(*args, limit_s: float = 10.0) -> tuple[int, str, str]:
    """`swiftbench ARGS` in this process: (exit code, stdout, stderr). Past LIMIT_S seconds it raises Hung; a traceback
    escaping the CLI fails the test by itself."""
    from analysis.cli import main

    def expired(signum, frame):
        raise Hung(f"swiftbench {' '.join(map(str, args))} ran past {limit_s} s")

    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    t0 = time.monotonic()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main([str(a) for a in args])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert time.monotonic() - t0 < limit_s
    assert "Traceback" not in err.getvalue(), err.getvalue()
    return rc, out.getvalue(), err.getvalue()


def one_line(rc: int, err: str, needle: str, code: int = 2) -> str:
    """The command exited CODE with one line on stderr holding NEEDLE; that line."""
    lines = err.splitlines()
    assert rc == code and len(lines) == 1 and needle in lines[0], (rc, err)
    return lines[0]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


_CAP_V3 = 0x20080522
_DAC = (1 << 1) | (1 << 2)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH


@contextlib.contextmanager
def permissions_in_force():
    """File modes apply to this process as to any user, also as root: CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH
    leave the effective set meanwhile (they stay permitted, so they come back after)."""
    libc = ctypes.CDLL(None, use_errno=True)
    data = (_CapData * 2)()
    if libc.capget(ctypes.byref(_CapHeader(_CAP_V3, 0)), data) != 0:
        yield
        return
    before = data[0].effective
    data[0].effective = before & ~_DAC
    changed = libc.capset(ctypes.byref(_CapHeader(_CAP_V3, 0)), data) == 0
    try:
        yield
    finally:
        if changed:
            data[0].effective = before
            libc.capset(ctypes.byref(_CapHeader(_CAP_V3, 0)), data)
