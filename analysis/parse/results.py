"""The results tree `results/<hw>/<experiment>/<run>/` as run records: one RunRecord per run folder, with labels.

The runner writes beside ms-swift's files: `env.json` (what ran where) and `run.json` (status: ok, failed
and why, cut or full, dummy weights or real, forced hardware label). This module is the only reader of them.
"""
from __future__ import annotations

import functools
from pathlib import Path

from analysis.core import hardware
from analysis.core.datafiles import read_json_object
from analysis.core.errors import InputError
from analysis.parse import sidefiles
from analysis.parse.logs import LOG_NAME, find_runs, read_log
from analysis.parse.record import RunRecord, record_from_log

ENV_NAME = "env.json"
STATUS_NAME = "run.json"


def read_env(run_dir: str | Path) -> dict:
    """env.json of a run folder ({} when absent), with `hw` filled from the path when env.json lacks it."""
    run_dir = Path(run_dir)
    env = read_json_object(run_dir / ENV_NAME) or {}
    if "hw" not in env:
        ident = identity(run_dir)
        if ident["hw"]:
            env = {**env, "hw": ident["hw"]}
    return env


def read_status(run_dir: str | Path) -> dict:
    return read_json_object(Path(run_dir) / STATUS_NAME) or {}


def identity(run_dir: str | Path) -> dict:
    """hw / experiment / run id from the `results/<hw>/<experiment>/<run>` layout."""
    run_dir = Path(run_dir).resolve()
    parts = run_dir.parts
    hw = parts[-3] if len(parts) >= 3 and hardware.get(parts[-3]) else None
    return {"hw": hw, "experiment": parts[-2] if hw else None, "run": run_dir.name}


def run_folders(results_dir: str | Path) -> list[Path]:
    """Every run folder under RESULTS_DIR: a folder with run.json or logging.jsonl (failed runs too)."""
    root = Path(results_dir)
    if not root.is_dir():
        raise InputError(root, "no such results folder")
    found = {p.parent for name in (STATUS_NAME, LOG_NAME) for p in root.rglob(name)}
    return sorted(p for p in found if not p.name.startswith("checkpoint-"))


def read_run(run_dir: str | Path) -> RunRecord:
    """The RunRecord of one run folder: run.json, env.json, and the log when there is one (a failed run without
    a log comes back failed, with its reason)."""
    run_dir = Path(run_dir)
    env = read_env(run_dir)
    status = read_status(run_dir)
    ident = identity(run_dir)
    info = {
        "hw": env.get("hw") or ident["hw"],
        "experiment": status.get("experiment") or ident["experiment"],
        "run": ident["run"],
        "status": status.get("status", "ok"),
        "failure": status.get("reason"),
        "labels": labels(env, status),
        "env": env,
        "run_status": status,
    }
    if (run_dir / LOG_NAME).is_file():
        return record_from_log(read_log(run_dir), **info)
    if info["status"] == "ok":
        info["status"], info["failure"] = "failed", "no logging.jsonl"
    return RunRecord(path=str(run_dir), **info, **sidefiles.read(run_dir))


def collect(results_dir: str | Path) -> list[RunRecord]:
    """Records of every run folder under RESULTS_DIR (failed runs too, with their reason)."""
    return [read_run(run_dir) for run_dir in run_folders(results_dir)]


def records_under(path: str | Path) -> list[RunRecord]:
    """Records of PATH as `swiftbench parse` takes it: a run folder, a parent of several, or a logging.jsonl.
    Folders the runner made get their env.json and run.json; plain ms-swift output folders are read as they are."""
    out = []
    for run_path in find_runs(path):
        run_dir = run_path.parent if run_path.is_file() else run_path
        if (run_dir / STATUS_NAME).is_file() or (run_dir / ENV_NAME).is_file():
            out.append(read_run(run_dir))
        else:
            rec = record_from_log(read_log(run_path))
            rec.env = read_env(run_dir)
            out.append(rec)
    return out


def labels(env: dict, status: dict) -> list[str]:
    """How a number was obtained, in words that go on every table row and figure."""
    out = []
    if status.get("dummy_weights") or env.get("dummy_weights"):
        out.append("dummy weights")
    if status.get("offline_data"):
        out.append("offline data samples")
    if status.get("max_steps"):
        out.append(f"cut run ({status['max_steps']} steps)")
    launcher = (status.get("key") or {}).get("launcher") or {}
    if launcher.get("stop_after"):
        out.append(f"cut run (stopped after step {launcher['stop_after']} of the full schedule)")
    if launcher.get("mem_cap_gib"):
        out.append(f"allocator capped at {launcher['mem_cap_gib']:g} GiB")
    if status.get("forced_hw"):
        out.append(f"forced hw label (GPU was {env.get('gpu_name', '?')})")
    version = (env.get("packages") or {}).get("ms-swift")
    if version:
        out.append(f"ms-swift {version}")
    return out


@functools.lru_cache(maxsize=1)
def matrix_experiments() -> frozenset[str]:
    """The hardware matrix's experiments (experiments/recipes.yaml, matrix: true): what the speed and convergence
    tables compare across GPUs. Claims experiments have their own tables."""
    from experiments import recipes

    return frozenset(recipes.experiments())


def is_matrix(rec: RunRecord) -> bool:
    return rec.experiment in matrix_experiments()


def latest_per_group(records: list[RunRecord]) -> list[RunRecord]:
    """One record per (hw, experiment, host id): the successful run with the most steps (the least cut), newest first
    among equals; else the newest failed one. Runs from two hosts stay two rows (a host-bound step moves with the
    host); runs made before host fingerprints share one group. The tables show these; the report lists every run."""
    groups: dict[tuple, list[RunRecord]] = {}
    for r in records:
        groups.setdefault((r.hw, r.experiment, r.host_id), []).append(r)
    out = []
    for _, runs in sorted(groups.items(), key=lambda kv: tuple(str(k) for k in kv[0])):
        ok = [r for r in runs if r.ok]
        out.append(sorted(ok or runs, key=lambda r: (r.global_steps or 0, r.run))[-1])
    return out
