"""The claims as data: analysis/judge/audit/claims.yaml loaded and checked (claims, their rules, the figures' run
lists).

`load()` gives a ClaimsFile: its claims (typed Claims, each with its typed rule, analysis.judge.audit.rulespec), the
figures' run lists and the key-number templates. Every claim says whose it is (`origin`: one of ORIGINS), names a rule
`kind` of RULE_KINDS with the keys that rule reads, and the experiments behind it, which are experiments or capacity
searches of experiments.recipes.catalog (experiments/recipes/claims/).
`key_numbers` holds per rule kind the template of a verdict's key number (a claim's own `key` replaces it). Anything
else is bad input: InputError naming claims.yaml. The `figures` section names the runs of the audit's tables
(analysis.judge.audit.frames), so no experiment name is code.
"""
from __future__ import annotations

import dataclasses
import functools
import string
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from analysis.judge.audit import rulespec
from analysis.judge.band import CLAIMS_FILE
from experiments.base.datafiles import read_yaml
from experiments.base.errors import InputError
from experiments.recipes import catalog

R = TypeVar("R")

VERDICTS = ("holds", "does not hold", "inconclusive", "cannot be tested here", "not run yet")
# whose claim it is -> its heading, in the order they are shown: a seed article's or the project's own finding
ORIGINS = {"article": "The seed articles' claims (seeds/*.yaml)",
           "finding": "The project's own findings (its issues and notes, not the articles')"}

# rule kind -> the keys of `rule` it needs (its class's fields without a default): a view of
# analysis.judge.audit.rulespec.REGISTRY, so a kind registered there is known here
RULE_KINDS: Mapping[str, tuple[str, ...]] = rulespec.KindView(lambda k: rulespec.required(k.name))
# figures: table -> its keys, each a run name (str) or a list of them
FIGURE_KEYS: dict[str, dict[str, type[list] | type[str]]] = {
    "recipes": {"runs": list, "baseline": str, "baseline_label": str, "seed_runs": list, "spread": list,
                "hide_flags": list},
    "time_breakdown": {"runs": list},
}


def _check_claim(path: Path, i: int, claim, known: set[str], seen: set[str]) -> None:
    if not isinstance(claim, dict) or not isinstance(claim.get("id"), str):
        raise InputError(path, f"claim #{i + 1}: needs an `id`")
    cid = claim["id"]
    if cid in seen:
        raise InputError(path, f"claim {cid!r}: id used twice")
    seen.add(cid)
    for key in ("claim", "source", "rule", "origin"):
        if key not in claim:
            raise InputError(path, f"claim {cid!r}: no `{key}`")
    if claim["origin"] not in ORIGINS:
        raise InputError(path, f"claim {cid!r}: `origin` must be one of {', '.join(ORIGINS)}")
    if "key" in claim:
        _check_template(path, f"claim {cid!r}: `key`", claim["key"])
    src = claim["source"]
    if not isinstance(src, dict) or not src.get("file") or not src.get("claim"):
        raise InputError(path, f"claim {cid!r}: `source` needs `file` and `claim`")
    experiments = claim.get("experiments") or []
    if not isinstance(experiments, list):
        raise InputError(path, f"claim {cid!r}: `experiments` must be a list")
    unknown = [n for n in experiments if n not in known]
    if unknown:
        raise InputError(path, f"claim {cid!r}: unknown claims experiment(s) {', '.join(map(str, unknown))} "
                               f"(not in experiments/recipes/claims/)")
    rule = claim["rule"]
    if not isinstance(rule, dict):
        raise InputError(path, f"claim {cid!r}: `rule` must be a mapping")
    bad_keys = [k for k in rule if not isinstance(k, str)]  # YAML 1.1 reads `on:` / `off:` as booleans
    if bad_keys:
        raise InputError(path, f"claim {cid!r}: rule key(s) {bad_keys} are not strings (YAML 1.1 booleans?)")
    kind = rule.get("kind")
    if not isinstance(kind, str) or kind not in RULE_KINDS:
        raise InputError(path, f"claim {cid!r}: unknown rule kind {kind!r} (known: {', '.join(RULE_KINDS)})")
    missing = [k for k in RULE_KINDS[kind] if k not in rule]
    if missing:
        raise InputError(path, f"claim {cid!r}: rule {kind} needs {', '.join(missing)}")
    unknown_keys = [k for k in rule if k != "kind" and k not in rulespec.known(kind)]
    if unknown_keys:
        raise InputError(path, f"claim {cid!r}: rule {kind} reads no {', '.join(unknown_keys)}")
    try:
        rulespec.build(kind, rule)
    except TypeError as exc:  # an entry of `repeats` or `alternatives` with a key its class lacks
        raise InputError(path, f"claim {cid!r}: rule {kind}: {exc}") from None


def _check_template(path: Path, where: str, text) -> None:
    """A key-number template: a string whose fields name numbers of the verdict ('{mem_saving_pct} % saved')."""
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(text)] if isinstance(text, str) else None
    except ValueError as exc:
        raise InputError(path, f"{where}: {exc}") from None
    if not fields or not any(fields) or any(f == "" for f in fields):
        raise InputError(path, f"{where}: must be a string with named fields such as '{{ratio}}x'")


def _check_key_numbers(path: Path, keys) -> None:
    if not isinstance(keys, dict):
        raise InputError(path, "`key_numbers` must be a mapping of rule kind to template")
    for kind, text in keys.items():
        if kind not in RULE_KINDS:
            raise InputError(path, f"key_numbers: unknown rule kind {kind!r}")
        _check_template(path, f"key_numbers.{kind}", text)


def _check_figures(path: Path, figures) -> None:
    if figures is None:
        raise InputError(path, "missing top-level key 'figures'")
    if not isinstance(figures, dict):
        raise InputError(path, "`figures` must be a mapping")
    for table, keys in FIGURE_KEYS.items():
        got = figures.get(table)
        if not isinstance(got, dict):
            raise InputError(path, f"figures: no `{table}` mapping")
        for key, kind in keys.items():
            value = got.get(key)
            ok = isinstance(value, kind) and (kind is str or all(isinstance(x, str) for x in value))
            if not ok:
                raise InputError(path, f"figures.{table}.{key}: must be a "
                                       f"{'list of names' if kind is list else 'name'}")


@dataclass(frozen=True)
class Source:
    """Where a claim comes from: a seed file and its claim id (+ the others it covers, the figures it quotes)."""

    file: str
    claim: str
    also: tuple[str, ...] = ()
    figures: tuple[str, ...] = ()


@dataclass(frozen=True)
class Claim:
    """One claim of claims.yaml: its id, whose (origin), its words, source, typed rule and experiments."""

    id: str
    origin: str
    claim: str
    source: Source
    rule: rulespec.Rule
    kind: str                      # the rule's kind (the key of RULES)
    experiments: tuple[str, ...] = ()
    key: str | None = None         # its own key-number template
    rule_text: str | None = None
    package_check: dict | None = None

    def rule_as(self, cls: type[R]) -> R:
        """The rule as the class of its kind (a rule function reads its own kind's fields)."""
        if not isinstance(self.rule, cls):
            raise TypeError(f"claim {self.id}: a {self.kind} rule, not {cls.__name__}")
        return self.rule


def claim_of(raw: dict) -> Claim:
    """The Claim of one checked mapping of claims.yaml."""
    src, rule = raw["source"], raw["rule"]
    return Claim(id=raw["id"], origin=raw["origin"], claim=raw["claim"],
                 source=Source(src["file"], src["claim"], tuple(src.get("also") or ()),
                               tuple(src.get("figures") or ())),
                 rule=rulespec.build(rule["kind"], rule), kind=rule["kind"],
                 experiments=tuple(raw.get("experiments") or ()), key=raw.get("key"),
                 rule_text=raw.get("rule_text"), package_check=raw.get("package_check"))


@dataclass(frozen=True)
class RecipesFigure:
    """The audit's recipes table (analysis.judge.audit.frames): its runs, baseline, seed runs and seed band."""

    runs: tuple[str, ...]
    baseline: str
    baseline_label: str
    seed_runs: tuple[str, ...]
    spread: tuple[str, ...]
    hide_flags: tuple[str, ...]
    eager_of: dict[str, str] = dataclasses.field(default_factory=dict)  # compiled recipe -> its eager one


@dataclass(frozen=True)
class TimeBreakdownFigure:
    runs: tuple[str, ...]


@dataclass(frozen=True)
class ClaimsFile:
    """claims.yaml, checked: the claims, the figures' run lists, the key-number templates by rule kind."""

    claims: tuple[Claim, ...]
    recipes: RecipesFigure
    time_breakdown: TimeBreakdownFigure
    key_numbers: dict[str, str]
    path: str

    def key_template(self, claim: Claim) -> str | None:
        """The template of CLAIM's key number: its own `key`, else its rule kind's."""
        return claim.key or self.key_numbers.get(claim.kind)


def _figure(cls: type, raw: dict):
    """CLS of one checked figures mapping (lists as tuples)."""
    return cls(**{f.name: tuple(v) if isinstance(v := raw[f.name], list) else v for f in dataclasses.fields(cls)
                  if f.name in raw})


@functools.lru_cache(maxsize=None)
def _load(path: str) -> ClaimsFile:
    p = Path(path)
    data = read_yaml(p, "claims")
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        raise InputError(p, "missing top-level key 'claims' (a list)")
    cat = catalog.load()
    known = set(cat["experiments"]) | set(cat["searches"])
    seen: set[str] = set()
    for i, claim in enumerate(data["claims"]):
        _check_claim(p, i, claim, known, seen)
    figures, keys = data.get("figures"), data.get("key_numbers") or {}
    _check_figures(p, figures)
    _check_key_numbers(p, keys)
    assert isinstance(figures, dict)  # _check_figures: a mapping
    return ClaimsFile(claims=tuple(claim_of(c) for c in data["claims"]),
                      recipes=_figure(RecipesFigure, figures["recipes"]),
                      time_breakdown=_figure(TimeBreakdownFigure, figures["time_breakdown"]),
                      key_numbers=dict(keys), path=str(p))


def load(path: str | Path = CLAIMS_FILE) -> ClaimsFile:
    """claims.yaml, checked and typed (read once per path; frozen, so shared)."""
    return _load(str(Path(path).resolve()))


def claims(path: str | Path = CLAIMS_FILE) -> tuple[Claim, ...]:
    return load(path).claims


def claim(claim_id: str, path: str | Path = CLAIMS_FILE) -> Claim | None:
    """The claim with id CLAIM_ID, else None."""
    return next((c for c in claims(path) if c.id == claim_id), None)


def recipes_figure(path: str | Path = CLAIMS_FILE) -> RecipesFigure:
    """The run names of the audit's recipes table (analysis.judge.audit.frames)."""
    return load(path).recipes


def time_breakdown_figure(path: str | Path = CLAIMS_FILE) -> TimeBreakdownFigure:
    """The runs of the audit's time-breakdown table (analysis.judge.audit.frames)."""
    return load(path).time_breakdown
