"""The claims table: one row per claim of claims.yaml with its verdict, the sentence and numbers behind it, and runs.

Claims about the installed ms-swift (flags, padding-free) are decided from its argument dataclass and parser; the
rest from the runs that `swiftbench run-all --claims` made, matched to their experiment's current definition
(analysis.judge.select), by the claim's rule (analysis.judge.rules).
"""
from __future__ import annotations

from pathlib import Path

from analysis.judge import config
from analysis.judge.rules import RULES
from analysis.judge.select import hw_choice, records_of, runs_by_experiment
from analysis.parse.record import RunRecord

COLUMNS = ["id", "claim", "source", "verdict", "detail", "numbers", "runs", "experiments", "hw"]


def source_text(claim: dict) -> str:
    """'seed file#claim id' (+ the other claims of the same seed file it covers)."""
    s = claim["source"]
    out = f"{s['file']}#{s['claim']}"
    if s.get("also"):
        out += " + " + ", ".join(s["also"])
    return out


def claims_table(results_dir: str | Path | None, seeds_dir: str | Path | None = None, hw: str | None = None,
                 records: list[RunRecord] | None = None):
    """One row per claim / throughput recipe: id, claim, source, verdict, detail, numbers, runs, experiments, hw.
    RECORDS: RESULTS_DIR already collected (analysis.parse.results.collect), if the caller has it. HW: the hardware
    class to judge (default: the one with the most claims runs)."""
    import pandas as pd

    recs = records_of(results_dir, records)
    hw = hw or hw_choice(recs)
    runs = runs_by_experiment(results_dir, hw, recs)
    table = []
    for claim in config.claims():
        res = RULES[claim["rule"]["kind"]](claim, runs, seeds_dir=seeds_dir)
        table.append({"id": claim["id"], "claim": claim["claim"].strip(), "source": source_text(claim),
                      "verdict": res["verdict"], "detail": res["detail"], "numbers": res["numbers"],
                      "runs": res["runs"], "experiments": list(claim.get("experiments") or []), "hw": hw})
    return pd.DataFrame(table, columns=COLUMNS)
