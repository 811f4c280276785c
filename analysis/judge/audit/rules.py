"""The verdict rules by kind: RULES = {kind: function(claim, runs, seeds_dir=None) -> Verdict}.

Each rule turns one claim of claims.yaml (its typed rule, analysis.judge.audit.rulespec) and the runs of
analysis.judge.band / analysis.judge.audit.select into a Verdict (analysis.judge.audit.result). Each rule function
registers its kind where it is defined (`@rulespec.kind(name, class)`); this module imports every rule module, so the
registry is complete, and RULES is its view for dispatch."""
from __future__ import annotations

from collections.abc import Callable, Mapping

from analysis.judge.audit import rules_card, rules_cluster, rules_memory, rules_speed, rules_tooling, rulespec
from analysis.judge.audit.result import Verdict

RULE_MODULES = (rules_memory, rules_speed, rules_card, rules_tooling, rules_cluster)  # each registers its kinds

RULES: Mapping[str, Callable[..., Verdict]] = rulespec.KindView(lambda k: k.rule)
