"""The rule that a recipe fits a card, judged only from a run capped at the card's capacity (analysis.judge.audit.card).

A search under a larger cap shows what a bigger card holds, not this one: it is named in the detail and decides
nothing. The cap is the one the run's launch.json recorded, so a run whose definition or launcher asked for one cap
and got another is judged by what it got.
"""
from __future__ import annotations

from typing import Any

from analysis.judge.audit import card, rulespec
from analysis.judge.audit.config import Claim
from analysis.judge.audit.result import Verdict, result
from analysis.judge.audit.rules_memory import capacity_lines, search_result
from analysis.judge.band import Runs, pick, rnd
from experiments.base.runfolder import Launcher
from experiments.recipes import catalog


@rulespec.kind("capped_fit", rulespec.CappedFit)
def rule_capped_fit(claim: Claim, runs: Runs, **_) -> Verdict:
    """`run` capped at or below the capacity of a `card_gb` card trains (holds) or OOMs (does not hold); no such
    run, or one capped above the capacity (refused), is inconclusive."""
    rule = claim.rule_as(rulespec.CappedFit)
    name, capacity = rule.run, card.card_gib(rule.card_gb)
    card_text = f"{card.gib(capacity)} GiB"
    nums: dict[str, Any] = {"card_gb": rule.card_gb, "capacity_gib": rnd(capacity, 2)}
    context = ""
    if rule.searches:
        context = (f"; under larger caps (not a {rule.card_gb} GB card): "
                   + capacity_lines([search_result(n, runs) for n in rule.searches]))
    none_yet = f"no run capped at <= {card_text} exists yet"
    rec = pick(runs, name, allow_oom=True)
    if rec is None:
        failed = next(iter(runs.get(name)), None)
        why = (f"{name} {failed.run} failed: {failed.failure}" if failed is not None else
               f"{name} is planned, about {catalog.estimate_s(name) / 60:.1f} GPU min")
        return result("inconclusive", f"{none_yet} ({name} not run); {why}{context}", nums,
                      [failed] if failed is not None else [])
    cap = card.run_cap_gib(rec)
    nums.update(run=rec.run, cap_gib=rnd(cap, 2), peak_gib=rec.peak_mem_gib, batch=rec.per_device_batch)
    if cap is None or cap > capacity:
        got = "records no applied allocator cap" if cap is None else f"was capped at {card.gib(cap)} GiB"
        return result("inconclusive", f"{none_yet} (refused: {name}'s cap is above it); {name} {rec.run} {got} in its "
                                      f"launch.json, not evidence for the card's {card_text}{context}", nums, [rec])
    how = ", ".join(x for x in ("longest samples first" if rec.launcher.get(Launcher.LONGEST_FIRST) else "",
                                f"rows padded to {rec.launcher[Launcher.PAD_TO]}"
                                if rec.launcher.get(Launcher.PAD_TO) else "") if x)
    what = (f"bs {rec.per_device_batch}" if rec.per_device_batch else name) + (f" ({how})" if how else "")
    if rec.is_oom:
        return result("does not hold", f"{what} OOMed under a {card.gib(cap)} GiB cap ({name} {rec.run}): "
                                       f"{rec.failure}{context}", nums, [rec])
    return result("holds", f"{what} trained under a {card.gib(cap)} GiB cap ({name} {rec.run}), peak "
                           f"{rec.peak_mem_gib} GiB reserved{context}", nums, [rec])
