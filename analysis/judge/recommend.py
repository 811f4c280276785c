"""The recommended recipe for the job: among the matrix recipes, the one whose committed full-epoch run finishes the
epoch soonest (train_runtime, analysis.measure.jobtime), with its eval loss equal to the seed recipe's within the
seed band, held against a full-epoch seed run made on the same host (a host-bound step moves with the host, so a
cross-host ratio measures the hosts). Soonest is counted against that host's seed run (the seed's train_runtime /
the recipe's): on one host the same order as train_runtime, and two recipes measured on two hosts are not ranked by
their hosts.

Without such a same-host pair nothing is claimed: the pick says so (`note`, "no same-host full-epoch pair yet: ...")
and names the best candidate with its label, never a ratio it does not have. Which experiment is which is data: the
seed recipe is analysis.judge.published.SEED_EXPERIMENT, the matrix is experiments/recipes.yaml, the seeds of the band
claims.yaml figures.recipes.spread.
"""
from __future__ import annotations

from analysis.judge import config
from analysis.judge.band import loss_against
from analysis.judge.published import SEED_EXPERIMENT
from analysis.judge.result import rnd
from analysis.judge.select import runs_by_experiment
from analysis.measure import jobtime, throughput
from analysis.parse.record import RunRecord
from analysis.parse.results import is_matrix

NO_PAIR = "no same-host full-epoch pair yet"


def _newest(recs: list[RunRecord]) -> RunRecord:
    """The newest of RECS (never empty: a group exists because it has a run)."""
    return max(recs, key=lambda r: r.run)


def full_epoch_runs(records: list[RunRecord]) -> list[RunRecord]:
    """The matrix runs on one GPU that trained their whole epoch and finished (jobtime.job_time full_epoch)."""
    return [r for r in records if is_matrix(r) and (r.world_size or 1) == 1 and jobtime.job_time(r)["full_epoch"]]


def candidates(records: list[RunRecord]) -> list[dict]:
    """One row per (hardware, matrix experiment, host) with a full-epoch run (its newest): time to finish the job and
    the start-up beside it, steady tokens/s, and, where the host has a full-epoch seed run, x seed (seed's
    train_runtime / this one's) and the eval loss against the seed run's within the seed band."""
    full = full_epoch_runs(records)
    groups: dict[tuple, list[RunRecord]] = {}
    for r in full:
        groups.setdefault((r.hw, r.experiment, r.host_id), []).append(r)
    seeds = {(hw, host): _newest(g) for (hw, exp, host), g in groups.items() if exp == SEED_EXPERIMENT and host}
    spread = config.figures("recipes")["spread"]
    band_runs = {}
    rows = []
    for (hw, exp, host), g in sorted(groups.items(), key=lambda kv: tuple(str(k) for k in kv[0])):
        rec = _newest(g)
        jt = jobtime.job_time(rec)
        seed = seeds.get((hw, host)) if host else None
        row = {"hw": hw, "experiment": exp, "host": host, "run": rec.run, "steps": jt["steps"],
               "train_runtime_s": jt["train_runtime_s"], "load_s": jt["load_s"],
               "tokens_per_s": throughput.throughput(rec).tokens_per_s, "peak_gib": rec.peak_mem_gib,
               "path": rec.path, "seed_run": None,
               "seed_train_runtime_s": None, "x_seed": None, "eval_step": rec.last_eval_step,
               "eval_loss": rnd(rec.eval_loss[-1][1]) if rec.eval_loss else None, "seed_eval_loss": None,
               "loss_dev": None, "seed_range": None, "band_step": None, "loss_counts": None,
               "same_host_seed": seed is not None, "labels": "; ".join(rec.labels)}
        if seed is not None:
            if hw not in band_runs:
                band_runs[hw] = runs_by_experiment(None, hw, records)
            lc = loss_against(rec, seed, spread, band_runs[hw])
            row.update(seed_run=seed.run, seed_train_runtime_s=jobtime.job_time(seed)["train_runtime_s"],
                       x_seed=jobtime.job_speedup(seed, rec), seed_eval_loss=lc["ref_eval_loss"],
                       loss_dev=lc["loss_dev"], seed_range=lc["seed_range"], band_step=lc["band_step"],
                       loss_counts=lc["counts"])
        rows.append(row)
    return rows


def recommend(records: list[RunRecord], rows: list[dict] | None = None) -> dict:
    """The pick: the candidate that finishes soonest against its host's full-epoch seed run (the largest x_seed; the
    shorter train_runtime among equals) among those whose eval loss counts (`same_host_pair` True, `note` None).
    Else `same_host_pair` False, `note` saying what is
    missing, and the candidate that finishes soonest on any host (or none) named as the best candidate, its x_seed
    left empty."""
    rows = candidates(records) if rows is None else rows
    paired = [r for r in rows if r["same_host_seed"] and r["loss_counts"] is True]
    # the seed run paired with itself says nothing: it counts only beside another recipe of its host
    contested = {(r["hw"], r["host"]) for r in paired if r["experiment"] != SEED_EXPERIMENT}
    paired = [r for r in paired if (r["hw"], r["host"]) in contested]
    if paired:
        best = max(paired, key=lambda r: (r["x_seed"], -r["train_runtime_s"]))
        return {**best, "same_host_pair": True, "note": None}
    others = [r for r in rows if r["experiment"] != SEED_EXPERIMENT] or rows
    if not rows:
        why = "no matrix recipe has a full-epoch run"
    elif not any(r["same_host_seed"] for r in rows if r["experiment"] != SEED_EXPERIMENT):
        why = "no full-epoch run of a recipe was made on a host with a full-epoch seed run"
    else:
        why = "no same-host recipe's eval loss is within the seed band (or no seed band to judge it by)"
    cand = min(others, key=lambda r: r["train_runtime_s"]) if others else None
    base = {k: None for k in ("hw", "experiment", "host", "run", "train_runtime_s", "load_s", "tokens_per_s",
                               "peak_gib", "path")}
    pick = {**base, **(cand or {}), "x_seed": None, "same_host_pair": False,
            "note": f"{NO_PAIR}: {why}" + (f"; best candidate {cand['experiment']} (unpaired: its "
                                          f"{cand['train_runtime_s']:.1f} s is on host {cand['host'] or '?'}, "
                                          "against no seed run of that host)" if cand else "")}
    return pick
