"""A results tree `results/<hw>/<experiment>/<run>/` as rows: one parsed run each, with its labels.

The runner writes beside ms-swift's files: `env.json` (what ran where) and `run.json` (status: ok, failed
and why, cut or full, dummy weights or real, forced hardware label). This module is the only reader of them.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path

from analysis.errors import InputError
from analysis.logs import LOG_NAME, read_log

ENV_NAME = "env.json"
STATUS_NAME = "run.json"


def _read_json(path: Path) -> dict | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(path, f"not valid JSON: {exc.msg}", exc.lineno) from None
    if not isinstance(data, dict):
        raise InputError(path, "not a JSON object")
    return data


def read_env(run_dir: str | Path) -> dict:
    """env.json of a run folder ({} when absent), with `hw` filled from the path when env.json lacks it."""
    run_dir = Path(run_dir)
    env = _read_json(run_dir / ENV_NAME) or {}
    if "hw" not in env:
        ident = identity(run_dir)
        if ident["hw"]:
            env = {**env, "hw": ident["hw"]}
    return env


def read_status(run_dir: str | Path) -> dict:
    return _read_json(Path(run_dir) / STATUS_NAME) or {}


def identity(run_dir: str | Path) -> dict:
    """hw / experiment / run id from the `results/<hw>/<experiment>/<run>` layout."""
    from analysis import hardware

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


def collect(results_dir: str | Path) -> list[dict]:
    """Metrics plus labels for every run under RESULTS_DIR; failed runs come back with their reason."""
    from analysis.metrics import run_metrics

    rows = []
    for run_dir in run_folders(results_dir):
        env = read_env(run_dir)
        status = read_status(run_dir)
        ident = identity(run_dir)
        row = {
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
            row.update(run_metrics(read_log(run_dir), env))
        else:
            row.update({"path": str(run_dir), "complete": False})
            if row["status"] == "ok":
                row["status"], row["failure"] = "failed", "no logging.jsonl"
        rows.append(row)
    return rows


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
    tables compare across GPUs. Claims experiments (experiments/claims.yaml) have their own table."""
    from analysis.datafiles import read_yaml

    data = read_yaml(Path(__file__).resolve().parents[1] / "experiments" / "recipes.yaml") or {}
    return frozenset(k for k, v in (data.get("experiments") or {}).items() if (v or {}).get("matrix", True))


def is_matrix(row: dict) -> bool:
    return row.get("experiment") in matrix_experiments()
