"""The Claims section's verdict tables and the seed articles' claims as typed views (issue 46): one frozen row per
claim, built here from the claims table (analysis.judge.audit.verdicts.claims_table) and the seed files, and rendered
by analysis.present.view_render. The article's claims show their key number; the project's findings the first words
of their detail (CLIP characters; the whole detail stays in the claims table).
"""
from __future__ import annotations

from dataclasses import dataclass

from analysis.core.seed_rows import SeedFile
from analysis.core.viewfield import col
from analysis.judge.audit import config

CLIP = 150  # characters of a verdict's detail on its one line


def clip(text, width: int) -> str:
    """TEXT on one line, cut at WIDTH characters with '…'."""
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:width - 1].rstrip() + "…"


def _why(reason, verdict) -> str:
    """The verdict's reason where it does not hold (a held claim needs none)."""
    return reason if isinstance(reason, str) and verdict != "holds" else ""


@dataclass(frozen=True)
class ArticleVerdictRow:
    """One claim of a seed article: its text, the audit's verdict, the key number (or the detail's first words where
    there is none) and why, where it does not hold."""

    id: str = col("id", default="")
    claim: str = col("claim", default="")
    verdict: str = col("verdict", default="")
    key: str = col("key number", default="")
    reason: str = col("why", default="")


@dataclass(frozen=True)
class FindingVerdictRow:
    """One of the project's own findings: its verdict, why where it does not hold, and its detail's first words."""

    id: str = col("id", default="")
    verdict: str = col("verdict", default="")
    reason: str = col("why", default="")
    detail: str = col("detail (first words)", default="")


def article_rows(table) -> tuple[ArticleVerdictRow, ...]:
    """The claims table's rows of origin 'article', in its order."""
    return tuple(ArticleVerdictRow(id=r["id"], claim=r["claim"], verdict=r["verdict"],
                                   key=r["key"] if isinstance(r["key"], str) else clip(r["detail"], CLIP // 2),
                                   reason=_why(r.get("reason"), r["verdict"]))
                 for r in table.to_dict("records") if r.get("origin") == "article")


def finding_rows(table, origin: str) -> tuple[FindingVerdictRow, ...]:
    """The claims table's rows of ORIGIN (a finding's), in its order."""
    return tuple(FindingVerdictRow(id=r["id"], verdict=r["verdict"], reason=_why(r.get("reason"), r["verdict"]),
                                   detail=clip(r["detail"], CLIP))
                 for r in table.to_dict("records") if r.get("origin") == origin)


@dataclass(frozen=True)
class VerdictRow:
    """One claim of the claims table whole: its origin, text, verdict, key number, whole detail and run folders."""

    id: str = col("id", default="")
    origin: str = col("origin", default="")
    claim: str = col("claim", default="")
    verdict: str = col("verdict", default="")
    key: str | None = col("key number")
    detail: str = col("detail", default="")
    runs: str = col("run folders", default="")


def verdict_rows(table) -> tuple[VerdictRow, ...]:
    """Every row of the claims table, its run folders on one line."""
    return tuple(VerdictRow(id=r["id"], origin=r["origin"], claim=r["claim"], verdict=r["verdict"], key=r["key"],
                            detail=r["detail"],
                            runs=" ".join(r["runs"]) if isinstance(r["runs"], (list, tuple)) else r["runs"])
                 for r in table.to_dict("records"))


def audited(table) -> dict[tuple[str, str], str]:
    """(seed file, seed claim id) -> the audit's verdict of the claim that covers it."""
    verdict_of = dict(zip(table["id"], table["verdict"]))
    out = {}
    for c in config.claims():
        for cid in [c.source.claim, *c.source.also]:
            out[(c.source.file, cid)] = f"{verdict_of.get(c.id, '?')} (audit row {c.id})"
    return out


@dataclass(frozen=True)
class SeedClaimRow:
    """One claim of a seed file: its kind and words, whether it is testable on the hardware here, where the report
    has data on it and the audit's verdict of it."""

    seed: str = col("seed", default="")
    claim: str = col("claim", default="")
    kind: str = col("kind", default="")
    english: str = col("english", default="")
    testable_here: bool = col("testable here", default=False)
    data_in_this_report: str = col("data in this report", default="–")
    status: str = col("status", default="not in the claims audit")


def seed_claim_rows(seeds: dict[str, SeedFile], status: dict[tuple[str, str], str],
                    evidence: dict[tuple[str, str], str]) -> tuple[SeedClaimRow, ...]:
    """Every claim of SEEDS with its audit STATUS (audited) and where the report has data on it (EVIDENCE: (seed
    file, claim id) -> the section)."""
    return tuple(SeedClaimRow(seed=fname, claim=c["id"], kind=c["kind"], english=" ".join(c["english"].split()),
                              testable_here=c["testable_here"], data_in_this_report=evidence.get((fname, c["id"]), "–"),
                              status=status.get((fname, c["id"]), "not in the claims audit"))
                 for fname, data in seeds.items() for c in data.get("claims", []))
