"""Benchmark folders beside the training runs: results/<hw>/allreduce/<run>/ (experiments/record/allreduce.py).

Each holds allreduce.json (message sizes, times, algbw and busbw as measured, the NCCL_* variables set), nccl.log (the
benchmark's output with NCCL_DEBUG=INFO: which variables NCCL says it read) and env.json (the host). A folder
without a readable allreduce.json is skipped with a warning, never a traceback.
"""
from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

from experiments.base import runfiles

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
        if not f.is_file():
            continue
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
            sizes = [{k: float(s[k]) for k in ("bytes", "mib", "time_us", "algbw_gbs", "busbw_gbs")}
                     for s in data["sizes"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            warnings.warn(f"{f}: skipped, not an all-reduce sweep ({type(exc).__name__}: {exc})", stacklevel=2)
            continue
        try:
            log = (folder / runfiles.NCCL_LOG).read_text(encoding="utf-8", errors="replace")
        except OSError:
            log = ""
        env = runfiles.read_env_raw(folder)
        host = runfiles.host_id(env)
        out.append({"path": folder, "hw": folder.parent.parent.name, "run": folder.name,
                    "label": data.get("label") or "", "ranks": int(data.get("ranks") or 0),
                    "nccl_version": data.get("nccl_version"), "nccl_env": data.get("nccl_env") or {},
                    "read_vars": nccl_read_vars(log), "host_id": host, "topology": env.get("topology"),
                    "nvlinks": env.get("nvlinks"), "sizes": sizes})
    return out
