"""One registry of rule kinds (issue 46): a kind is defined once, where its rule function is (`@rulespec.kind(name,
class)`), and config validation (config.RULE_KINDS), spec parsing (rulespec.KINDS, build) and rule dispatch
(rules.RULES, verdicts.claims_table) all know it from there."""
from __future__ import annotations

from dataclasses import dataclass

import pytest
import yaml

from analysis.judge.audit import config, rules, rulespec, verdicts
from analysis.judge.audit.result import result
from experiments.base.errors import InputError

FIGURES = {"recipes": {"runs": [], "baseline": "spread-s42", "baseline_label": "bs16", "seed_runs": [],
                       "spread": [], "hide_flags": []},
           "time_breakdown": {"runs": []}}


@dataclass(frozen=True)
class Probe(rulespec.Spec):
    run: str
    factor: float = 2.0


def _claims_file(tmp_path, rule: dict, name: str = "claims.yaml"):
    claim = {"id": "probe-claim", "origin": "finding", "claim": "A probe holds.",
             "source": {"file": "seeds/x.yaml", "claim": "c1"}, "rule": rule}
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"claims": [claim], "figures": FIGURES,
                                    "key_numbers": {"probe_kind": "{ratio}x"}}))
    return path


@pytest.fixture
def probe_kind():
    """The kind `probe_kind`, registered once (as a rule module does), and gone again after the test."""
    seen = []

    @rulespec.kind("probe_kind", Probe)
    def rule_probe(claim, runs, **_):
        rule = claim.rule_as(Probe)
        seen.append((claim.id, runs.hw))
        return result("holds", f"{rule.run} x{rule.factor}", {"ratio": rule.factor})

    try:
        yield rule_probe, seen
    finally:
        rulespec.REGISTRY.pop("probe_kind", None)


def test_every_built_in_kind_is_known_to_all_three_views():
    assert list(rulespec.KINDS) == list(config.RULE_KINDS) == list(rules.RULES) == list(rulespec.REGISTRY)
    assert len(rulespec.REGISTRY) == 17
    for name, k in rulespec.REGISTRY.items():
        assert rulespec.KINDS[name] is k.spec and rules.RULES[name] is k.rule
        assert config.RULE_KINDS[name] == rulespec.required(name)
    assert {c.kind for c in config.claims()} <= set(rules.RULES)


def test_a_kind_registered_once_is_known_to_validation_parsing_and_dispatch(tmp_path, monkeypatch, probe_kind):
    rule_probe, seen = probe_kind
    # spec parsing
    assert rulespec.KINDS["probe_kind"] is Probe
    assert rulespec.required("probe_kind") == ("run",) and rulespec.known("probe_kind") == ("run", "factor")
    assert rulespec.build("probe_kind", {"kind": "probe_kind", "run": "r1"}) == Probe("r1")
    # config validation: the kind, its required keys, its known keys, its key-number template
    assert config.RULE_KINDS["probe_kind"] == ("run",)
    path = _claims_file(tmp_path, {"kind": "probe_kind", "run": "r1", "factor": 3})
    (claim,) = config.load(path).claims
    assert claim.kind == "probe_kind" and claim.rule == Probe("r1", 3)
    with pytest.raises(InputError, match="rule probe_kind needs run"):
        config.load(_claims_file(tmp_path, {"kind": "probe_kind"}, "missing.yaml"))
    with pytest.raises(InputError, match="rule probe_kind reads no speed"):
        config.load(_claims_file(tmp_path, {"kind": "probe_kind", "run": "r1", "speed": 1}, "unknown.yaml"))
    # rule dispatch: the table calls the registered function
    assert rules.RULES["probe_kind"] is rule_probe
    monkeypatch.setattr(config, "load", lambda path=path: config._load(str(path)))
    table = verdicts.claims_table(None)
    assert seen == [("probe-claim", None)]
    assert table.iloc[0]["verdict"] == "holds" and table.iloc[0]["key"] == "3x"


def test_an_unregistered_kind_is_bad_input_and_a_kind_twice_an_error(tmp_path, probe_kind):
    rulespec.REGISTRY.pop("probe_kind")
    assert "probe_kind" not in config.RULE_KINDS and "probe_kind" not in rules.RULES
    with pytest.raises(InputError, match="unknown rule kind 'probe_kind'"):
        config.load(_claims_file(tmp_path, {"kind": "probe_kind", "run": "r1"}))
    with pytest.raises(ValueError, match="registered twice"):
        rulespec.kind("speedup", rulespec.Speedup)(lambda claim, runs, **_: None)
    with pytest.raises(TypeError, match="not a Spec dataclass"):
        rulespec.kind("plain", dict)  # type: ignore[arg-type]
