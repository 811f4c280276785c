"""Rules that judge memory: a saving against a loss cost, capacity searches (largest batch under an allocator cap),
whether capacity alone explains larger batches, a claimed minimum memory, and whether a recipe fits a card (at the
card's capacity in GiB, analysis.judge.audit.card). Peaks at a common step come from measure.memory, eval losses from
measure.loss."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from analysis.judge.audit import card, rulespec, swift_info
from analysis.judge.audit.config import Claim
from analysis.judge.audit.result import Verdict, dummy, not_run, result
from analysis.judge.band import Runs, pick, rnd
from analysis.measure.loss import eval_at
from analysis.measure.memory import common_peaks
from analysis.parse.record import RunRecord
from experiments.base.errors import InputError
from experiments.base.runfolder import Launcher
from experiments.recipes import catalog


@rulespec.kind("memory_loss_pair", rulespec.MemoryLossPair)
def rule_memory_loss_pair(claim: Claim, runs: Runs, **_) -> Verdict:
    """TEST saves at least min_mem_saving_pct of BASE's peak memory and raises the eval loss by at most
    max_loss_increase (the loss part on real weights only)."""
    rule = claim.rule_as(rulespec.MemoryLossPair)
    base, test = pick(runs, rule.base), pick(runs, rule.test)
    cut_note = ""
    if base is None and test is not None:  # a base run cut short still measured its first steps' memory
        base = next((r for r in runs.cut_short.get(rule.base, [])
                     if (r.last_train_step or 0) >= (test.last_train_step or 1)), None)
        if base is not None:
            cut_note = f" ({rule.base} {base.run} was cut short afterwards: {base.failure})"
    if base is None or test is None:
        failed = [r for n in (rule.base, rule.test) for r in runs.get(n)[:1] if not r.ok]
        if failed:
            return result("inconclusive", "a run failed: " + "; ".join(f"{r.experiment}: {r.failure}"
                                                                       for r in failed), runs=failed)
        return not_run(claim, runs)
    pb, pt, at = common_peaks(base, test)
    common_eval = sorted({int(x) for x, _ in base.eval_loss} & {int(x) for x, _ in test.eval_loss})
    lb = eval_at(base, common_eval[-1]) if common_eval else None
    lt = eval_at(test, common_eval[-1]) if common_eval else None
    nums = {"peak_gib_" + rule.base: pb, "peak_gib_" + rule.test: pt, "peak_at_step": at,
            "eval_loss_" + rule.base: rnd(lb), "eval_loss_" + rule.test: rnd(lt),
            "eval_step": common_eval[-1] if common_eval else None}
    parts: list[tuple[str, bool | None, str]] = []
    if pb and pt:
        saving = (pb - pt) / pb * 100
        nums["mem_saving_pct"] = rnd(saving, 2)
        mem_ok = saving >= rule.min_mem_saving_pct
        parts.append(("memory", mem_ok, f"memory saved {saving:.2f} % ({pb} -> {pt} GiB at step {at}; claim needs "
                                        f">= {rule.min_mem_saving_pct} %)"))
    if not common_eval:
        parts.append(("loss", None, "no eval step in common: loss part not compared"))
    if lb is not None and lt is not None:
        nums["loss_increase"] = rnd(lt - lb)
        if dummy(base, test):
            parts.append(("loss", None, f"loss increase {lt - lb:+.4f} on dummy weights: says nothing about quality"))
        else:
            parts.append(("loss", lt - lb <= rule.max_loss_increase,
                          f"loss increase {lt - lb:+.4f} (claim allows <= {rule.max_loss_increase})"))
    detail = ("; ".join(p[2] for p in parts) or "no peak memory / eval loss in the logs") + cut_note
    if any(p[1] is False for p in parts):
        return result("does not hold", detail, nums, [base, test])
    if parts and all(p[1] is True for p in parts) and len(parts) == 2:
        return result("holds", detail, nums, [base, test])
    return result("cannot be tested here", detail, nums, [base, test])


@dataclass(frozen=True)
class SearchResult:
    """One capacity search read: its cap, the largest batch that trained and its peak, the smallest above it that
    OOMed, whether the two are next to each other on the ladder (bracketed: the search is finished), the two runs,
    and the probes that failed otherwise (batch -> why)."""

    search: str
    cap_gib: float | None
    largest_ok: int | None
    first_oom: int | None
    bracketed: bool
    peak_gib_at_largest: float | None
    runs: list[RunRecord]
    failed_other: dict[int, str | None]


def search_result(name: str, runs: Runs) -> SearchResult:
    """Probes of one capacity search: the largest batch that trained, the smallest above it that OOMed, and whether
    the two are next to each other on the ladder (bracketed: the search is finished)."""
    s = catalog.search(name)
    if s is None:
        raise InputError(catalog.CLAIMS_DIR, f"no capacity search {name!r}")
    ok: dict[int, Any] = {}
    oom: dict[int, Any] = {}
    other: dict[int, Any] = {}
    for b in s["ladder"]:
        recs = runs.get(catalog.probe_name(name, b))
        rec = next((r for r in recs if r.ok or r.is_oom), recs[0] if recs else None)
        if rec is None:
            continue
        (ok if rec.ok else oom if rec.is_oom else other)[b] = rec
    largest_ok = max(ok) if ok else None
    above = [b for b in oom if largest_ok is None or b > largest_ok]
    first_oom = min(above) if above else None
    ladder = s["ladder"]
    bracketed = (largest_ok is not None and first_oom is not None
                 and ladder.index(first_oom) == ladder.index(largest_ok) + 1)
    if largest_ok is None and first_oom == ladder[0]:
        bracketed = True
    if largest_ok == ladder[-1]:
        bracketed = True
    return SearchResult(name, s["launcher"].get(Launcher.MEM_CAP_GIB), largest_ok, first_oom, bracketed,
                        ok[largest_ok].peak_mem_gib if largest_ok else None,
                        [r for r in (ok.get(largest_ok) if largest_ok is not None else None,
                                     oom.get(first_oom) if first_oom is not None else None) if r],
                        {b: r.failure for b, r in other.items()})


def capacity_lines(results: list[SearchResult]) -> str:
    """search_result()s as one sentence: per cap, the batch that trains and the one that OOMs."""
    parts = []
    for r in results:
        if r.largest_ok is None and r.first_oom is None:
            parts.append(f"{r.cap_gib} GiB: not run")
            continue
        s = f"{r.cap_gib} GiB: "
        s += f"bs {r.largest_ok} trains ({r.peak_gib_at_largest} GiB)" if r.largest_ok else "nothing trains"
        s += f", bs {r.first_oom} OOMs" if r.first_oom else ", nothing OOMed yet"
        if not r.bracketed:
            s += " (search not finished)"
        parts.append(s)
    return "; ".join(parts)


@dataclass(frozen=True)
class CardSearch:
    """One capacity search read at a card's capacity: the largest batch shown to fit (and its peak), the smallest
    above it shown not to, and the batches between that say nothing."""

    search: str
    fits: int | None
    does_not_fit: int | None
    unknown: list[int]
    peak_gib: float | None

    def line(self, capacity_gib: float) -> str:
        """In words: 'qcap24 at 22.35 GiB: bs 4 fits (peak 21.22 GiB), bs 6 does not fit'."""
        s = f"{self.search} at {capacity_gib:.2f} GiB: "
        s += f"bs {self.fits} fits (peak {self.peak_gib} GiB)" if self.fits is not None else "no batch shown to fit"
        if self.unknown:
            s += f", bs {', '.join(map(str, self.unknown))} say nothing (peak above it under a larger cap)"
        if self.does_not_fit is not None:
            s += f", bs {self.does_not_fit} does not fit"
        return s


def card_search(name: str, runs: Runs, capacity_gib: float) -> CardSearch:
    """One capacity search read at a card's capacity (card.at_capacity per probe): the largest batch shown to fit,
    the smallest above it shown not to, and the batches between that say nothing (trained under a larger cap with a
    peak above the capacity)."""
    s = catalog.search(name)
    if s is None:
        raise InputError(catalog.CLAIMS_DIR, f"no capacity search {name!r}")
    fits: dict[int, card.Fit] = {}
    for b in s["ladder"]:
        rec = next((r for r in runs.get(catalog.probe_name(name, b)) if r.ok or r.is_oom), None)
        if rec is not None:
            fits[b] = card.at_capacity(rec, capacity_gib)
    yes = [b for b, f in fits.items() if f.fits]
    largest = max(yes) if yes else None
    no = [b for b, f in fits.items() if f.fits is False and (largest is None or b > largest)]
    smallest_no = min(no) if no else None
    unknown = [b for b, f in fits.items() if f.fits is None and (largest is None or b > largest)
               and (smallest_no is None or b < smallest_no)]
    return CardSearch(name, largest, smallest_no, unknown, fits[largest].peak_gib if largest is not None else None)


@rulespec.kind("capacity_explains_batch", rulespec.CapacityExplainsBatch)
def rule_capacity_explains_batch(claim: Claim, runs: Runs, **_) -> Verdict:
    """On one GPU only the cap differs: when the largest batch still grows with the cap, capacity alone explains it."""
    results = [search_result(n, runs) for n in claim.rule_as(rulespec.CapacityExplainsBatch).searches]
    done = [r for r in results if r.bracketed and r.largest_ok is not None]
    used = [rec for r in results for rec in r.runs]
    nums = {f"max_bs_{r.search}": r.largest_ok for r in results}
    if len(done) < 2:
        return not_run(claim, runs) if not used else result("inconclusive", capacity_lines(results), nums, used)
    done.sort(key=lambda r: r.cap_gib or 0.0)
    grows = all((b.largest_ok or 0) > (a.largest_ok or 0) for a, b in zip(done, done[1:]))  # done: all set
    detail = (capacity_lines(results) + ": same GPU and memory controller, only the allocator cap differs; "
              + ("the largest batch grows with capacity alone" if grows else "the largest batch does not grow"))
    return result("does not hold" if grows else "inconclusive", detail, nums, used)


@rulespec.kind("min_memory", rulespec.MinMemory)
def rule_min_memory(claim: Claim, runs: Runs, **_) -> Verdict:
    """A claimed minimum: does not hold when something trained under a smaller cap; holds when all of them OOM at 1."""
    rule = claim.rule_as(rulespec.MinMemory)
    claimed = card.card_gib(rule.claimed_min_gb)
    results = [search_result(n, runs) for n in rule.searches]
    below = [r for r in results if r.cap_gib is not None and r.cap_gib < claimed]
    trained = [r for r in below if r.largest_ok]
    nums = {f"max_bs_{r.search}": r.largest_ok for r in results}
    used = [rec for r in results for rec in r.runs]
    if trained:
        r = min(trained, key=lambda r: r.cap_gib or 0.0)
        others = [f"{o.search}: {capacity_lines([o])}" for o in below if o is not r and o.largest_ok]
        return result("does not hold", f"bf16 LoRA of the 7B shape trained bs {r.largest_ok} under a "
                      f"{r.cap_gib} GiB cap ({r.peak_gib_at_largest} GiB peak), below the claimed "
                      f"{rule.claimed_min_gb} GB ({claimed:.2f} GiB)" + "".join("; " + o for o in others), nums,
                      used)
    if below and all(r.first_oom == 1 for r in below):
        return result("holds", "every probe below the claimed minimum OOMed at bs 1", nums, used)
    return not_run(claim, runs) if not used else result("inconclusive", capacity_lines(results), nums, used)


@rulespec.kind("fits", rulespec.Fits)
def rule_fits(claim: Claim, runs: Runs, **_) -> Verdict:
    """A recipe fits a card of `card_gb`: `run` (ms-swift's defaults) read at the card's capacity (card.at_capacity:
    trained under a cap at most the capacity, or with its reserved peak below it; an OOM under a cap at or above it
    does not fit). The detail adds the alternatives (the same shape another way) and the largest batch of the rule's
    searches shown to fit. Needs `package`."""
    rule = claim.rule_as(rulespec.Fits)
    capacity = card.card_gib(rule.card_gb)
    recs = runs.get(rule.run)
    rec = pick(runs, rule.run, allow_oom=True)
    pkg = swift_info.package_report(rule.package, claim.package_check)
    nums: dict[str, Any] = {"package_importable_here": pkg.importable_here, "pypi": pkg.pypi,
                            "card_gb": rule.card_gb, "capacity_gib": rnd(capacity, 2)}
    if rec is None:
        if recs and recs[0].failure:
            return result("inconclusive", f"{rule.run} failed: {recs[0].failure}", nums, recs[:1])
        shipped = swift_info.shipped_version(rule.package)
        if shipped:
            res = not_run(claim, runs)
            return replace(res, detail=res.detail + (f"; {rule.package} {shipped} is in the GPU wheelhouse "
                                                     "(experiments/setup/requirements-gpu.txt,"
                                                     " slimmed to the host's CUDA 13.0 library), so the run is "
                                                     "possible"),
                           numbers={**nums, "shipped": shipped})
        p = pkg.pypi or {}
        return result("cannot be tested here",
                      f"needs {rule.package}, which the GPU host does not have; PyPI has {p.get('file')} "
                      f"({p.get('size_mb')} MB, kernels {', '.join(p.get('kernels') or [])}): {pkg.note}",
                      nums)
    extra, used = [], [rec]
    for alt in rule.alternatives:  # the same shape another way
        a = pick(runs, alt.run, allow_oom=True)
        if a is None:
            extra.append(f"{alt.run}: not run yet")
            continue
        used.append(a)
        fit = card.at_capacity(a, capacity)
        nums[f"{alt.run}_trained"] = not a.is_oom
        nums[f"{alt.run}_fits"] = fit.fits
        extra.append(f"{alt.run} ({alt.how}) {fit.why}")
    for name in rule.searches:
        r = search_result(name, runs)
        nums[f"max_bs_{name}"], nums[f"oom_bs_{name}"] = r.largest_ok, r.first_oom
        c = card_search(name, runs, capacity)
        nums[f"card_bs_{name}"] = c.fits
        used += r.runs
        extra.append(c.line(capacity))
    tail = ("; " + "; ".join(extra)) if extra else ""
    fit = card.at_capacity(rec, capacity)
    nums.update(cap_gib=rnd(fit.cap_gib, 2), peak_gib=rec.peak_mem_gib)
    if fit.fits is False:
        return result("does not hold", f"{rule.run} {fit.why}; {rec.failure}{tail}", nums, used)
    return result("holds" if fit.fits else "inconclusive", f"{rule.run} {fit.why}{tail}", nums, used)
