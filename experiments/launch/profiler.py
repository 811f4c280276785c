"""The launcher's profiler: torch.profiler over chosen optimizer steps, each step's wall time and GPU busy time (the
union of the device's kernel and copy intervals) into profile.json (see the launcher's --profile-* options)."""
from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.base.runfolder import GcSummary, GpuOp, Launch, Profile, ProfileRecord
from experiments.base.runfolder import ProfileWindow as W


def union_ns(intervals: list[tuple[int, int]]) -> int:
    """Total length covered by [start, end) intervals (overlaps counted once)."""
    total, cur_s = 0, 0  # cur_s is read only once cur_e is set
    cur_e: int | None = None
    for s, e in sorted(intervals):
        if e <= s:
            continue
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total



def is_comm_kernel(name: str) -> bool:
    """NCCL's kernels (all-reduce, reduce-scatter, all-gather, ...): a step's communication on the GPU."""
    return "nccl" in name.lower()


def _device_intervals(prof) -> tuple[list[tuple[int, int]], int, list[tuple[int, int]], dict[str, list]]:
    """(GPU activity intervals in ns, number of host-side events, the intervals of NCCL kernels, {GPU activity name:
    [ns, count]}) of a stopped torch.profiler.profile, in one pass over its events."""
    from torch.autograd import DeviceType

    results = prof.profiler.kineto_results
    by_name: dict[str, list] = {}
    gpu, host, comm = [], 0, []
    for e in results.events():
        if e.device_type() == DeviceType.CUDA:
            # gpu_user_annotation ranges span kernels rather than being GPU work themselves
            if getattr(e, "is_user_annotation", lambda: False)():
                continue
            start, dur = e.start_ns(), e.duration_ns()
            span = (start, start + dur)
            gpu.append(span)
            name = e.name()
            acc = by_name.get(name)
            if acc is None:
                by_name[name] = [dur, 1]
            else:
                acc[0] += dur
                acc[1] += 1
            if is_comm_kernel(name):
                comm.append(span)
        else:
            host += 1
    return gpu, host, comm, by_name


def top_gpu_ops(by_name: dict[str, list], n: int = 15) -> list[dict]:
    """The N GPU kernels and copies with the most GPU time (where a step's GPU time goes), from _device_intervals'
    totals by name. Not prof.key_averages(): it builds the whole operator tree, 20-28 s per profiled step of the seed
    recipe's ~380,000 events on the H200 hosts (profile.json `processing_s`), charged to the step after the window."""
    rows = [{GpuOp.OP: k, GpuOp.GPU_MS: round(ns / 1e6, 3), GpuOp.CALLS: c} for k, (ns, c) in by_name.items() if ns]
    rows.sort(key=lambda r: -r[GpuOp.GPU_MS])
    return rows[:n]


GPU_ONLY_KINDS = ("CONCURRENT_KERNEL", "GPU_MEMCPY", "GPU_MEMSET")  # CUPTI kinds of `--profile-activities kernels`


def profiler_activities(torch, which: str, cuda: bool) -> tuple[list, list[str], str | None]:
    """(activities for torch.profiler.profile, their names for profile.json, a note or None) for WHICH ('all', 'cuda',
    'kernels'). 'kernels' is CUDA with torch's per-type filter (GPU_ONLY_KINDS: no runtime-API tracing), where the
    installed torch has that filter (torch.profiler.profiler._parse_activities); else plain CUDA, with a note."""
    act = torch.profiler.ProfilerActivity
    if not cuda:
        return [act.CPU], ["CPU"], None
    if which == "all":
        return [act.CPU, act.CUDA], ["CPU", "CUDA"], None
    if which == "kernels":
        if hasattr(torch.profiler.profiler, "_parse_activities"):
            return [{act.CUDA: list(GPU_ONLY_KINDS)}], [f"CUDA:{k}" for k in GPU_ONLY_KINDS], None
        return [act.CUDA], ["CUDA"], (f"torch {torch.__version__} has no per-type activity filter: "
                                      "CUDA activity with runtime calls (as --profile-activities cuda)")
    return [act.CUDA], ["CUDA"], None


class GcTimer:
    """Python's garbage collections inside a window, by generation, and the seconds they took (gc.callbacks): a
    full collection over a heap of hundreds of thousands of profiler events is one suspect for a profiled step
    running longer than its unprofiled neighbours."""

    def __init__(self):
        self.counts = {0: 0, 1: 0, 2: 0}
        self.seconds = 0.0
        self._t = None

    def __call__(self, phase, info):
        if phase == "start":
            self._t = time.perf_counter()
        elif self._t is not None:
            self.seconds += time.perf_counter() - self._t
            self.counts[info.get("generation", 0)] = self.counts.get(info.get("generation", 0), 0) + 1
            self._t = None

    def __enter__(self):
        import gc

        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc):
        import gc

        if self in gc.callbacks:
            gc.callbacks.remove(self)
        return False

    def summary(self) -> dict:
        return {GcSummary.COLLECTIONS: {str(k): v for k, v in self.counts.items()},
                GcSummary.SECONDS: round(self.seconds, 4)}


@dataclass(frozen=True)
class Window:
    """What a profiler callback profiles: optimizer steps SKIP+1 .. SKIP+STEPS, WARMUP steps right before them under
    the profiler but unmeasured, host stacks or not, and where profile.json goes."""

    steps: int
    skip: int
    warmup: int
    host_stacks: bool
    out_file: Path


class _StepProfiler:
    """The profiling callback's steps (make_profiler_callback mixes it with transformers' TrainerCallback, imported
    only where a training runs). Every start and stop is guarded: a profiler problem never costs the training run."""

    def __init__(self, window: Window, record: dict, torch, cuda: bool, activities, names, note) -> None:
        self.w, self.torch, self.cuda, self.activities = window, torch, cuda, activities
        self.prof: Any = None       # torch.profiler.profile of the open window
        self.t0 = 0.0
        self.step: int | None = None
        self.sampler: Any = None    # experiments.launch.hoststacks.StackSampler of the open window
        self.gc: GcTimer | None = None
        self.gpm: Any = None  # GPM over exactly this window (experiments/record/gpm.py), False where there is none
        self.start_error: str | None = None
        self.data: dict = {Profile.DEVICE: "cuda" if cuda else "cpu", Profile.PROFILE_STEPS: window.steps,
                           Profile.PROFILE_SKIP: window.skip, Profile.PROFILE_WARMUP: window.warmup,
                           Profile.HOST_STACKS: bool(window.host_stacks), Profile.ACTIVITIES: names,
                           **({Profile.ACTIVITIES_NOTE: note} if note else {}),
                           Profile.WINDOW: "end of the previous optimizer step -> end of this one (includes "
                                           "fetching its batches)", Profile.STEPS: []}
        record[Launch.PROFILE] = {ProfileRecord.FILE: str(window.out_file), ProfileRecord.STEPS: window.steps,
                                  ProfileRecord.SKIP: window.skip, ProfileRecord.DEVICE: self.data[Profile.DEVICE]}

    def _sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def _start(self, step: int) -> None:
        self._sync()
        try:
            self.prof = self.torch.profiler.profile(activities=self.activities, record_shapes=False, with_stack=False)
            self.prof.start()
        except Exception as exc:  # noqa: BLE001 - no profile for this step, training goes on
            self.prof = None
            self.data[Profile.STEPS].append({W.STEP: step, W.ERROR: f"{type(exc).__name__}: {exc}"})
            self._write()
            return
        self.step = step
        self._start_host(step)
        self._gpm_mark()
        self.t0 = time.perf_counter()

    def _start_host(self, step: int) -> None:
        """Host stacks (measured steps only) and the garbage-collection timer; neither may cost the training run: a
        window without them says why."""
        try:
            if self.w.host_stacks and step > self.w.skip:
                from experiments.launch.hoststacks import StackSampler

                self.sampler = StackSampler().start()
            self.gc = GcTimer().__enter__()
        except Exception as exc:  # noqa: BLE001
            self.start_error = f"{type(exc).__name__}: {exc}"

    def _gpm_mark(self) -> dict | None:
        """GPM's counters since the previous mark (the window's start), or None; never raises."""
        if not self.cuda or self.gpm is False:
            return None
        try:
            if self.gpm is None:
                from experiments.record.gpm import Gpm

                self.gpm = Gpm.open()[0] or False  # open() takes the first mark
                return None
            return self.gpm.mark()
        except Exception:  # noqa: BLE001 - no GPM reading for this window
            self.gpm = False
            return None

    def _finish(self) -> None:
        self._sync()
        wall = time.perf_counter() - self.t0
        entry: dict = {W.STEP: self.step, W.WALL_S: round(wall, 6), W.GPU_BUSY_S: None, W.GPU_BUSY_FRAC: None}
        m = self._gpm_mark()
        if m is not None:  # GPM over this window: the profiler's kernel union against the GPU's active time
            entry[W.GPM] = m
        self._finish_host(entry)
        if self.step is not None and self.step <= self.w.skip:  # a warm-up window: recorded, left out of figures
            entry[W.WARMUP] = True
        self._finish_kernels(entry, wall)
        self.data[Profile.STEPS].append(entry)
        self.prof, self.step = None, None
        self._write()

    def _finish_host(self, entry: dict) -> None:
        """The window's garbage collections and host stacks into ENTRY (or why not)."""
        try:
            if self.gc is not None:
                self.gc.__exit__(None, None, None)
                entry[W.GC] = self.gc.summary()
            if self.sampler is not None:
                entry[W.HOST_STACKS] = self.sampler.stop()
        except Exception as exc:  # noqa: BLE001 - as the profiler's own errors
            entry[W.HOST_ERROR] = f"{type(exc).__name__}: {exc}"
        self.gc = self.sampler = None
        if self.start_error:
            entry[W.HOST_ERROR] = self.start_error
            self.start_error = None

    def _finish_kernels(self, entry: dict, wall: float) -> None:
        """The profiler's GPU busy time (the union of kernels and copies), NCCL's share and the top kernels into
        ENTRY (or the profiler's error)."""
        try:  # a profiler problem must never cost the training run
            self.prof.stop()
            t_proc = time.perf_counter()
            gpu, host, comm, by_name = _device_intervals(self.prof)
            busy = union_ns(gpu) / 1e9 if self.cuda else None
            entry.update({W.GPU_BUSY_S: None if busy is None else round(busy, 6),
                          # NCCL kernels' time (overlapping compute or not): the step's communication on GPU 0
                          W.GPU_COMM_S: None if busy is None else round(union_ns(comm) / 1e9, 6),
                          W.GPU_BUSY_FRAC: None if busy is None or wall <= 0 else round(busy / wall, 4),
                          W.GPU_EVENTS: len(gpu), W.HOST_EVENTS: host,
                          W.TOP_GPU_OPS: top_gpu_ops(by_name) if self.cuda else [],
                          W.PROCESSING_S: round(time.perf_counter() - t_proc, 3)})
        except Exception as exc:  # noqa: BLE001
            entry[W.ERROR] = f"{type(exc).__name__}: {exc}"

    def _write(self) -> None:
        measured = [s for s in self.data[Profile.STEPS] if not s.get(W.WARMUP)]
        fr = [s[W.GPU_BUSY_FRAC] for s in measured if s.get(W.GPU_BUSY_FRAC) is not None]
        walls = [s[W.WALL_S] for s in measured if s.get(W.WALL_S) is not None]
        self.data[Profile.MEDIAN_WALL_S] = statistics.median(walls) if walls else None
        self.data[Profile.MEDIAN_GPU_BUSY_FRAC] = statistics.median(fr) if fr else None
        self.w.out_file.parent.mkdir(parents=True, exist_ok=True)
        self.w.out_file.write_text(json.dumps(self.data, indent=2))

    def on_train_begin(self, args, state, control, **kwargs):
        self.begin(state.global_step)

    def on_step_end(self, args, state, control, **kwargs):
        self.after_step(state.global_step)

    def on_train_end(self, args, state, control, **kwargs):
        self.end()

    # The hooks without transformers: a training loop of its own (experiments/anchors/tt_run.py) calls these.
    def begin(self, step: int = 0) -> None:
        """Training starts after optimizer step STEP (0 for a fresh run): a window from the first step opens."""
        if self.w.skip - self.w.warmup == 0 and self.w.steps > 0:
            self._start(step + 1)

    def after_step(self, step: int) -> None:
        """Optimizer step STEP has just ended (its loss synced): close its window, open the next one's."""
        if self.prof is not None:
            self._finish()
        if self.w.skip - self.w.warmup <= step < self.w.skip + self.w.steps:
            self._start(step + 1)

    def end(self) -> None:
        """Training ended: a window still open is dropped, profile.json written."""
        if self.prof is not None:  # training ended inside a window: drop it
            self.prof.stop()
            self.prof = None
        if self.sampler is not None:
            self.sampler.stop()
            self.sampler = None
        if self.gc is not None:
            self.gc.__exit__(None, None, None)
            self.gc = None
        if self.gpm:  # the window's GPM samples
            self.gpm.close()
            self.gpm = False
        self._write()


def make_profiler_callback(steps: int, skip: int, out_file: Path, record: dict, which: str = "all", warmup: int = 0,
                           host_stacks: bool = False):
    """A transformers TrainerCallback that profiles optimizer steps skip+1 .. skip+steps. WHICH: 'all' records host
    operators and GPU activity, 'cuda' GPU activity alone (on a machine without CUDA, host operators anyway).
    WARMUP: that many steps right before (skip-warmup+1 .. skip) run under the profiler too, unmeasured (profile.json
    lists them with `warmup: true` and only their wall time): the first profiled step of a run came out 1.18-1.26x
    the seed recipe's steady step on five of eight runs, the second ~1.0 (a one-time cost of the first window).
    HOST_STACKS: each measured step also samples every Python thread's stack (experiments/launch/hoststacks.py), stored
    as the step's `host_stacks`."""
    from transformers import TrainerCallback

    cls = type("StepProfiler", (_StepProfiler, TrainerCallback), {})
    return step_profiler(steps, skip, out_file, record, which, warmup, host_stacks, cls=cls)


def step_profiler(steps: int, skip: int, out_file: Path, record: dict, which: str = "all", warmup: int = 0,
                  host_stacks: bool = False, cuda: bool | None = None, cls: type = _StepProfiler) -> _StepProfiler:
    """make_profiler_callback's profiler without transformers, for a training loop that calls begin / after_step /
    end itself (the anchor runs' torchtune recipe): the same windows, the same profile.json. CUDA: whether the run's
    device is a GPU (default: torch.cuda.is_available())."""
    warmup = max(0, min(int(warmup), skip))
    import torch

    cuda = torch.cuda.is_available() if cuda is None else cuda
    activities, names, note = profiler_activities(torch, which, cuda)
    return cls(Window(steps, skip, warmup, bool(host_stacks), Path(out_file)), record, torch, cuda, activities, names,
               note)
