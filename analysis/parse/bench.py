"""Benchmark folders beside the training runs: results/<hw>/allreduce/<run>/ (experiments/record/allreduce.py).

Each holds allreduce.json (message sizes, times, algbw and busbw as measured, the NCCL_* variables set), nccl.log (the
benchmark's output with NCCL_DEBUG=INFO: which variables NCCL says it read) and env.json (the host). A folder
without a readable allreduce.json is skipped with a warning, never a traceback.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path

from experiments.base import runfiles, userfiles
from experiments.base.errors import InputError
from experiments.base.runfolder import Allreduce, AllreduceSize, Env

BENCH = "allreduce"
FILE = runfiles.ALLREDUCE_JSON


_READ_RE = re.compile(r"NCCL INFO (NCCL_[A-Z0-9_]+) set by environment to (\S+)")


def nccl_read_vars(log_text: str) -> dict[str, str]:
    """The NCCL_* variables NCCL says it read ('NCCL INFO NCCL_X set by environment to V', NCCL_DEBUG=INFO)."""
    return {m.group(1): m.group(2).rstrip(".") for m in _READ_RE.finditer(log_text)}


@dataclass(frozen=True)
class SweepSize:
    """One message size of an all-reduce sweep: bytes (and MiB), time, algorithm and bus bandwidth."""

    bytes: float
    mib: float
    time_us: float
    algbw_gbs: float
    busbw_gbs: float


@dataclass(frozen=True)
class Sweep:
    """One all-reduce sweep folder: where, its label and ranks, NCCL's version, the NCCL_* variables set and those
    NCCL said it read, the host, and every message size."""

    path: Path
    hw: str
    run: str
    label: str
    ranks: int
    nccl_version: str | None
    nccl_env: dict[str, str]
    read_vars: dict[str, str]
    host_id: str | None
    topology: object
    nvlinks: object
    sizes: list[SweepSize]


def allreduce_runs(results_dir: str | Path, hw: str | None = None) -> list[Sweep]:
    """Every all-reduce sweep under RESULTS_DIR (of HW only, when given), oldest first."""
    out = []
    root = Path(results_dir)
    for folder in sorted(root.glob(f"{hw or '*'}/{BENCH}/*")):
        f = folder / FILE
        if not userfiles.present(f):
            continue
        try:
            data = userfiles.read_json(f, runfiles.max_bytes(f))
            sizes = [SweepSize(*(float(s[k]) for k in AllreduceSize.FIELDS)) for s in data[Allreduce.SIZES]]
        except (InputError, ValueError, KeyError, TypeError) as exc:
            why = exc.message if isinstance(exc, InputError) else type(exc).__name__
            warnings.warn(f"{f}: skipped, not an all-reduce sweep ({why})", stacklevel=2)
            continue
        log_file = folder / runfiles.NCCL_LOG
        try:
            log = userfiles.read_bytes(log_file, runfiles.max_bytes(log_file)).decode("utf-8", "replace")
        except InputError:
            log = ""
        env = runfiles.read_env_raw(folder)
        host = runfiles.host_id(env)
        out.append(Sweep(folder, folder.parent.parent.name, folder.name, data.get(Allreduce.LABEL) or "",
                         int(data.get(Allreduce.RANKS) or 0), data.get(Allreduce.NCCL_VERSION),
                         data.get(Allreduce.NCCL_ENV) or {},
                         nccl_read_vars(log), host, env.get(Env.TOPOLOGY), env.get(Env.NVLINKS), sizes))
    return out
