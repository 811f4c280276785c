"""Where a host-bound step's host time goes: a sampler of every Python thread's stack during a profiled step.

torch.profiler's `cuda` activity says how long the GPU was busy in a step, not what the host did in the rest of it.
The best recipe leaves the GPU idle 66-73 % of its step (results/findings); whether that host time is eager
operator dispatch, inductor's kernel launching, the optimizer, the data pipeline or a callback is a question about
Python frames. This module samples `sys._current_frames()` from a daemon thread (about 1 kHz asked; a thread holding
the GIL delays a sample, so `rounds` over the window's wall time is the rate obtained) and counts, per thread:

- `leaf`: the innermost Python frame (where the thread was: in C code called from that frame, or in Python itself);
- `owner`: the innermost frame outside torch's own package (the library code that asked torch for the work: peft's
  LoRA layer, transformers' trainer, inductor's generated code, ...);
- `package`: the leaf's package (torch, transformers, peft, swift, liger_kernel, inductor code, ...).

A thread whose leaf is a Python-level wait of the standard library (threading, queue, selectors, a thread pool's
worker loop) is counted idle; one blocked inside C code (time.sleep, a pipe read) looks busy to the frames, so each
window also reads every thread's CPU time from /proc/self/task (Linux): `cpu` lists the threads that used CPU in the
window, by their OS name, with their share of the window's wall time, and each Python thread's entry carries its own
`cpu_share` where it is known. The CPU view is also the only view of the autograd engine's device thread while it
runs C++ operators: it runs every backward operator of a CUDA model while the main thread waits in
`_engine_run_backward`, and shows Python frames only where a backward is Python (Liger's kernels, inductor's
compiled backward).
"""
from __future__ import annotations

import collections
import os
import sys
import threading
import time

from experiments.base.runfolder import HostStacks, StackShare, StackThread, TaskCpu

IDLE_FUNCS = frozenset({"wait", "_wait_for_tstate_lock", "select", "poll", "sleep", "get", "accept", "recv",
                        "recv_into", "read", "readline", "_recv", "_recv_bytes", "join", "epoll"})
IDLE_FILES = ("threading.py", "queue.py", "selectors.py", "connection.py", "socket.py", "subprocess.py",
              "multiprocessing/", "concurrent/futures/")
# leaves that are a C-level wait of a known worker loop (a thread pool's worker waits in the C queue's get)
IDLE_LEAVES = frozenset({"concurrent/futures/thread.py:_worker"})


def _import_roots() -> list[str]:
    """sys.path's folders, longest first, each ending in '/' (an install made with pip --target is one of them)."""
    roots = {os.path.abspath(p).rstrip("/") + "/" for p in sys.path if p}
    return sorted(roots, key=len, reverse=True)


def short_path(path: str, roots: list[str] | None = None) -> str:
    """A frame's file as its import path (torch/nn/modules/linear.py, concurrent/futures/thread.py), inductor's
    generated code as <inductor>/NAME.py, anything else as its last two parts. ROOTS: the import roots (default:
    this process's sys.path)."""
    if "torchinductor" in path:
        return "<inductor>/" + os.path.basename(path)
    for marker in ("site-packages/", "dist-packages/"):
        i = path.rfind(marker)
        if i >= 0:
            return path[i + len(marker):]
    for root in _import_roots() if roots is None else roots:
        if path.startswith(root) and root != "/":
            return path[len(root):]
    parts = path.replace("\\", "/").split("/")
    return "/".join(parts[-2:])


def package(short: str) -> str:
    if short.startswith("<inductor>"):
        return "inductor code"
    head = short.split("/", 1)[0]
    return head[:-3] if head.endswith(".py") else head


def is_idle(short: str, func: str) -> bool:
    """A Python-level wait of the standard library, or a known C-level wait (IDLE_LEAVES); any other C-level wait
    shows its caller's frame and counts busy (the `cpu` view tells them apart)."""
    return (func in IDLE_FUNCS and any(m in short for m in IDLE_FILES)) or f"{short}:{func}" in IDLE_LEAVES


def classify(frame, roots: list[str] | None = None) -> tuple[str, str, bool]:
    """(leaf, owner, idle) of one thread's innermost FRAME."""
    code = frame.f_code
    leaf_file = short_path(code.co_filename, roots)
    leaf = f"{leaf_file}:{code.co_name}"
    owner = None
    f = frame
    while f is not None:
        s = short_path(f.f_code.co_filename, roots)
        if not s.startswith("torch/"):
            owner = f"{s}:{f.f_code.co_name}"
            break
        f = f.f_back
    return leaf, owner or leaf, is_idle(leaf_file, code.co_name)


def task_cpu() -> dict[int, tuple[str, float]] | None:
    """{native thread id: (OS thread name, CPU seconds so far)} for this process, from /proc/self/task; None where
    there is no /proc."""
    base = "/proc/self/task"
    try:
        tids = os.listdir(base)
    except OSError:
        return None
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for tid in tids:
        try:
            with open(f"{base}/{tid}/stat") as fh:
                stat = fh.read()
        except OSError:  # the thread ended
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        out[int(tid)] = (name, (int(fields[11]) + int(fields[12])) / tick)  # utime + stime
    return out


def cpu_between(before: dict | None, after: dict | None, wall_s: float, python_names: dict[int | None, str],
                top: int = 8) -> list[dict] | None:
    """The threads that used CPU between two task_cpu() snapshots, most first: OS name, the Python thread's name
    where there is one, CPU seconds and their share of WALL_S."""
    if before is None or after is None:
        return None
    rows = []
    for tid, (name, cpu) in after.items():
        used = cpu - before.get(tid, (name, 0.0))[1]
        if used > 0:
            rows.append({TaskCpu.TASK: name, TaskCpu.PYTHON_THREAD: python_names.get(tid),
                         TaskCpu.CPU_S: round(used, 3),
                         TaskCpu.CPU_SHARE: round(used / wall_s, 3) if wall_s > 0 else None})
    rows.sort(key=lambda r: -r[TaskCpu.CPU_S])
    return rows[:top]


class StackSampler:
    """Sample every other Python thread's stack each INTERVAL_S seconds between start() and stop()."""

    def __init__(self, interval_s: float = 0.001, top: int = 12):
        self.interval_s = interval_s
        self.top = top
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.rounds = 0
        self.t0: float | None = None
        self.t1: float | None = None
        self.counts: dict[int, dict] = {}
        self.cpu0: dict[int, tuple[str, float]] | None = None

    def start(self) -> "StackSampler":
        self._thread = threading.Thread(target=self._run, name="swiftbench-stack-sampler", daemon=True)
        self.cpu0 = task_cpu()
        self.t0 = time.perf_counter()
        self._thread.start()
        return self

    def _run(self) -> None:
        me = threading.get_ident()
        roots = _import_roots()
        while not self._stop.wait(self.interval_s):
            frames = sys._current_frames()
            self.rounds += 1
            for tid, frame in frames.items():
                if tid == me:
                    continue
                c = self.counts.get(tid)
                if c is None:
                    c = self.counts[tid] = {"samples": 0, "idle": 0, "leaf": collections.Counter(),
                                            "owner": collections.Counter(), "package": collections.Counter()}
                leaf, owner, idle = classify(frame, roots)
                c["samples"] += 1
                if idle:
                    c["idle"] += 1
                    continue
                c["leaf"][leaf] += 1
                c["owner"][owner] += 1
                c["package"][package(leaf.rsplit(":", 1)[0])] += 1

    def stop(self) -> dict:
        """Stop sampling; the summary: per thread with any busy sample, its busy share of the sample rounds and its
        top leaves, owners and packages (each as a share of the rounds)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.t1 = time.perf_counter()
        assert self.t0 is not None, "stop() before start()"
        cpu1 = task_cpu()
        names = {t.ident: t.name for t in threading.enumerate()}
        native = {t.native_id: ("main" if t is threading.main_thread() else t.name) for t in threading.enumerate()}
        cpu = cpu_between(self.cpu0, cpu1, self.t1 - self.t0, native, top=64)
        cpu_of = {r[TaskCpu.PYTHON_THREAD]: r[TaskCpu.CPU_SHARE] for r in cpu or [] if r[TaskCpu.PYTHON_THREAD]}
        main = threading.main_thread().ident
        rounds = max(self.rounds, 1)
        threads = []
        for tid, c in self.counts.items():
            busy = c["samples"] - c["idle"]
            if busy <= 0:
                continue
            # a thread started from C++ (the autograd engine's) has no threading.Thread: named by its ident, which
            # stays the same across the windows of one process
            name = "main" if tid == main else names.get(tid, f"native thread {tid:#x}")

            def top(counter):
                return [{StackShare.FRAME: k, StackShare.SHARE: round(n / rounds, 4)}
                        for k, n in counter.most_common(self.top)]

            known = cpu is not None and (tid == main or tid in names)  # a Python thread: its OS thread is known
            threads.append({StackThread.THREAD: name, StackThread.BUSY_SHARE: round(busy / rounds, 4),
                            StackThread.IDLE_SHARE: round(c["idle"] / rounds, 4),
                            StackThread.CPU_SHARE: cpu_of.get(name, 0.0) if known else None,
                            StackThread.PACKAGE: top(c["package"]), StackThread.LEAF: top(c["leaf"]),
                            StackThread.OWNER: top(c["owner"])})
        threads.sort(key=lambda t: -t[StackThread.BUSY_SHARE])
        wall = self.t1 - self.t0
        return {HostStacks.INTERVAL_S: self.interval_s, HostStacks.ROUNDS: self.rounds,
                HostStacks.WALL_S: round(wall, 6),
                HostStacks.RATE_HZ: round(self.rounds / wall, 1) if wall > 0 else None, HostStacks.THREADS: threads,
                HostStacks.CPU: None if cpu is None else cpu[:8]}
