"""Rules that judge speed: a speed-up against a threshold, throughput recipes against the bs16 baseline, the
best recipe against the seed recipe (a bar, and per memory class), and gradient checkpointing's memory-for-speed
trade. Every speed-up is measure.compare.speedup's (quoted by analysis.judge.audit.quote)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from analysis.judge.audit import card, rulespec, swift_info
from analysis.judge.audit.config import Claim
from analysis.judge.audit.quote import SpeedupQuote, host_note, paired_note, seed_multiple, speedup_numbers
from analysis.judge.audit.result import Verdict, not_run, quoted, result
from analysis.judge.audit.select import pick_paired, seed_baseline
from analysis.judge.band import LossCheck, Runs, loss_check, pick, rnd
from analysis.measure.compare import SAME_HOST, host_relation
from analysis.measure.memory import common_peaks
from analysis.measure.profile import busy_fraction
from analysis.measure.steps import step_time
from analysis.parse.record import RunRecord
from experiments.recipes import catalog


@rulespec.kind("speedup", rulespec.Speedup)
def rule_speedup(claim: Claim, runs: Runs, **_) -> Verdict:
    """TEST over BASE, and over each of the rule's `repeats` (the same comparison made another way)."""
    rule = claim.rule_as(rulespec.Speedup)
    need = rule.min_speedup_pct
    pairs: list[rulespec.Speedup | rulespec.SpeedupPair] = [rule, *rule.repeats]
    parts, used, measured = [], [], []
    numbers: dict[str, Any] = {}
    for i, pair in enumerate(pairs):
        base, test_runs = pick(runs, pair.base), runs.get(pair.test)
        if base is None or not test_runs:
            continue
        test = pick(runs, pair.test)
        if test is None:
            bad = test_runs[0]
            return result("does not hold", f"{pair.test} did not train (not safe): {bad.failure}", runs=[base, bad])
        q = speedup_numbers(base, test)
        lo, hi = q.speedup_pct_low, q.speedup_pct_high
        how = f" ({pair.how})" if pair.how else ""
        parts.append(f"{pair.test} vs {pair.base}{how}: speed-up {q.speedup_pct} % (95 % range {lo} .. "
                     f"{hi} %{paired_note(q)}; step {q.base_step_s} s -> {q.test_step_s} s)")
        nums = quoted(q)
        numbers.update(nums if i == 0 else {f"{k}_{pair.test}": v for k, v in nums.items()})
        used += [base, test]
        measured.append((lo, hi))
    if not measured:
        return not_run(claim, runs)
    missing = [p.test for p in pairs if p.test not in runs]
    detail = ("; ".join(parts) + f"; claim: >= {need} %; measured on this GPU only"
              + (f"; not run yet: {', '.join(missing)}" if missing else ""))
    if all(lo is not None and lo >= need for lo, _ in measured):
        return result("holds", detail, numbers, used)
    if all(hi is not None and hi < need for _, hi in measured):
        return result("does not hold", detail, numbers, used, reason=f"below the claimed {need} %")
    return result("inconclusive", detail, numbers, used, reason=f"the 95 % range spans the claimed {need} %")


@rulespec.kind("tradeoff", rulespec.Tradeoff)
def rule_tradeoff(claim: Claim, runs: Runs, **_) -> Verdict:
    """A flag's memory saving against the speed it costs (with_flag vs without_flag over the same batches)."""
    rule = claim.rule_as(rulespec.Tradeoff)
    on = pick(runs, rule.with_flag)
    off = pick(runs, rule.without_flag, allow_oom=True)
    nums: dict[str, Any] = {}
    note = ""
    if swift_info.swift_version():
        try:
            d = swift_info.flag_report(rule.flag)
            nums["default_" + rule.flag] = d.default
            if d.default is True:
                note = (f"; --{rule.flag} already defaults to true in ms-swift {d.swift_version}, so the "
                        "advice changes nothing")
        except ImportError:
            pass
    if on is None or off is None:
        res = not_run(claim, runs)
        return replace(res, detail=res.detail + note, numbers=nums)
    nums.update({"peak_gib_on": on.peak_mem_gib, "step_s_on": rnd(step_time(on).median)})
    if off.is_oom:
        return result("holds", f"with it off the run OOMed ({off.failure}); on: {on.peak_mem_gib} GiB" + note,
                      nums, [on, off])
    p_off, p_on, at = common_peaks(off, on)
    nums.update({"peak_gib_off": p_off, "peak_gib_on": p_on, "peak_at_step": at,
                 "step_s_off": rnd(step_time(off).median)})
    sp = speedup_numbers(on, off)  # how much faster OFF is than ON: the speed the flag costs
    if p_on and p_off:
        saved = (p_off - p_on) / p_off * 100
        nums["mem_saved_pct"] = rnd(saved, 2)
        nums["speed_lost_pct"] = (rnd((1 - 1 / (1 + sp.speedup_pct / 100)) * 100, 2)
                                  if sp.speedup_pct is not None else None)
        nums["tokens_per_s_on"], nums["tokens_per_s_off"] = sp.base_tokens_per_s, sp.test_tokens_per_s
        detail = (f"GC on saves {saved:.1f} % of peak memory ({p_off} -> {p_on} GiB over the same {at} steps) and "
                  f"costs {nums['speed_lost_pct']} % of the tokens/s ({nums['tokens_per_s_off']} off, "
                  f"{nums['tokens_per_s_on']} on; step {nums['step_s_off']} s off, {nums['step_s_on']} s on)" + note)
        return result("holds" if saved > 0 else "does not hold", detail, nums, [on, off])
    return result("inconclusive", "no peak memory in the logs" + note, nums, [on, off])


@dataclass(frozen=True)
class RecipeOutcome:
    """A throughput recipe against its baseline: state (missing | failed | ok), the two runs, and for 'ok' whether its
    eval loss counts, whether it is better (True / False / None: the range on the expected side, on the other, or
    across 0), its speed-up (a SpeedupQuote) and its loss check."""

    state: str
    rec: RunRecord | None
    base: RunRecord | None
    failure: str | None = None
    counts: bool | None = None
    better: bool | None = None
    speedup: SpeedupQuote | None = None
    loss: LossCheck | None = None

    def numbers(self) -> dict[str, Any]:
        """The verdict's numbers of an 'ok' outcome: the speed-up, the peak, the GPU's busy share, the loss check."""
        assert self.speedup is not None and self.loss is not None and self.rec is not None
        return {**quoted(self.speedup), "peak_gib": self.rec.peak_mem_gib,
                "gpu_busy_frac": rnd(busy_fraction(self.rec), 3), **quoted(self.loss)}


def recipe_outcome(name: str, baseline: str, spread: Sequence[str], runs: Runs,
                   expect: str = "faster") -> RecipeOutcome:
    """Speed-up of throughput recipe NAME over BASELINE and whether its eval loss counts (the SPREAD seeds' band)."""
    rec = pick(runs, name, allow_oom=True)
    base = pick(runs, baseline)
    if rec is None or base is None:
        return RecipeOutcome("missing", rec, base)
    if not rec.ok:
        return RecipeOutcome("failed", rec, base, failure=rec.failure)
    q = speedup_numbers(base, rec)
    lc = loss_check(rec, spread, runs)
    lo, hi = q.speedup_pct_low, q.speedup_pct_high
    if expect == "slower":
        lo, hi = (None if hi is None else -hi), (None if lo is None else -lo)
    better = True if (lo is not None and lo > 0) else False if (hi is not None and hi < 0) else None
    return RecipeOutcome("ok", rec, base, counts=lc.counts, better=better, speedup=q, loss=lc)


@rulespec.kind("recipe", rulespec.Recipe)
def rule_recipe(claim: Claim, runs: Runs, **_) -> Verdict:
    """A throughput recipe: faster than the baseline (or slower, `expect: slower`) and its eval loss counts."""
    rule = claim.rule_as(rulespec.Recipe)
    o = recipe_outcome(rule.run, rule.baseline, rule.spread, runs, rule.expect)
    if o.state == "missing":
        return not_run(claim, runs)
    if o.state == "failed":
        return result("does not hold", f"{rule.run} failed: {o.failure}", runs=[o.rec, o.base])
    assert o.speedup is not None and o.loss is not None and o.rec is not None  # an 'ok' outcome
    q, lc, n = o.speedup, o.loss, o.numbers()
    word = "slower" if rule.expect == "slower" else "faster"
    detail = (f"tokens/s {q.base_tokens_per_s} -> {q.test_tokens_per_s}: speed-up {q.speedup_pct} % (95 % "
              f"range {q.speedup_pct_low} .. {q.speedup_pct_high} %{paired_note(q)}; median step "
              f"{q.base_step_s} -> "
              f"{q.test_step_s} s), peak {o.rec.peak_mem_gib} GiB, eval loss {lc.eval_loss} at step {lc.eval_step}")
    if o.counts is None:
        detail += "; no seed band at that step (needs 2+ seeds evaluated there)"
    else:
        detail += (f", {'within' if o.counts else 'OUTSIDE'} the seed band (|dev| {lc.loss_dev_from_seed_mean} "
                   f"vs range {lc.seed_range})")
    if (catalog.experiment(rule.run) or {}).get("combine"):  # a resolved combination: say what it was
        detail += f"; combination: {o.rec.overrides}"
    used = [o.rec, o.base]
    if o.counts is False or o.better is False:
        why = [f"not {word}"] if o.better is False else []
        why += ["eval loss outside the seed band"] if o.counts is False else []
        return result("does not hold", detail + f": not {word} and counting", n, used, reason=", ".join(why))
    if o.counts and o.better:
        return result("holds", detail, n, used)
    why = (["the 95 % range spans no change"] if o.better is None else []) + (
        ["no seed band at the eval step"] if o.counts is None else [])
    return result("inconclusive", detail, n, used, reason=", ".join(why))


@rulespec.kind("target_speedup", rulespec.TargetSpeedup)
def rule_target_speedup(claim: Claim, runs: Runs, **_) -> Verdict:
    """The best recipe's tokens/s as a multiple of the seed recipe's, against a bar (`factor`), loss counting."""
    rule = claim.rule_as(rulespec.TargetSpeedup)
    rec = pick_paired(runs, rule.run, rule.seed_runs, allow_oom=True)
    seed = seed_baseline(rule.seed_runs, runs, host_id=rec.host_id if rec is not None else None)
    if rec is None or seed is None:
        return not_run(claim, runs)
    if not rec.ok:
        return result("does not hold", f"{rule.run} failed: {rec.failure}", runs=[rec, seed])
    m = seed_multiple(rec, seed, paired=bool(rule.paired))
    lc = loss_check(rec, rule.spread, runs)
    nums = {**quoted(m), **quoted(lc), "peak_gib": rec.peak_mem_gib, "combination": rec.overrides}
    need = rule.factor
    detail = (f"{m.tokens_per_s} tokens/s vs the seed recipe's {m.seed_tokens_per_s} "
              f"({seed.experiment}, {seed.run}): {m.ratio}x (95 % range "
              f"{m.ratio_low} .. {m.ratio_high}x; bar {need}x); eval loss {lc.eval_loss} "
              "at step "
              f"{lc.eval_step}" + ("" if lc.counts is None else
                                   f", {'within' if lc.counts else 'OUTSIDE'} the seed band (|dev| "
                                   f"{lc.loss_dev_from_seed_mean} vs range {lc.seed_range})")
              + f"; recipe: {nums['combination']}")
    if rule.paired:
        detail += (f"; {m.how}" + (f" over {m.paired_steps} steps" if m.paired_steps else "")
                   + f", {m.hosts} ({rec.host} / {seed.host})")
    elsewhere = host_note(rec, seed, "the seed run's")
    if elsewhere:
        nums["other_host"] = elsewhere
        detail += f"; made on another host than the seed run ({elsewhere})"
    for name in rule.also_against:  # the seed recipe again, where the recipe ran (context, no verdict)
        other = pick(runs, name)
        if other is None:
            continue
        q = seed_multiple(rec, other)
        nums[f"ratio_vs_{name}"] = q.ratio
        nums[f"ratio_vs_{name}_low"], nums[f"ratio_vs_{name}_high"] = q.ratio_low, q.ratio_high
        where = "the same host" if other.host == rec.host else f"host {other.host}"
        detail += (f"; against {name} ({where}, {q.seed_tokens_per_s} tokens/s): {q.ratio}x (95 % range "
                   f"{q.ratio_low} .. {q.ratio_high}x)")
    lo, hi = m.ratio_low, m.ratio_high
    if rule.same_host and m.hosts != SAME_HOST:  # a ratio across hosts decides nothing here
        return result("inconclusive", detail + f"; the rule needs one host, the pair is {m.hosts}",
                      nums, [rec, seed], reason=f"the pair is {m.hosts}, the rule needs one host")
    if lc.counts is False or (hi is not None and hi < need):
        why = ([f"below the {need}x bar"] if hi is not None and hi < need else []) + (
            ["eval loss outside the seed band"] if lc.counts is False else [])
        return result("does not hold", detail, nums, [rec, seed], reason=", ".join(why))
    if lc.counts and lo is not None and lo >= need:
        return result("holds", detail, nums, [rec, seed])
    why = ([] if lo is not None and lo >= need else [f"the 95 % range spans the {need}x bar"]) + (
        ["no seed band at the eval step"] if lc.counts is None else [])
    return result("inconclusive", detail, nums, [rec, seed], reason=", ".join(why))


@rulespec.kind("class_best", rulespec.ClassBest)
def rule_class_best(claim: Claim, runs: Runs, **_) -> Verdict:
    """The best recipe for a card of `card_gb`: the first candidate (fastest first) whose run shows it fits the card's
    capacity in GiB (analysis.judge.audit.card: capped at most there, or a reserved peak below it), its multiple of the
    seed recipe, and whether its loss counts."""
    rule = claim.rule_as(rulespec.ClassBest)
    capacity = card.card_gib(rule.card_gb)
    tried: list[tuple[str, Any, card.Fit]] = []  # (name, record, what it says about the card)
    winner = None
    for name in rule.candidates:
        rec = pick(runs, name, allow_oom=True) or next(iter(runs.get(name)), None)
        if rec is None:
            continue
        fit = card.at_capacity(rec, capacity)
        tried.append((name, rec, fit))
        if fit.fits:
            winner = (name, rec, fit)
            break
    if not tried:
        return not_run(claim, runs)
    seed = seed_baseline(rule.seed_runs, runs, host_id=winner[1].host_id if winner else None)
    failed = "; ".join(f"{n} {f.why}" for n, _, f in tried if not f.fits)
    card_text = f"the {rule.card_gb} GB card ({card.gib(capacity)} GiB)"
    if winner is None:
        decided = all(f.fits is False for _, _, f in tried)  # a candidate that says nothing may still fit
        return result("does not hold" if decided else "inconclusive",
                      f"no candidate shown to fit {card_text}: {failed}", runs=[r for _, r, _ in tried])
    name, rec, fit = winner
    nums = {"recipe": name, "card_gb": rule.card_gb, "capacity_gib": rnd(capacity, 2),
            "cap_gib": rnd(fit.cap_gib, 2), "peak_gib": rec.peak_mem_gib, "overrides": rec.overrides}
    m = seed_multiple(rec, seed) if seed is not None else None
    if m is not None:
        nums.update(quoted(m))
    lc = loss_check(rec, rule.spread, runs)
    nums.update(quoted(lc))
    detail = (f"{name} fits the {rule.card_gb} GB card ({fit.why}): "
              f"{nums.get('tokens_per_s')} tokens/s = {nums.get('ratio')}x the seed recipe (95 % range "
              f"{nums.get('ratio_low')} .. {nums.get('ratio_high')}x); eval loss {lc.eval_loss} at step "
              f"{lc.eval_step}" + ("" if lc.counts is None else
                                   f", {'within' if lc.counts else 'OUTSIDE'} the seed band")
              + (f"; before it: {failed}" if failed else ""))
    if seed is not None and host_relation(rec, seed) != SAME_HOST:
        nums["hosts"] = host_relation(rec, seed)
        detail += (f"; a {nums['hosts']} ratio ({rec.host} vs the seed run's {seed.host}): host-bound steps move with "
                   "the host")
    used = [r for _, r, _ in tried] + ([seed] if seed else [])
    if lc.counts is False:
        return result("does not hold", detail, nums, used)
    return result("holds" if lc.counts else "inconclusive", detail, nums, used)
