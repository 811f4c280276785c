"""Benchmark folders beside the training runs: results/<hw>/allreduce/<run>/ (experiments/record/allreduce.py).

Each holds allreduce.json (message sizes, times, algbw and busbw as measured, the NCCL_* variables set), nccl.log (the
benchmark's output with NCCL_DEBUG=INFO: which variables NCCL says it read) and env.json (the host). A folder
without a readable allreduce.json is skipped with a warning, never a traceback.
"""
from __future__ import annotations

import re
import warnings
from pathlib import Path

from experiments.base import runfiles, userfiles
from experiments.base.errors import InputError

BENCH = "allreduce"
FILE = runfiles.ALLREDUCE_JSON


_READ_RE = re.compile(r"NCCL INFO (NCCL_[A-Z0-9_]+) set by environment to (\S+)")


def nccl_read_vars(log_text: str) -> dict[str, str]:
    """The NCCL_* variables NCCL says it read ('NCCL INFO NCCL_X set by environment to V', NCCL_DEBUG=INFO)."""
    return {m.group(1): m.group(2).rstrip(".") for m in _READ_RE.finditer(log_text)}


def allreduce_runs(results_dir: str | Path, hw: str | None = None) -> list[dict]:
    """Every all-reduce sweep under RESULTS_DIR (of HW only, when given), oldest first: {path, hw, run, label, ranks,
    nccl_version, nccl_env, read_vars, host_id, sizes: [{bytes, mib, time_us, algbw_gbs, busbw_gbs}]}."""
    out = []
    root = Path(results_dir)
    for folder in sorted(root.glob(f"{hw or '*'}/{BENCH}/*")):
        f = folder / FILE
        if not userfiles.present(f):
            continue
        try:
            data = userfiles.read_json(f, runfiles.max_bytes(f))
            sizes = [{k: float(s[k]) for k in ("bytes", "mib", "time_us", "algbw_gbs", "busbw_gbs")}
                     for s in data["sizes"]]
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
        out.append({"path": folder, "hw": folder.parent.parent.name, "run": folder.name,
                    "label": data.get("label") or "", "ranks": int(data.get("ranks") or 0),
                    "nccl_version": data.get("nccl_version"), "nccl_env": data.get("nccl_env") or {},
                    "read_vars": nccl_read_vars(log), "host_id": host, "topology": env.get("topology"),
                    "nvlinks": env.get("nvlinks"), "sizes": sizes})
    return out
