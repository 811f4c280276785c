"""The verdict rules by kind: RULES = {kind: function(claim, runs, seeds_dir=None) -> Verdict}.

Each rule turns one claim of claims.yaml (its typed rule, analysis.judge.rulespec) and the runs of
analysis.judge.select into a Verdict (analysis.judge.result). The kinds and the keys each reads are
analysis.judge.rulespec's classes."""
from __future__ import annotations

from analysis.judge import rules_card, rules_cluster, rules_memory, rules_speed, rules_tooling
from analysis.judge.config import RULE_KINDS

RULES = {
    "memory_loss_pair": rules_memory.rule_memory_loss_pair,
    "speedup": rules_speed.rule_speedup,
    "tradeoff": rules_speed.rule_tradeoff,
    "capped_fit": rules_card.rule_capped_fit,
    "capacity_explains_batch": rules_memory.rule_capacity_explains_batch,
    "min_memory": rules_memory.rule_min_memory,
    "flags": rules_tooling.rule_flags,
    "seed_spread": rules_tooling.rule_seed_spread,
    "fits": rules_memory.rule_fits,
    "bound": rules_tooling.rule_bound,
    "supported": rules_tooling.rule_supported,
    "recipe": rules_speed.rule_recipe,
    "target_speedup": rules_speed.rule_target_speedup,
    "class_best": rules_speed.rule_class_best,
    "scaling": rules_cluster.rule_scaling,
    "nccl_env": rules_cluster.rule_nccl_env,
    "resume_time": rules_cluster.rule_resume_time,
}
if set(RULES) != set(RULE_KINDS):  # pragma: no cover - a rule added to one list and not the other
    raise RuntimeError(f"RULES and config.RULE_KINDS differ: {sorted(set(RULES) ^ set(RULE_KINDS))}")
