"""The claims audit: the seed articles' claims and the project's own findings (claims.yaml) judged over run records
and their measurements, one verdict per claim, and the seed articles' own arithmetic re-checked.

Importing the package imports its rules (analysis.judge.audit.rules), so every rule kind is registered
(analysis.judge.audit.rulespec.REGISTRY) before claims.yaml is checked or a claim judged."""
from __future__ import annotations

from analysis.judge.audit import rules as rules  # registers every rule kind
