"""What the GPU did during a run, from the runner's NVML samples (`nvml.csv`), and whether the run was
GPU-bound or host-bound.

Clocks. `nvml.csv` (experiments/record/gpu.py) has one row per GPU about once a second; `time_s` counts from the
moment the sampler started, just before `swift sft` was launched, so a run's samples also cover model
loading, dataset preprocessing and the exit. The log (`logging.jsonl`) counts from the start of training.
The two are tied together by the **training window** [t_start, t_end] on the NVML clock:

- duration D = `train_runtime` of the log's end-of-training line (Hugging Face's wall time of `train()`);
  for a run that did not finish, the elapsed time at its last logged step;
- t_start, method "tensorboard stamp": the Unix second in the name of the run's TensorBoard event file
  (`runs/events.out.tfevents.<unix seconds>.*`, created when training begins) minus the sampler's start
  time, which is run.json's `finished` minus `wall_s` (both written by the runner). Accurate to about a
  second (both stamps are whole seconds);
- fallback, method "last busy sample" (no event file, or a stamp outside the samples): t_end = the last
  sample with GPU utilisation > 0 while the run held at least half of its peak memory (so the flicker of
  the process tearing down is ignored), and t_start = t_end - D;
- then t_end = t_start + D.

Definitions (all over the samples inside the training window, every GPU of the run):

- `util_mean_pct` / `util_median_pct`: NVML "GPU utilisation", the share of the sample period in which at
  least one kernel ran (not how busy the SMs were);
- `power_mean_w` / `power_median_w`: board power draw; `board_power_w` the board limit of the GPU class
  (data/hardware.yaml's `board_power_w`, datasheets); `power_fraction` = median power / board limit;
- `sm_clock_mean_mhz` / `sm_clock_median_mhz`: SM clock; `power_capped_pct`: share of samples whose
  throttle reasons include a power cap (the GPU was at its power limit);
- `energy_run_j`: joules over everything sampled (load, training, exit), from NVML's energy counter
  (`energy_j`, cumulative since the sampler started), summed over GPUs; `energy_train_j`: the same over the
  training window (the counter interpolated linearly at the window's ends; where a GPU has no counter,
  power integrated with the trapezoid rule);
- steady-state window: the log intervals that `analysis.measure.steps.steady_intervals` keeps for the step time
  (not the first interval, not warm-up, not one with an eval or a checkpoint save), each placed on the NVML
  clock at t_start + its elapsed times;
- `j_per_1k_tokens` = 1000 x energy over the steady-state intervals / tokens trained in them, where
  tokens = the tokens of those intervals as tokens/s counts them (analysis.measure.throughput.steady_tokens:
  the launcher's counted tokens, else optimizer steps x samples per step x the data's mean tokens per sample).

Verdict. Three indicators, each compared with a constant below, vote "host-bound" or "GPU-bound"; the
majority of those available wins and a tie goes to the utilisation vote (the most direct of the three). Where the
run has GPM counters (`gpm.jsonl`, H100/H200: analysis.measure.profile.steady_share), the utilisation vote is GPM's
busy share of the steady steps (`gpm_busy_pct`) instead of the NVML samples' median: NVML's "GPU utilisation" covers
only its own sample period before each reading ("between 1 second and 1/6 second depending on the product", NVML's
documentation), and on the H200 the once-a-second readings of a mixed step flip between 0 and 100 % (a 20-step bs16
run: median 4 % while GPM measured 67 % busy over its steady steps).
Runs without NVML samples get no verdict.
"""
from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd

from analysis.measure.profile import steady_share
from analysis.measure.steps import steady_intervals
from analysis.measure.throughput import steady_tokens
from analysis.measure.utilisation_row import UtilisationRow
from analysis.parse.record import RunRecord
from analysis.parse.results import read_status
from experiments.base import hardware, runfiles
from experiments.base.errors import InputError
from experiments.base.runfolder import Nvml, Run

NVML_NAME = runfiles.NVML_CSV

# Host-bound when the median NVML utilisation in the training window is below this: the GPU then runs no
# kernel for more than half of the time, i.e. it waits for the host (Python, kernel launches, data loading,
# optimizer bookkeeping) more than it computes.
UTIL_HOST_BOUND_PCT = 50.0
# Host-bound when the median board power is below this share of the board limit: busy tensor cores draw
# most of the limit (the H200 bs16 runs sit at 540-630 W of 700 W and hit the power cap), while a loaded
# but idle H200 draws 80-120 W; below half the limit the SMs are idle for much of the time.
POWER_HOST_BOUND_FRACTION = 0.5
# Host-bound when MFU is below this. Deliberately low: LoRA on a 7B model with ~128-token samples does small
# matrix multiplies, so even a GPU-bound run is far from peak (the H200 bs16 run, ~100 % utilisation, reaches
# about 6-7 %); only an MFU far below that says the GPU is starved rather than inefficient.
MFU_HOST_BOUND = 0.02
POWER_CAP_RE = re.compile(r"PowerCap|PowerBrake", re.IGNORECASE)

COLUMNS = list(UtilisationRow.__annotations__)


# ------------------------------------------------------------------------------------------ reading


def read_nvml(run_dir: str | Path) -> pd.DataFrame | None:
    """nvml.csv of a run folder as numbers, or None when it is missing or holds no sample."""
    path = Path(run_dir) / NVML_NAME
    if not path.is_file() or path.stat().st_size == 0:
        return None
    try:
        df = pd.read_csv(path, on_bad_lines="skip")
    except (pd.errors.EmptyDataError, pd.errors.ParserError):
        return None
    if df.empty or Nvml.TIME_S not in df.columns:
        return None
    for col in df.columns:
        if col != Nvml.THROTTLE:
            df[col] = pd.to_numeric(df[col], errors="coerce")
    if Nvml.GPU not in df.columns:
        df[Nvml.GPU] = 0
    throttle = df.get(Nvml.THROTTLE, pd.Series(index=df.index, dtype=object))
    df[Nvml.THROTTLE] = throttle.astype(object).fillna("").astype(str)
    df = df.dropna(subset=[Nvml.TIME_S]).sort_values([Nvml.GPU, Nvml.TIME_S], ignore_index=True)
    return df if len(df) else None


def _tensorboard_stamp(run_dir: Path) -> int | None:
    stamps = []
    for p in (run_dir / "runs").glob("events.out.tfevents.*"):
        parts = p.name.split(".")
        if len(parts) > 3 and parts[3].isdigit():
            stamps.append(int(parts[3]))
    return min(stamps) if stamps else None


def _resumed(run_dir: Path) -> bool:
    """Did the runner resume this run from a checkpoint (run.json `resumes`)?"""
    try:
        return bool(read_status(run_dir).get(Run.RESUMES))
    except InputError:
        return False


def _sampler_start(run_dir: Path) -> float | None:
    """Unix time at which the NVML sampler started: run.json's finished - wall_s."""
    try:
        status = read_status(run_dir)
        finished = dt.datetime.fromisoformat(status[Run.FINISHED]).timestamp()
        return finished - float(status[Run.WALL_S])
    except (InputError, ValueError, KeyError, TypeError):
        return None


@dataclass(frozen=True)
class TrainingWindow:
    """The training on the NVML clock, and how it was placed there (the TensorBoard stamp or the last busy sample)."""

    start_s: float
    end_s: float
    method: str


def training_window(run_dir: str | Path, nv: pd.DataFrame, duration_s: float | None) -> TrainingWindow | None:
    """The training's window on the NVML clock (see the module docstring)."""
    if duration_s is None or not math.isfinite(duration_s) or duration_s <= 0:
        return None
    run_dir = Path(run_dir)
    if _resumed(run_dir):  # nvml.csv holds the last attempt's samples, the log's times span every attempt
        return None
    t_last = float(nv[Nvml.TIME_S].max())
    stamp, t0 = _tensorboard_stamp(run_dir), _sampler_start(run_dir)
    if stamp is not None and t0 is not None:
        start = stamp - t0
        if -2.0 <= start < t_last:
            start = max(start, 0.0)
            return TrainingWindow(start, start + duration_s, "tensorboard stamp")
    mem = nv[Nvml.MEM_USED_MIB] if Nvml.MEM_USED_MIB in nv else pd.Series(np.nan, index=nv.index)
    busy = nv[(nv[Nvml.UTIL_GPU_PCT] > 0) & ((mem >= 0.5 * mem.max()) | mem.isna())]
    if busy.empty:
        return None
    end = float(busy[Nvml.TIME_S].max())
    return TrainingWindow(max(end - duration_s, 0.0), end, "last busy sample")


# ------------------------------------------------------------------------------------------- energy


def energy_between(nv: pd.DataFrame, t0: float, t1: float) -> float | None:
    """Joules used by all GPUs of the samples between t0 and t1 on the NVML clock."""
    if t1 <= t0:
        return 0.0
    total, any_gpu = 0.0, False
    for _, g in nv.groupby(Nvml.GPU):
        g = g.sort_values(Nvml.TIME_S)
        t = g[Nvml.TIME_S].to_numpy(float)
        e = g[Nvml.ENERGY_J].to_numpy(float) if Nvml.ENERGY_J in g else np.full(len(g), np.nan)
        ok = np.isfinite(e)
        if ok.sum() >= 2:
            total += float(np.interp(t1, t[ok], e[ok]) - np.interp(t0, t[ok], e[ok]))
            any_gpu = True
            continue
        p = g[Nvml.POWER_W].to_numpy(float) if Nvml.POWER_W in g else np.full(len(g), np.nan)
        ok = np.isfinite(p)
        if ok.sum() >= 2:
            grid = np.concatenate([[t0], t[ok][(t[ok] > t0) & (t[ok] < t1)], [t1]])
            vals = np.interp(grid, t[ok], p[ok])
            total += float(np.sum((vals[1:] + vals[:-1]) / 2 * np.diff(grid)))
            any_gpu = True
    return total if any_gpu else None


def _energy_run(nv: pd.DataFrame) -> float | None:
    if Nvml.ENERGY_J in nv and nv[Nvml.ENERGY_J].notna().any():
        return float(nv.groupby(Nvml.GPU)[Nvml.ENERGY_J].max().sum())
    return energy_between(nv, float(nv[Nvml.TIME_S].min()), float(nv[Nvml.TIME_S].max()))


# ------------------------------------------------------------------------------------------- verdict


def verdict(util_median: float | None, power_fraction: float | None, mfu: float | None,
            gpm_busy_pct: float | None = None) -> tuple[str, str]:
    """("GPU-bound" | "host-bound" | "not measured", evidence in words) from the three indicators; GPM_BUSY_PCT,
    where measured, casts the utilisation vote in place of NVML's sampled median."""
    votes = []  # (name, host-bound?, text)
    if gpm_busy_pct is not None and math.isfinite(gpm_busy_pct):
        host = gpm_busy_pct < UTIL_HOST_BOUND_PCT
        votes.append(("util", host, f"GPU busy {gpm_busy_pct:.0f} % of the steady steps (GPM counters; "
                                    f"{'<' if host else '>='} {UTIL_HOST_BOUND_PCT:.0f} %)"))
    elif util_median is not None and math.isfinite(util_median):
        host = util_median < UTIL_HOST_BOUND_PCT
        votes.append(("util", host, f"median GPU utilisation {util_median:.0f} % "
                                    f"({'<' if host else '>='} {UTIL_HOST_BOUND_PCT:.0f} %)"))
    if power_fraction is not None and math.isfinite(power_fraction):
        host = power_fraction < POWER_HOST_BOUND_FRACTION
        votes.append(("power", host, f"median power {power_fraction:.0%} of the board limit "
                                     f"({'<' if host else '>='} {POWER_HOST_BOUND_FRACTION:.0%})"))
    if mfu is not None and math.isfinite(mfu):
        host = mfu < MFU_HOST_BOUND
        votes.append(("mfu", host, f"MFU {mfu:.1%} ({'<' if host else '>='} {MFU_HOST_BOUND:.0%})"))
    if not any(name == "util" for name, _, _ in votes):
        return "not measured", "no NVML samples in the training window" + (
            f"; {votes[0][2]}" if votes else "")
    n_host = sum(host for _, host, _ in votes)
    n = len(votes)
    if 2 * n_host == n:
        host = next(h for name, h, _ in votes if name == "util")
        rule = "tie, utilisation decides"
    else:
        host = 2 * n_host > n
        rule = "majority"
    word = "host-bound" if host else "GPU-bound"
    agree = n_host if host else n - n_host
    return word, "; ".join(t for _, _, t in votes) + f" -> {agree} of {n} say {word} ({rule})"


# ------------------------------------------------------------------------------------------ per run


def _window_stats(w: pd.DataFrame, col: str) -> tuple[float | None, float | None]:
    if col not in w or w[col].notna().sum() == 0:
        return None, None
    s = w[col].dropna()
    return float(s.mean()), float(s.median())


def run_utilisation(rec: RunRecord) -> UtilisationRow:
    """Utilisation, energy and verdict of one run (see the module docstring)."""
    from analysis.measure.flops import mfu

    util = mfu(rec) if rec.has_log else None
    # the module's own row (its columns), not keys of a run-folder file
    out = UtilisationRow(
        hw=rec.hw, experiment=rec.experiment, run=rec.run, labels="; ".join(rec.labels),
        nvml_samples=0, window_method=None, train_start_s=None, train_end_s=None, train_s=None,
        util_mean_pct=None, util_median_pct=None, power_mean_w=None, power_median_w=None,
        board_power_w=hardware.board_power().get(rec.hw) if rec.hw else None, power_fraction=None,
        power_capped_pct=None, sm_clock_mean_mhz=None, sm_clock_median_mhz=None, energy_run_j=None,
        energy_train_j=None, steady_s=None, energy_steady_j=None, tokens_steady=None,
        j_per_1k_tokens=None, mfu=util.mfu if util else None, hfu=util.hfu if util else None,
        gpm_busy_pct=None, verdict=None, evidence=None)
    run_dir = Path(rec.path)
    nv = read_nvml(run_dir)
    if nv is None:
        said, evidence = verdict(None, None, out["mfu"])
        out["verdict"] = said
        out["evidence"] = "no nvml.csv" + evidence[len("no NVML samples in the training window"):]
        return out
    out["nvml_samples"] = int(len(nv))
    out["energy_run_j"] = _energy_run(nv)

    elapsed = dict(rec.elapsed)
    duration = rec.train_runtime_s
    if duration is None and elapsed:
        duration = max(elapsed.values())
    win = training_window(run_dir, nv, duration)
    if win is None:
        out["verdict"], out["evidence"] = verdict(None, None, out["mfu"])
        return out
    t0, t1 = win.start_s, win.end_s
    out["window_method"], out["train_start_s"], out["train_end_s"], out["train_s"] = win.method, t0, t1, t1 - t0
    w = nv[(nv[Nvml.TIME_S] >= t0) & (nv[Nvml.TIME_S] <= t1)]
    out["util_mean_pct"], out["util_median_pct"] = _window_stats(w, Nvml.UTIL_GPU_PCT)
    out["power_mean_w"], out["power_median_w"] = _window_stats(w, Nvml.POWER_W)
    out["sm_clock_mean_mhz"], out["sm_clock_median_mhz"] = _window_stats(w, Nvml.SM_CLOCK_MHZ)
    if len(w):
        out["power_capped_pct"] = 100.0 * float(w[Nvml.THROTTLE].str.contains(POWER_CAP_RE).mean())
    if out["power_median_w"] is not None and out["board_power_w"]:
        out["power_fraction"] = out["power_median_w"] / out["board_power_w"]
    out["energy_train_j"] = energy_between(nv, t0, t1)

    # Steady state: the intervals the step time is measured on, placed on the NVML clock.
    kept = [iv for iv in steady_intervals(rec) if iv.from_step in elapsed and iv.to_step in elapsed]
    if kept:
        spans = [(t0 + elapsed[iv.from_step], t0 + elapsed[iv.to_step]) for iv in kept]
        energies = [energy_between(nv, a, b) for a, b in spans]
        out["steady_s"] = sum(b - a for a, b in spans)
        if all(e is not None for e in energies):
            out["energy_steady_j"] = sum(cast(list[float], energies))  # no None: checked above
        counted, _ = steady_tokens(rec)
        if counted and len(counted) == len(kept):
            out["tokens_steady"] = sum(t for _, t in counted)
        if out["energy_steady_j"] is not None and out["tokens_steady"]:
            out["j_per_1k_tokens"] = 1000.0 * out["energy_steady_j"] / out["tokens_steady"]

    g = steady_share(rec)
    out["gpm_busy_pct"] = 100.0 * g.gpm_busy_frac if g.gpm_busy_frac is not None else None
    said, evidence = verdict(out["util_median_pct"], out["power_fraction"], out["mfu"], out["gpm_busy_pct"])
    if out["power_capped_pct"]:
        evidence += f"; power-capped in {out['power_capped_pct']:.0f} % of samples"
    out["verdict"], out["evidence"] = said, evidence
    return out


def summary(records: list[RunRecord]) -> pd.DataFrame:
    """One row per run (failed ones included), columns COLUMNS."""
    return pd.DataFrame([run_utilisation(r) for r in records], columns=COLUMNS)


def timeline(rec: RunRecord, t0: float | None, t1: float | None) -> pd.DataFrame | None:
    """The run's NVML samples with `t_rel_s` = seconds since training started at T0 (NaN-free time axis) and
    `in_training` marking the training window T0 .. T1 (run_utilisation's train_start_s, train_end_s); None without
    samples."""
    nv = read_nvml(rec.path)
    if nv is None:
        return None
    nv = nv.copy()
    nv["t_rel_s"] = nv[Nvml.TIME_S] - (t0 or 0.0)
    nv["in_training"] = (nv[Nvml.TIME_S] >= t0) & (nv[Nvml.TIME_S] <= t1) if t0 is not None else False
    for key in ("hw", "experiment", "run"):
        nv[key] = getattr(rec, key)
    return nv
