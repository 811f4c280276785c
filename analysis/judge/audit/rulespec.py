"""A claim's rule as a typed value: one frozen class per rule kind, its fields the keys claims.yaml gives that kind;
and the one registry of rule kinds (REGISTRY), in which each kind is defined once, at its rule function:

    @rulespec.kind("speedup", rulespec.Speedup)
    def rule_speedup(claim, runs, **_) -> Verdict: ...

binds the kind's name (claims.yaml's `kind`) to its class and its function. Everything else that knows the kinds is a
view of REGISTRY: KINDS here (kind -> class: spec parsing, `build`), analysis.judge.audit.config.RULE_KINDS (kind ->
the keys claims.yaml must give: config validation) and analysis.judge.audit.rules.RULES (kind -> function: rule
dispatch), so a kind registered once is known to all three. The rule modules register when imported: importing the
analysis.judge.audit package imports analysis.judge.audit.rules, which imports them all.

config.load() builds them, so a key a rule needs and claims.yaml lacks, or one it gives that no rule reads, is bad
input naming the file, and a rule function reads `rule.min_speedup_pct`, which mypy checks, never `rule["..."]`.
Values stay as YAML gave them (an int threshold prints as one). Names of runs are tuples: the loaded claims are
shared, not copied.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
V = TypeVar("V")


@dataclass(frozen=True)
class Spec:
    """The base of every rule kind's class (a claim's typed rule)."""


@dataclass(frozen=True)
class SpeedupPair:
    base: str
    test: str
    how: str | None = None


@dataclass(frozen=True)
class MemoryLossPair(Spec):
    base: str
    test: str
    min_mem_saving_pct: float
    max_loss_increase: float


@dataclass(frozen=True)
class Speedup(Spec):
    base: str
    test: str
    min_speedup_pct: float
    how: str | None = None
    repeats: tuple[SpeedupPair, ...] = ()  # the same comparison made another way


@dataclass(frozen=True)
class Tradeoff(Spec):
    with_flag: str
    without_flag: str
    flag: str


@dataclass(frozen=True)
class CappedFit(Spec):
    run: str
    card_gb: float
    searches: tuple[str, ...] = ()


@dataclass(frozen=True)
class CapacityExplainsBatch(Spec):
    searches: tuple[str, ...]


@dataclass(frozen=True)
class MinMemory(Spec):
    searches: tuple[str, ...]
    claimed_min_gb: float


@dataclass(frozen=True)
class Flags(Spec):
    flags: dict[str, Any]  # flag -> the value the advice gives it
    related: tuple[str, ...] = ()


@dataclass(frozen=True)
class SeedSpread(Spec):
    runs: tuple[str, ...]


@dataclass(frozen=True)
class Alternative:
    run: str
    how: str


@dataclass(frozen=True)
class Fits(Spec):
    run: str
    package: str
    card_gb: float
    searches: tuple[str, ...] = ()
    alternatives: tuple[Alternative, ...] = ()


@dataclass(frozen=True)
class Bound(Spec):
    run: str
    expect: str
    host_below: float
    gpu_from: float


@dataclass(frozen=True)
class Supported(Spec):
    flags: tuple[str, ...]
    attn_impl: str = "sdpa"
    plugin: bool = False  # the shipped plugin lifts ms-swift's check for these flags (tests/test_judge.py checks it)


@dataclass(frozen=True)
class Recipe(Spec):
    run: str
    baseline: str
    spread: tuple[str, ...]
    expect: str = "faster"


@dataclass(frozen=True)
class TargetSpeedup(Spec):
    run: str
    seed_runs: tuple[str, ...]
    factor: float
    spread: tuple[str, ...]
    paired: bool = False
    same_host: bool = False
    also_against: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClassBest(Spec):
    candidates: tuple[str, ...]
    card_gb: float
    seed_runs: tuple[str, ...]
    spread: tuple[str, ...]


@dataclass(frozen=True)
class Scaling(Spec):
    gpus: int
    min_efficiency: float


@dataclass(frozen=True)
class NcclEnv(Spec):
    min_gain_pct: float
    with_: str = "seed000-env"   # `with` in claims.yaml
    without: str = "plain"


@dataclass(frozen=True)
class ResumeTime(Spec):
    max_s: float


Rule = Spec  # a claim's typed rule: an instance of its kind's class


@dataclass(frozen=True)
class Kind:
    """One rule kind: its name in claims.yaml, the class of its rule and the function that judges a claim of it
    (function(claim, runs, seeds_dir=None) -> analysis.judge.audit.result.Verdict)."""

    name: str
    spec: type[Spec]
    rule: Callable[..., Any]


REGISTRY: dict[str, Kind] = {}  # kind -> Kind, in the order the rule modules register them


def kind(name: str, spec: type[Spec]) -> Callable[[F], F]:
    """Register the decorated rule function as the one of kind NAME, whose rule is a SPEC; a name used twice, or a
    class that is not a frozen Spec dataclass, is a programming error."""
    if not (isinstance(spec, type) and issubclass(spec, Spec) and dataclasses.is_dataclass(spec)):
        raise TypeError(f"rule kind {name!r}: {spec!r} is not a Spec dataclass")

    def register(fn: F) -> F:
        if name in REGISTRY:
            raise ValueError(f"rule kind {name!r} registered twice ({REGISTRY[name].rule.__qualname__}, "
                             f"{fn.__qualname__})")
        REGISTRY[name] = Kind(name, spec, fn)
        return fn

    return register


class KindView(Mapping[str, V], Generic[V]):
    """A read-only view of REGISTRY: kind -> one thing of its Kind (its class, its required keys, its function)."""

    def __init__(self, of: Callable[[Kind], V]) -> None:
        self._of = of

    def __getitem__(self, name: str) -> V:
        return self._of(REGISTRY[name])

    def __iter__(self) -> Iterator[str]:
        return iter(REGISTRY)

    def __len__(self) -> int:
        return len(REGISTRY)


KINDS: Mapping[str, type[Spec]] = KindView(lambda k: k.spec)  # rule kind (claims.yaml) -> its class
_YAML_NAMES = {"with_": "with"}  # fields named after a Python keyword


def yaml_name(field: str) -> str:
    return _YAML_NAMES.get(field, field)


def required(kind: str) -> tuple[str, ...]:
    """The keys claims.yaml must give a rule of KIND (its fields without a default)."""
    return tuple(yaml_name(f.name) for f in dataclasses.fields(KINDS[kind])
                 if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)


def known(kind: str) -> tuple[str, ...]:
    return tuple(yaml_name(f.name) for f in dataclasses.fields(KINDS[kind]))


def build(kind: str, raw: dict) -> Rule:
    """The rule of KIND from claims.yaml's mapping RAW (checked by config: required keys present, none unknown)."""
    values = {}
    for f in dataclasses.fields(KINDS[kind]):
        name = yaml_name(f.name)
        if name in raw:
            values[f.name] = _value(f.name, raw[name])
    return KINDS[kind](**values)


def _value(name: str, value: Any) -> Any:
    if name == "repeats":
        return tuple(SpeedupPair(**p) for p in value)
    if name == "alternatives":
        return tuple(Alternative(**a) for a in value)
    return tuple(value) if isinstance(value, list) else value
