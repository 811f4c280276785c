"""Rules that judge the tooling and the setup: flags the installed ms-swift has (or lacks), features it supports,
whether a step is bound by the host or the GPU (the profiler's busy share, measure.profile), and whether the published
loss differences exceed the seed-to-seed spread (measure.loss)."""
from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

from analysis.judge.audit import rulespec, swift_info
from analysis.judge.audit.config import Claim
from analysis.judge.audit.result import Verdict, dummy, not_run, result
from analysis.judge.audit.select import profiled
from analysis.judge.band import Runs, pick, rnd, seed_band
from analysis.measure.loss import eval_at, final_eval_loss
from analysis.measure.profile import bound_label, busy_fraction, measured_windows
from analysis.parse.sidefiles import PROFILE_FILE
from experiments.base.runfolder import Profile
from experiments.base.runfolder import ProfileWindow as W


@rulespec.kind("flags", rulespec.Flags)
def rule_flags(claim: Claim, runs: Runs, **_) -> Verdict:
    """The advised flags exist in the installed ms-swift and its parser accepts the advised values."""
    rule = claim.rule_as(rulespec.Flags)
    if swift_info.swift_version() is None:
        return result("cannot be tested here", "ms-swift is not installed where this table was made")
    reports = [swift_info.flag_report(f, v) for f, v in rule.flags.items()]
    related = [swift_info.flag_report(f) for f in rule.related]
    nums = {r.flag: ("exists" if r.exists else "does not exist") for r in reports + related}
    detail = "; ".join(r.text + (f" ({r.parser})" if r.parser else "") for r in reports)
    if related:
        detail += "; related: " + "; ".join(r.text for r in related)
    missing = [r for r in reports if not r.exists or r.parser_accepts is False]
    if missing:
        return result("does not hold", detail + " - the advice cannot be followed with this ms-swift", nums)
    return result("inconclusive", detail + " - the flags exist; their effect needs runs", nums)


@rulespec.kind("supported", rulespec.Supported)
def rule_supported(claim: Claim, runs: Runs, **_) -> Verdict:
    """The installed ms-swift allows the features (padding_free, packing) with the attention implementation."""
    rule = claim.rule_as(rulespec.Supported)
    if swift_info.swift_version() is None:
        return result("cannot be tested here", "ms-swift is not installed where this table was made")
    rep = swift_info.padding_free_report(list(rule.flags), rule.attn_impl)
    blocked = [f for f in rule.flags if not rep.features[f].allowed]
    nums: dict[str, Any] = {f: ("allowed" if rep.features[f].allowed else "refused") for f in rule.flags}
    nums["flash_attn_importable"] = rep.flash_attn_importable
    if blocked and not rep.flash_attn_importable and rule.plugin:
        flags = ", ".join("--" + f for f in blocked)
        return result("not run yet",
                      f"the shipped plugin allows {flags} with --attn_impl {rep.attn_impl} (ms-swift "
                      f"{rep.swift_version} alone refuses it; --external_plugins \"$(swiftbench plugin)\"); no run of "
                      f"{', '.join(claim.experiments)} made yet", nums)
    if blocked and not rep.flash_attn_importable:
        msg = rep.features[blocked[0]].message
        return result("cannot be tested here",
                      f"ms-swift {rep.swift_version} refuses {', '.join('--' + f for f in blocked)} with "
                      f"--attn_impl {rep.attn_impl} ({msg}); flash-attn is not installed (nor on the GPU host)",
                      nums)
    return result("not run yet", "allowed here: " + ", ".join(f for f in rule.flags if rep.features[f].allowed),
                  nums)


@rulespec.kind("bound", rulespec.Bound)
def rule_bound(claim: Claim, runs: Runs, **_) -> Verdict:
    """Host-bound (GPU busy below host_below of each step's wall time), GPU-bound (from gpu_from) or mixed."""
    rule = claim.rule_as(rulespec.Bound)
    rec, cut = profiled(runs, rule.run)
    if rec is None:
        return not_run(claim, runs)
    note = (f" (from the profiled steps of {rule.run} {rec.run}, which was then cut short: "
            f"{rec.failure})") if cut else ""
    frac = busy_fraction(rec)
    prof = rec.profile or {}
    steps = measured_windows(rec)
    nums: dict[str, Any] = {"gpu_busy_frac": rnd(frac, 3), "profiled_steps": [s.get(W.STEP) for s in steps],
            "step_wall_s": [s.get(W.WALL_S) for s in steps]}
    if frac is None:
        return result("cannot be tested here",
                      f"no GPU busy time in {PROFILE_FILE} ({prof.get(Profile.DEVICE, 'no profile')})", nums, [rec])
    kind = bound_label(frac, rule.host_below, rule.gpu_from)
    nums["bound"] = kind
    detail = (f"GPU busy {frac:.1%} of each step's wall time: {kind}-bound" if kind != "mixed" else
              f"GPU busy {frac:.1%} of each step's wall time: mixed") + note
    top = [op for st in steps for op in st.get(W.TOP_GPU_OPS, [])[:1]]
    if top:
        nums["top_gpu_op"] = top[0]
    return result("holds" if kind == rule.expect else "does not hold", detail, nums, [rec])


@dataclass(frozen=True)
class PublishedSpread:
    """The spread (max - min) of published final losses (None: fewer than two legible), their texts, and a note."""

    spread: float | None
    texts: dict[str, str]
    note: str = ""


def published_loss_spread(seeds_dir: str | Path | None, figure_ids: Sequence[str]) -> PublishedSpread:
    """The spread (max - min) of the published final losses FIGURE_IDS, from their legible fractional digits."""
    from analysis.core.seeds import published_figures

    frame = published_figures(seeds_dir) if seeds_dir else published_figures()
    texts = {str(row.id): str(row.text) for row in frame.itertuples() if row.id in figure_ids}
    digits = {k: v for k, v in texts.items() if v.isdigit()}
    if len(digits) < 2:
        return PublishedSpread(None, texts)
    vals = {k: int(v) / 10 ** len(v) for k, v in digits.items()}
    return PublishedSpread(round(max(vals.values()) - min(vals.values()), 6), texts,
                           "from the legible fractional digits; equal only if the lost integer parts are equal")


@rulespec.kind("seed_spread", rulespec.SeedSpread)
def rule_seed_spread(claim: Claim, runs: Runs, seeds_dir=None, **_) -> Verdict:
    """Published loss differences between GPUs against the seed-to-seed range of one recipe on one GPU."""
    rule = claim.rule_as(rulespec.SeedSpread)
    recs = [pick(runs, n) for n in rule.runs]
    pub = published_loss_spread(seeds_dir, claim.source.figures)
    nums: dict[str, Any] = {"published_spread": pub.spread}
    have = [r for r in recs if r and final_eval_loss(r) is not None]
    common = sorted(set.intersection(*[{int(x) for x, _ in r.eval_loss} for r in have])) if have else []
    if len(have) < 2 or not common:
        res = not_run(claim, runs) if not have else result("inconclusive", "fewer than 2 seeds finished", nums, have)
        return replace(res, numbers=nums)
    step = common[-1]
    losses = cast(list[float], [eval_at(r, step) for r in have])  # no None: each has an eval at a common step
    band = {st: seed_band(runs, rule.runs, st) for st in common}
    nums.update({"eval_step": step, "seed_losses": [rnd(x) for x in losses],
                 "seed_range": rnd(max(losses) - min(losses)),
                 "seed_sd": rnd(statistics.stdev(losses)) if len(losses) > 1 else None, "n_seeds": len(losses),
                 "seed_range_by_step": {st: rnd(b.range) for st, b in band.items() if b}})
    detail = (f"seed-to-seed range {nums['seed_range']} over {len(losses)} seeds at step {step} (eval loss "
              f"{nums['seed_losses']}; range by step {nums['seed_range_by_step']}); "
              f"published spread {pub.spread} ({pub.note})")
    if dummy(*have):
        return result("cannot be tested here", detail + "; dummy weights: the loss scale is not the article's",
                      nums, have)
    if pub.spread is None:
        return result("cannot be tested here", detail + "; the published losses are illegible", nums, have)
    verdict = "holds" if pub.spread > nums["seed_range"] else "does not hold"
    return result(verdict, detail, nums, have)
