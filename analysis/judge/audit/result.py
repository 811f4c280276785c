"""One verdict's result: the verdict, the sentence behind it, its numbers and the run folders it used.

Every rule returns a Verdict: `result(...)` (a verdict of config.VERDICTS; run folders relative to the checkout, as
tables travel between machines) or `not_run(...)` (the claim's planned experiments, their GPU estimate, and the runs of
them that a time limit cut short).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from analysis.judge.audit.config import VERDICTS, Claim
from analysis.judge.band import Runs
from analysis.parse.record import RunRecord
from experiments.base.paths import relative
from experiments.recipes import catalog


def quoted(value: Any) -> dict[str, Any]:
    """A typed quote (SpeedupQuote, SeedMultiple, LossCheck) as a verdict's numbers: its fields in order, its flags
    and omitted fields left out, each field marked `when` only where its flags are all set. The one formatter of a
    quote, so a field added is a number quoted."""
    return {f.name: getattr(value, f.name) for f in fields(value)
            if not (f.metadata.get("flag") or f.metadata.get("omit"))
            and all(getattr(value, w) for w in f.metadata.get("when", ()))}


def dummy(*recs: RunRecord | None) -> bool:
    """Did any of RECS train random weights (the loss scale says nothing about quality)?"""
    return any(r.dummy_weights for r in recs if r)


@dataclass(frozen=True)
class Verdict:
    """A rule's answer: the verdict (one of config.VERDICTS), the sentence behind it, its numbers (the figures the
    claim's key template and the --json output name) and the run folders it used, relative to the checkout."""

    verdict: str
    detail: str
    numbers: dict[str, Any] = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)
    reason: str = ""  # why this verdict, where the key number alone would read otherwise (the one-liner shows it)


def result(verdict: str, detail: str, numbers: dict | None = None, runs: list | None = None,
           reason: str = "") -> Verdict:
    """The Verdict; RUNS: records (their .path) or folders."""
    assert verdict in VERDICTS, verdict
    paths = [getattr(r, "path", r) for r in (runs or []) if r is not None]
    return Verdict(verdict, detail, numbers or {}, [relative(p) for p in paths if p], reason)


def not_run(claim: Claim, runs: Runs) -> Verdict:
    """'not run yet': the claim's planned experiments, about how long they take, and which a time limit cut short."""
    planned = claim.experiments
    est = sum(catalog.estimate_s(n) for n in planned)
    cut = runs.cut_short
    short = [f"{n} ({cut[n][0].failure}, {cut[n][0].run})" for n in planned if n in cut]
    return result("not run yet", f"planned: {', '.join(planned)} (about {est / 60:.1f} GPU min)"
                  + (f"; cut short by a time limit: {', '.join(short)}" if short else ""),
                  runs=[cut[n][0] for n in planned if n in cut])
