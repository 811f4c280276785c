"""Verdict rules about the platform rather than one run: scaling efficiency and NCCL environment variables (seed
000), and the time a resume from a checkpoint takes (seed 001).

Both judge what this suite measured on the GPUs it had (one host, its GPU count), and say which system that was: a
provider's 8-GPU cluster claim is only decided by runs at that GPU count; fewer GPUs give the context, not a verdict.
"""
from __future__ import annotations

from typing import Any

from analysis.judge.audit import rulespec
from analysis.judge.audit.config import Claim
from analysis.judge.audit.result import Verdict, result
from analysis.judge.band import Runs, rnd
from analysis.measure import compare, interconnect
from analysis.parse import bench, resume


def _system(sweep_or_rec) -> str:
    return f"host {sweep_or_rec.host_id}" if getattr(sweep_or_rec, "host_id", None) else "one host"


@rulespec.kind("scaling", rulespec.Scaling)
def rule_scaling(claim: Claim, runs: Runs, **_) -> Verdict:
    """Scaling efficiency at rule `gpus` GPUs (analysis.measure.compare.scaling_pairs, same host): holds when every
    measured pair's 95 % range lies at or above `min_efficiency`, does not hold when every pair's range lies below it;
    without runs at that GPU count: cannot be tested here, with what was measured at fewer GPUs."""
    rule = claim.rule_as(rulespec.Scaling)
    want, floor = int(rule.gpus), float(rule.min_efficiency)
    recs = [r for r in runs.records if runs.hw is None or r.hw == runs.hw]
    pairs = compare.scaling_pairs(recs)
    measured = [f"{m.experiment}{'' if m.parallel == 'ddp' else ' ' + m.parallel} at {m.gpus} GPUs "
                f"{sc.efficiency:.0%} (95 % {_pct(sc.efficiency_low)}-{_pct(sc.efficiency_high)})"
                for _, m, sc in pairs if sc.efficiency is not None]
    nums = {"measured": [{"experiment": m.experiment, "parallel": m.parallel, "gpus": m.gpus, "host": m.host_id,
                          "efficiency": rnd(sc.efficiency, 3), "low": rnd(sc.efficiency_low, 3),
                          "high": rnd(sc.efficiency_high, 3)} for _, m, sc in pairs]}
    at = [(o, m, sc) for o, m, sc in pairs if m.gpus == want and sc.efficiency is not None]
    used = [r for o, m, _ in pairs for r in (o, m)]
    if not at:
        where = (f"; measured on {pairs[0][1].hw} x{max(m.gpus for _, m, _ in pairs)}, "
                 f"{_system(pairs[0][1])}: " + ", ".join(measured)) if measured else ""
        return result("cannot be tested here", f"no {want}-GPU runs with a 1-GPU run on the same host{where}",
                      nums, used)
    lows = [sc.efficiency_low for _, _, sc in at]
    highs = [sc.efficiency_high for _, _, sc in at]
    detail = f"at {want} GPUs ({_system(at[0][1])}): " + ", ".join(measured)
    if all(x is not None and x >= floor for x in lows):
        return result("holds", detail, nums, used)
    if all(x is not None and x < floor for x in highs):
        return result("does not hold", detail, nums, used)
    return result("inconclusive", detail, nums, used)


def _pct(x: float | None) -> str:
    return "?" if x is None else f"{x:.0%}"


@rulespec.kind("nccl_env", rulespec.NcclEnv)
def rule_nccl_env(claim: Claim, runs: Runs, **_) -> Verdict:
    """The all-reduce with and without the claim's NCCL variables on one host (analysis.measure.interconnect): holds
    when the largest gain over the message sizes reaches `min_gain_pct`, does not hold when no size gains half of it;
    which of the variables NCCL read comes from its NCCL_DEBUG=INFO output."""
    rule = claim.rule_as(rulespec.NcclEnv)
    need = float(rule.min_gain_pct)
    sweeps = bench.allreduce_runs(runs.results_dir, runs.hw) if runs.results_dir else []
    pairs = interconnect.pairs(sweeps, rule.without, rule.with_)
    if not pairs:
        return result("not run yet", "no all-reduce sweeps with and without the variables on one host "
                                     "(experiments/cloud/scaling_gpu.sh with ALLREDUCE=1)", {}, [])
    without, with_ = pairs[-1]
    eff = interconnect.env_effect(without, with_)
    big, big_without = interconnect.busbw_at(with_), interconnect.busbw_at(without)
    if big is None or big_without is None:  # never: env_effect has read both sweeps' sizes
        return result("not run yet", "an all-reduce sweep without message sizes", {}, [])
    nums = {"gain_pct_1mib": rnd(eff.gain_pct_small, 2), "gain_pct_largest": rnd(eff.gain_pct_large, 2),
            "max_gain_pct": rnd(eff.max_gain_pct, 2), "busbw_gbs_largest_without":
            rnd(big_without.busbw_gbs, 1), "busbw_gbs_largest_with": rnd(big.busbw_gbs, 1),
            "read_by_nccl": eff.read, "ignored_by_nccl": eff.ignored, "ranks": eff.ranks,
            "nccl": eff.nccl_version}
    detail = (f"{eff.ranks} GPUs, host {eff.host_id}, NCCL {eff.nccl_version}: all-reduce time "
              f"{eff.gain_pct_small:+.1f} % faster at {eff.sizes[0].mib:g} MiB and "
              f"{eff.gain_pct_large:+.1f} % "
              f"at {eff.sizes[-1].mib:g} MiB with the variables (busbw {nums['busbw_gbs_largest_without']} -> "
              f"{nums['busbw_gbs_largest_with']} GB/s); NCCL read "
              f"{', '.join(f'{k}={v}' for k, v in eff.read.items()) or 'none'}"
              f", ignored {', '.join(eff.ignored) or 'none'}")
    paths = [without.path, with_.path]
    if eff.max_gain_pct is not None and eff.max_gain_pct >= need:
        return result("holds", detail, nums, paths)
    if eff.max_gain_pct is not None and eff.max_gain_pct < need / 2:
        return result("does not hold", detail, nums, paths)
    return result("inconclusive", detail, nums, paths)


@rulespec.kind("resume_time", rulespec.ResumeTime)
def rule_resume_time(claim: Claim, runs: Runs, **_) -> Verdict:
    """A kill during training and the next run-all's resume from the checkpoint (analysis.parse.resume): the time from
    the restarted process to its first resumed step against `max_s`, beside the part after the trainer's start
    (checkpoint load and that step). Holds when every check's restart is within `max_s`, does not hold when none is;
    the check must also have left nothing running and no weights in results/, and have finished."""
    limit = float(claim.rule_as(rulespec.ResumeTime).max_s)
    checks = [c for c in resume.resume_checks(runs.results_dir, runs.hw) if c["restart_to_first_step_s"] is not None] \
        if runs.results_dir else []
    if not checks:
        return result("not run yet", "no resume check (python -m experiments.run.resume_check, or RESUME=best with "
                                     "experiments/cloud/quick_gpu.sh)", {}, [])

    def drift(c):
        diffs = [abs(a - b) / abs(a) for _, a, b in c["repeated"] if a and b is not None]
        return max(diffs) if diffs else None

    parts: list[str] = []
    rows: list[dict[str, Any]] = []
    for c in checks:
        d = drift(c)
        losses = (f"{len(c['repeated'])} repeated steps' losses within {d:.2%} of the first attempt's" if d is not None
                  else f"{len(c['repeated'])} repeated steps")
        parts.append(
            f"{c['hw']} {c['experiment']} (host {c['host_id'] or '?'}), {c['signal']} after step "
            f"{c['killed_after_step']}, "
            f"resumed from step {c['from_step']}: {c['restart_to_first_step_s']:.1f} s from the restart to the first "
            f"resumed step, {c['trainer_to_first_step_s'] if c['trainer_to_first_step_s'] is not None else '?'} s of "
            f"it after the trainer started (checkpoint load and the step); {losses}")
        rows.append({"run": c["run"], "host": c["host_id"], "restart_s": rnd(c["restart_to_first_step_s"], 2),
                     "after_trainer_start_s": c["trainer_to_first_step_s"], "from_step": c["from_step"],
                     "max_loss_drift": rnd(d, 5), "left_behind": c["left_behind"],
                     "weights_in_results": c["weights_in_results"], "finished": c["finished"]})
    nums = {"checks": rows, "max_s": limit, "slowest_restart_s": max(r["restart_s"] for r in rows)}
    detail = "; ".join(parts) + (". LoRA on Qwen2.5-7B (dummy weights) on one GPU: the restart is mostly the base "
                                 "model's load; the provider's platform and larger checkpoints are not measured")
    clean = all(c["finished"] and not c["left_behind"] and not c["weights_in_results"] for c in checks)
    paths = [c["path"] for c in checks]
    restarts = [c["restart_to_first_step_s"] for c in checks]  # none None: checks without one were left out
    if clean and all(s is not None and s <= limit for s in restarts):
        return result("holds", detail, nums, paths)
    if all(s is not None and s > limit for s in restarts):
        return result("does not hold", detail, nums, paths)
    return result("inconclusive", detail, nums, paths)
