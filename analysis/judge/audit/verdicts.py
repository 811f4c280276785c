"""The claims table: one row per claim of claims.yaml with its verdict, the sentence and numbers behind it, and runs;
the seed articles' claims first, then the project's own findings (config.ORIGINS), each in claims.yaml's order.

Claims about the installed ms-swift (flags, padding-free) are decided from its argument dataclass and parser; the
rest from the runs that `swiftbench run-all --claims` made, matched to their experiment's current definition
(analysis.judge.band.runs_by_experiment), by the claim's rule (analysis.judge.audit.rules). `key` is the verdict's key
number in words (the claim's template of claims.yaml filled from its numbers), for a line that has room for one figure.
"""
from __future__ import annotations

from pathlib import Path

from analysis.judge.audit import config
from analysis.judge.audit.config import Claim
from analysis.judge.audit.rules import RULES
from analysis.judge.audit.select import hw_choice
from analysis.judge.band import records_of, runs_by_experiment
from analysis.parse.record import RunRecord

COLUMNS = ["id", "origin", "claim", "source", "verdict", "key", "reason", "detail", "numbers", "runs", "experiments",
           "hw"]


def source_text(claim: Claim) -> str:
    """'seed file#claim id' (+ the other claims of the same seed file it covers)."""
    s = claim.source
    out = f"{s.file}#{s.claim}"
    if s.also:
        out += " + " + ", ".join(s.also)
    return out


def key_text(template: str | None, numbers: dict) -> str | None:
    """TEMPLATE filled from NUMBERS; None when there is none or a number it names is missing (not measured)."""
    if not template:
        return None
    try:
        return template.format_map({k: v for k, v in numbers.items() if v is not None})
    except (KeyError, ValueError, TypeError, IndexError):
        return None


def claims_table(results_dir: str | Path | None, seeds_dir: str | Path | None = None, hw: str | None = None,
                 records: list[RunRecord] | None = None):
    """One row per claim / throughput recipe (COLUMNS), article claims first, then findings.
    RECORDS: RESULTS_DIR already collected (analysis.parse.results.collect), if the caller has it. HW: the hardware
    class to judge (default: the one with the most claims runs)."""
    import pandas as pd

    recs = records_of(results_dir, records)
    hw = hw or hw_choice(recs)
    runs = runs_by_experiment(results_dir, hw, recs)
    data = config.load()
    table = []
    for claim in sorted(data.claims, key=lambda c: list(config.ORIGINS).index(c.origin)):
        res = RULES[claim.kind](claim, runs, seeds_dir=seeds_dir)
        table.append({"id": claim.id, "origin": claim.origin, "claim": " ".join(claim.claim.split()),
                      "source": source_text(claim), "verdict": res.verdict,
                      "key": key_text(data.key_template(claim), res.numbers), "reason": res.reason,
                      "detail": res.detail,
                      "numbers": res.numbers, "runs": res.runs, "experiments": list(claim.experiments), "hw": hw})
    df = pd.DataFrame(table, columns=COLUMNS)
    df["key"] = df["key"].astype(object).where(df["key"].notna(), None)  # no key is None, not NaN (JSON, CSV)
    return df
