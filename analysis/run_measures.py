"""What one run measured: steady step times, measured tokens/s (the launcher's tokens.jsonl), peak memory and eval
loss at a step, GPU busy share (profile.json). Functions of a results row (analysis.runs.collect: the log is parsed
there, once) and the launcher's files beside its log; used by the claims audit (analysis/claims.py) and its figures."""
from __future__ import annotations

import json
import statistics
from pathlib import Path

PROFILE_FILE = "profile.json"
TOKENS_FILE = "tokens.jsonl"


def _profile(run_dir: str | Path) -> dict | None:
    path = Path(run_dir) / PROFILE_FILE
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def steady_intervals(row: dict) -> list[dict]:
    """The run's steady step intervals (analysis.metrics.step_intervals), also leaving out the steps the profiler
    watched: they run slower."""
    prof = _profile(row.get("path", "")) or {}
    profiled = {s["step"] for s in prof.get("steps", []) if "step" in s}
    return [iv for iv in row.get("step_intervals") or [] if iv["excluded"] is None and iv["to_step"] not in profiled]


def step_stats(row: dict) -> dict:
    """Steady-state step time of a run (median, mean, 95 % interval) over steady_intervals."""
    from analysis.metrics import summarize

    return summarize([iv["step_time_s"] for iv in steady_intervals(row)])


def busy_fraction(row: dict) -> float | None:
    prof = _profile(row.get("path", "")) or {}
    fr = [s["gpu_busy_frac"] for s in prof.get("steps", []) if s.get("gpu_busy_frac") is not None]
    return statistics.median(fr) if fr else None


def peak_at(row: dict, step: int | None) -> float | None:
    """Peak reserved memory (ms-swift's running maximum, memory(GiB)) over the training lines up to STEP
    (all of them when STEP is None): two runs over the same batches compare at their common last step."""
    vals = [v for s, v in row.get("memory_curve") or [] if step is None or s <= step]
    return max(vals) if vals else (row.get("peak_mem_gib") if step is None else None)


def last_train_step(row: dict) -> int | None:
    steps = [s for s, _ in row.get("memory_curve") or []]
    return int(max(steps)) if steps else row.get("global_steps")


def common_peaks(a: dict, b: dict) -> tuple[float | None, float | None, int | None]:
    """Peaks of A and B at the last step both reached (an OOM run: its whole log, which is all it has)."""
    steps = [s for s in (last_train_step(a), last_train_step(b)) if s]
    at = min(steps) if steps else None
    return peak_at(a, at), peak_at(b, at), at


def eval_at(row: dict, step: int) -> float | None:
    for s, v in row.get("eval_loss") or []:
        if int(s) == int(step):
            return v
    return None


def last_eval_step(row: dict) -> int | None:
    ev = row.get("eval_loss") or []
    return int(ev[-1][0]) if ev else None


def _tokens_by_step(row: dict) -> dict[int, int] | None:
    try:
        text = (Path(row.get("path", "")) / TOKENS_FILE).read_text()
    except OSError:
        return None
    out = {}
    for raw in text.splitlines():
        try:
            d = json.loads(raw)
            out[int(d["step"])] = int(d["tokens"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            continue
    return out or None


def ratio_of_sums(num, den, n_boot: int = 2000) -> tuple[float, float | None, float | None]:
    """sum(NUM) / sum(DEN) with a 95 % bootstrap range that resamples the (num, den) pairs together (None with fewer
    than 2 pairs). Fixed seed: the same table every time it is made."""
    import numpy as np

    a, b = np.asarray(num, float), np.asarray(den, float)
    point = float(a.sum() / b.sum())
    if len(a) < 2:
        return point, None, None
    idx = np.random.default_rng(0).integers(0, len(a), size=(n_boot, len(a)))
    low, high = (float(x) for x in np.percentile(a[idx].sum(axis=1) / b[idx].sum(axis=1), [2.5, 97.5]))
    return point, low, high


def throughput(row: dict, n_boot: int = 2000) -> dict:
    """Steady-state tokens/s of a run: the tokens of its steady steps / their wall time (steps that the warm-up,
    an eval/save or the profiler touched are left out, as in step_stats), with a 95 % bootstrap range over steps.

    Tokens come from the launcher's tokens.jsonl (real, unpadded tokens per optimizer step); a run without it
    (made before the launcher counted) uses the data's mean length x samples per step: `source` says which."""
    kept = steady_intervals(row)
    by_step = _tokens_by_step(row)
    secs, toks, nsteps = [], [], []
    for iv in kept:
        steps = range(int(iv["from_step"]) + 1, int(iv["to_step"]) + 1)
        if by_step is not None:
            if any(s not in by_step for s in steps):
                continue
            toks.append(sum(by_step[s] for s in steps))
        elif row.get("train_tokens_mean") and row.get("samples_per_step"):
            toks.append(row["train_tokens_mean"] * row["samples_per_step"] * len(steps))
        else:
            continue
        secs.append(iv["seconds"])
        nsteps.append(len(steps))
    source = "tokens.jsonl" if by_step is not None else "mean length x samples per step"
    if not secs or sum(secs) <= 0:
        return {"tokens_per_s": None, "low": None, "high": None, "n_intervals": 0, "source": source}
    point, low, high = ratio_of_sums(toks, secs, n_boot)
    return {"tokens_per_s": point, "low": low, "high": high, "n_intervals": len(secs), "source": source,
            "tokens_per_step": float(sum(toks) / sum(nsteps)), "steady_steps": int(sum(nsteps))}


def paired_ratio(base: dict, test: dict, n_boot: int = 2000) -> dict | None:
    """Step-time ratio BASE / TEST over the steady steps both runs timed, when both trained the same batches
    (tokens.jsonl equal on every such step: same data seed and order). Each step is then its own control, so the
    sample-length noise that dominates unpaired ranges cancels; the range bootstraps steps as pairs.
    None when the runs cannot be paired (no tokens.jsonl, other batches, fewer than 3 common steps)."""
    tb, tt = _tokens_by_step(base), _tokens_by_step(test)
    if tb is None or tt is None:
        return None
    ib = {(int(iv["from_step"]), int(iv["to_step"])): iv["seconds"] for iv in steady_intervals(base)}
    it = {(int(iv["from_step"]), int(iv["to_step"])): iv["seconds"] for iv in steady_intervals(test)}
    common = sorted(set(ib) & set(it))
    for a, b in common:
        if any(s not in tb or tb[s] != tt.get(s) for s in range(a + 1, b + 1)):
            return None
    if len(common) < 3:
        return None
    ratio, low, high = ratio_of_sums([ib[k] for k in common], [it[k] for k in common], n_boot)
    return {"ratio": ratio, "low": low, "high": high, "n_steps": len(common)}


def host_of(row: dict) -> str | None:
    """The host a run was made on, as far as host-bound speed goes (CPU model and count, RAM), from its env.json
    (as analysis.runs.collect read it into the row; read here only for a row without it)."""
    from analysis.runs import read_env

    env = row.get("env")
    if env is None:
        env = read_env(row["path"]) if row.get("path") else {}
    if not env.get("cpu_count"):
        return None
    return f"{env.get('cpu_model') or 'CPU'} x {env['cpu_count']}, {env.get('ram_gib')} GiB RAM"
