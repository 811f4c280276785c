"""GPU kernels, copies and memsets of a profiled window, traced through CUPTI's activity API alone (ctypes).

Why: torch.profiler's CUDA activity also traces every CUDA runtime call (cudaLaunchKernel, ...). A host-bound step
launches ~177,000 kernels (the seed recipe), so that tracing lengthens the very host time it is meant to measure (the
seed recipe's profiled steps ran 1.14-1.21x its steady ones on the slower H200 hosts). torch's own per-type filter
(pytorch#176351) is not in the GPU hosts' torch 2.11. This module asks CUPTI for CONCURRENT_KERNEL, MEMCPY and MEMSET
records only; nothing is recorded per runtime call. It loads the libcupti that torch's CUDA build ships
(nvidia-cuda-cupti), so nothing is installed.

Only what the suite needs is read from a record: its kind and its start and end (ns, the GPU's timestamps), at the
offsets every CUPTI version since CUDA 11 puts them (kind at 0; start at 16 and end at 24 in CUpti_ActivityKernel4-10,
CUpti_ActivityMemcpy5-6 and CUpti_ActivityMemset2-4). Kernel names are not read (their offset varies by record
version; a wrong one would read a wild pointer): a window traced this way has no top-kernels list.

Not to be used in a process where torch.profiler has run: both register CUPTI's one pair of buffer callbacks, and
after a torch.profiler session this tracer's durations came out doubled on the H200 (busy above the wall time).

Measured on the H200 (results/calls/2026-12-01-call23-26-profiler-overhead): alone in its process its GPU-busy time
equals torch.profiler's to the microsecond, but it adds about as much per kernel launch as torch.profiler's CUDA
activity with the runtime calls (1.4-2.3 us per single-element add, 2.7-7.3 us per kernel of a LoRA stack, either
way). So the launcher does not use it: the runtime-call tracing is not what a profiled step of the seed recipe pays
for. Kept, with experiments.probes.profiler_overhead, to measure that on other hosts and CUPTI versions.
"""
from __future__ import annotations

import ctypes
import glob
import os
import sys
import threading
from collections.abc import Callable, Iterator

KIND_MEMCPY, KIND_MEMSET, KIND_CONCURRENT_KERNEL = 1, 2, 10  # CUpti_ActivityKind
KINDS = (KIND_CONCURRENT_KERNEL, KIND_MEMCPY, KIND_MEMSET)
KIND_NAMES = {KIND_CONCURRENT_KERNEL: "CONCURRENT_KERNEL", KIND_MEMCPY: "MEMCPY", KIND_MEMSET: "MEMSET"}
START_OFFSET, END_OFFSET = 16, 24
CUPTI_SUCCESS = 0
CUPTI_ERROR_MAX_LIMIT_REACHED = 12  # cuptiActivityGetNextRecord: no more records in the buffer
FLUSH_FORCED = 1                    # CUPTI_ACTIVITY_FLAG_FLUSH_FORCED
BUFFER_BYTES = 32 << 20             # 32 MiB per buffer: a seed-recipe step (~180,000 kernels) fills about 6 MB/step


def libcupti_candidates() -> list[str]:
    """Where a pip-installed CUDA torch keeps libcupti (nvidia-cuda-cupti: nvidia/cu13/lib, nvidia/cuda_cupti/lib),
    newest soname first, then the loader's own search (CUPTI_LIB overrides all)."""
    if os.environ.get("CUPTI_LIB"):
        return [os.environ["CUPTI_LIB"]]
    found = []
    for base in sys.path:
        for pattern in ("nvidia/*/lib/libcupti.so*", "nvidia/cuda_cupti/lib/libcupti.so*", "torch/lib/libcupti*.so*"):
            found += glob.glob(os.path.join(base, pattern))
    return sorted(set(found), reverse=True) + ["libcupti.so.13", "libcupti.so.12", "libcupti.so"]


def load_libcupti() -> ctypes.CDLL:
    """The first libcupti that loads (module docstring), or OSError naming what was tried."""
    tried = []
    for path in libcupti_candidates():
        try:
            return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as exc:
            tried.append(f"{path}: {exc}")
    raise OSError("no libcupti could be loaded (" + "; ".join(tried[-3:]) + ")")


def iter_records(next_record: Callable[[int, int, ctypes.c_void_p], int], buffer: int, valid: int) -> Iterator[int]:
    """Addresses of the records in BUFFER (VALID bytes), walked with cuptiActivityGetNextRecord (or a stand-in)."""
    rec = ctypes.c_void_p(None)
    while True:
        status = next_record(buffer, valid, ctypes.byref(rec))
        if status != CUPTI_SUCCESS or not rec.value:
            return
        yield rec.value


def spans_of(addresses: Iterator[int]) -> tuple[list[tuple[int, int]], dict[str, int]]:
    """(start, end) ns of the kernel, memcpy and memset records at ADDRESSES, and the count of records per kind."""
    spans, counts = [], {}
    u32, u64 = ctypes.c_uint32.from_address, ctypes.c_uint64.from_address
    for a in addresses:
        kind = u32(a).value
        name = KIND_NAMES.get(kind, str(kind))
        counts[name] = counts.get(name, 0) + 1
        if kind in KIND_NAMES:
            spans.append((u64(a + START_OFFSET).value, u64(a + END_OFFSET).value))
    return spans, counts


class KernelTracer:
    """start() ... stop() -> (GPU activity spans in ns, counts per record kind, dropped records)."""

    def __init__(self, lib: ctypes.CDLL | None = None):
        self.lib = lib or load_libcupti()
        self._buffers: dict[int, ctypes.Array] = {}
        self._spans: list[tuple[int, int]] = []
        self._counts: dict[str, int] = {}
        self._dropped = 0
        self._lock = threading.Lock()
        request_t = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
                                     ctypes.POINTER(ctypes.c_size_t))
        complete_t = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t,
                                      ctypes.c_size_t)
        # kept on self: CUPTI calls them from its own thread for as long as they are registered
        self._request_cb = request_t(self._request)
        self._complete_cb = complete_t(self._complete)
        self.lib.cuptiActivityGetNextRecord.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                                                        ctypes.POINTER(ctypes.c_void_p)]
        self.lib.cuptiActivityGetNextRecord.restype = ctypes.c_int
        for fn in ("cuptiActivityEnable", "cuptiActivityDisable"):
            getattr(self.lib, fn).argtypes = [ctypes.c_int]
            getattr(self.lib, fn).restype = ctypes.c_int
        self.lib.cuptiActivityFlushAll.argtypes = [ctypes.c_uint32]
        self.lib.cuptiActivityFlushAll.restype = ctypes.c_int
        self.lib.cuptiActivityGetNumDroppedRecords.argtypes = [ctypes.c_void_p, ctypes.c_uint32,
                                                          ctypes.POINTER(ctypes.c_size_t)]
        self.lib.cuptiActivityGetNumDroppedRecords.restype = ctypes.c_int

    def _check(self, status: int, what: str) -> None:
        if status != CUPTI_SUCCESS:
            raise RuntimeError(f"cuptiActivity{what} returned CUPTI status {status}")

    def _request(self, buffer_pp, size_p, max_records_p) -> None:
        buf = (ctypes.c_uint64 * (BUFFER_BYTES // 8))()  # 8-byte aligned, as CUPTI requires
        addr = ctypes.addressof(buf)
        with self._lock:
            self._buffers[addr] = buf
        buffer_pp[0] = addr
        size_p[0] = BUFFER_BYTES
        max_records_p[0] = 0  # as many as fit

    def _complete(self, ctx, stream_id, buffer, size, valid) -> None:
        try:
            if buffer and valid:
                spans, counts = spans_of(iter_records(self.lib.cuptiActivityGetNextRecord, buffer, valid))
                dropped = ctypes.c_size_t(0)
                self.lib.cuptiActivityGetNumDroppedRecords(ctx, stream_id, ctypes.byref(dropped))
                with self._lock:
                    self._spans += spans
                    for k, v in counts.items():
                        self._counts[k] = self._counts.get(k, 0) + v
                    self._dropped += dropped.value
        finally:
            with self._lock:
                self._buffers.pop(buffer, None)

    def start(self) -> None:
        """Register this tracer's buffer callbacks (again: a torch.profiler session in between registers its own) and
        enable the three kinds."""
        with self._lock:
            self._spans, self._counts, self._dropped = [], {}, 0
        self._check(self.lib.cuptiActivityRegisterCallbacks(self._request_cb, self._complete_cb), "RegisterCallbacks")
        for kind in KINDS:
            self._check(self.lib.cuptiActivityEnable(kind), f"Enable({KIND_NAMES[kind]})")

    def stop(self) -> tuple[list[tuple[int, int]], dict[str, int], int]:
        """Disable the kinds, flush every buffer (the caller synchronised the device first) and hand back the window."""
        for kind in KINDS:
            self.lib.cuptiActivityDisable(kind)
        self._check(self.lib.cuptiActivityFlushAll(FLUSH_FORCED), "FlushAll")
        with self._lock:
            return self._spans, dict(self._counts), self._dropped
