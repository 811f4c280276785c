"""The GPU's busy share of every optimizer step without a profiler: NVML's GPU Performance Monitoring (GPM).

Why: torch.profiler's kernel tracing costs microseconds per launch on the GPU hosts (their torch 2.11 has no
kernel-only filter), so a profiled step of the host-bound seed recipe runs 1.1-1.3x its unprofiled neighbours and its
host time is overstated by the tracer's own cost. GPM reads hardware counters at two moments and reports
what happened between them (Hopper and newer, read-only, no per-launch cost), so every step's GPU share is measured
as that step ran. Metrics (NVML's definitions, percent of the interval):

- `graphics_util`: time any compute/graphics context was active on the GPU (what "GPU busy" means here);
- `sm_util`: SMs busy; `tensor_util`: SMs doing any tensor-core work; `dram_bw_util`: DRAM bandwidth used of peak.

The launcher writes one line per optimizer step to `gpm.jsonl` in the run folder (GPM_FILE): the step, the wall
seconds from the end of the previous step to the end of this one (the log's intervals; for a profiled step it also
holds the profiler's stop and summary, which the profiler's own window leaves out: profile.json gets a GPM reading of
that exact window too), and the metrics. Rank 0's GPU only (launch.json `gpm.index`: its NVML index). Nothing is
written where the GPU or driver has no GPM (A10, A100, RTX 4090, CPU); launch.json `gpm` says why.

    python -m experiments.probes.gpm_probe [--out FILE]   # GPM against known duty cycles and torch.profiler (~15 s)
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from experiments.base import runfiles
from experiments.base.runfolder import Gpm as GpmLine
from experiments.base.runfolder import GpmRecord, Launch

GPM_FILE = runfiles.GPM
FLUSH_EVERY = 50  # gpm.jsonl lines held before a write
METRICS = dict(zip(runfiles.GPM_METRICS, (1, 2, 5, 10)))  # NVML_GPM_METRIC_* ids of gpm.jsonl's shares


class Gpm:
    """Two alternating GPM samples of one GPU; `mark()` returns the metrics since the previous mark."""

    def __init__(self, lib, handle, index: int | None = None):
        self.lib, self.handle, self.index = lib, handle, index
        self._prev = lib.nvmlGpmSampleAlloc()
        self._cur = lib.nvmlGpmSampleAlloc()
        self._t: float | None = None

    @classmethod
    def open(cls, lib=None, index: int | None = None) -> tuple["Gpm | None", str]:
        """(Gpm, 'ok') for the GPU this process uses (NVML index INDEX, default: the first visible one), or
        (None, why not)."""
        from experiments.record.nvml import nvml, visible_indices

        lib = lib if lib is not None else nvml()
        if lib is None:
            return None, "no NVML (no NVIDIA driver)"
        if not hasattr(lib, "nvmlGpmQueryDeviceSupport"):
            return None, "this nvidia-ml-py has no GPM calls"
        try:
            if index is None:
                visible = visible_indices(lib)
                local = int(os.environ.get("LOCAL_RANK", "0") or 0)
                if not visible:
                    return None, "no visible GPU"
                index = visible[min(local, len(visible) - 1)]
            handle = lib.nvmlDeviceGetHandleByIndex(index)
            if not lib.nvmlGpmQueryDeviceSupport(handle).isSupportedDevice:
                return None, "GPM not supported on this GPU (Hopper and newer only)"
            gpm = cls(lib, handle, index)
            gpm.mark()  # one sample now, so the first interval has a start; also proves a sample can be taken
            return gpm, "ok"
        except Exception as exc:  # noqa: BLE001 - no GPM is a note, never an error of the run
            return None, f"{type(exc).__name__}: {exc}"

    def mark(self) -> dict | None:
        """Sample now; the metrics and wall seconds since the previous mark (None at the first)."""
        lib = self.lib
        lib.nvmlGpmSampleGet(self.handle, self._cur)
        t = time.perf_counter()
        out: dict | None = None
        if self._t is not None:
            mg = lib.c_nvmlGpmMetricsGet_t()
            mg.version = lib.NVML_GPM_METRICS_GET_VERSION
            mg.numMetrics = len(METRICS)
            mg.sample1, mg.sample2 = self._prev, self._cur
            for i, mid in enumerate(METRICS.values()):
                mg.metrics[i].metricId = mid
            lib.nvmlGpmMetricsGet(mg)
            out = {GpmLine.WALL_S: round(t - self._t, 6)}
            for i, name in enumerate(METRICS):
                m = mg.metrics[i]
                out[name] = round(float(m.value), 3) if int(m.nvmlReturn) == 0 else None
        self._prev, self._cur = self._cur, self._prev
        self._t = t
        return out

    def close(self):
        for s in (self._prev, self._cur):
            try:
                self.lib.nvmlGpmSampleFree(s)
            except Exception:  # noqa: BLE001 - a sample that will not free must not stop the run
                pass


def make_callback(out_file: Path, record: dict, lib=None):
    """A TrainerCallback writing one gpm.jsonl line per optimizer step (rank 0's GPU), or None without GPM (the
    reason in record['gpm']). Sampling errors end the sampling, never the run."""
    from transformers import TrainerCallback

    gpm, why = Gpm.open(lib)
    record[Launch.GPM] = {GpmRecord.FILE: str(out_file), GpmRecord.STATUS: why,
                          GpmRecord.INDEX: getattr(gpm, "index", None)}
    if gpm is None:
        return None

    lines: list[str] = []  # written in batches (FLUSH_EVERY, at evaluations and at the end): no file opened per step

    def write() -> None:
        nonlocal lines
        if not lines:
            return
        try:
            with open(out_file, "a") as f:
                f.writelines(lines)
        except OSError as exc:  # a full disk ends the sampling, not the run
            record[Launch.GPM][GpmRecord.STATUS] = f"stopped: {type(exc).__name__}: {exc}"
        lines = []

    class GpmSteps(TrainerCallback):
        def _stop(self, why: str | None = None):
            nonlocal gpm
            if why is not None:
                record[Launch.GPM][GpmRecord.STATUS] = f"stopped: {why}"
            if gpm is not None:  # always: every caller checked
                gpm.close()
            gpm = None
            write()

        def _mark(self):
            if gpm is None:
                return None
            try:
                return gpm.mark()
            except Exception as exc:  # noqa: BLE001 - sampling errors end the sampling, never the run
                self._stop(f"{type(exc).__name__}: {exc}")
                return None

        def on_train_begin(self, args, state, control, **kwargs):
            self._mark()

        def on_step_end(self, args, state, control, **kwargs):
            m = self._mark()
            if m is not None:
                lines.append(json.dumps({GpmLine.STEP: state.global_step, **m}) + "\n")
                if len(lines) >= FLUSH_EVERY:
                    write()

        def on_evaluate(self, args, state, control, **kwargs):
            write()  # off the step: an evaluation has just held the host anyway

        def on_train_end(self, args, state, control, **kwargs):
            if gpm is not None:
                self._stop()
            write()

    return GpmSteps()
