"""A claim's rule as a typed value: one frozen class per rule kind, its fields the keys claims.yaml gives that kind.

config.load() builds them, so a key a rule needs and claims.yaml lacks, or one it gives that no rule reads, is bad
input naming the file, and a rule function reads `rule.min_speedup_pct`, which mypy checks, never `rule["..."]`.
Values stay as YAML gave them (an int threshold prints as one). Names of runs are tuples: the loaded claims are
shared, not copied.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SpeedupPair:
    base: str
    test: str
    how: str | None = None


@dataclass(frozen=True)
class MemoryLossPair:
    base: str
    test: str
    min_mem_saving_pct: float
    max_loss_increase: float


@dataclass(frozen=True)
class Speedup:
    base: str
    test: str
    min_speedup_pct: float
    how: str | None = None
    repeats: tuple[SpeedupPair, ...] = ()  # the same comparison made another way


@dataclass(frozen=True)
class Tradeoff:
    with_flag: str
    without_flag: str
    flag: str


@dataclass(frozen=True)
class CappedFit:
    run: str
    card_gb: float
    searches: tuple[str, ...] = ()


@dataclass(frozen=True)
class CapacityExplainsBatch:
    searches: tuple[str, ...]


@dataclass(frozen=True)
class MinMemory:
    searches: tuple[str, ...]
    claimed_min_gb: float


@dataclass(frozen=True)
class Flags:
    flags: dict[str, Any]  # flag -> the value the advice gives it
    related: tuple[str, ...] = ()


@dataclass(frozen=True)
class SeedSpread:
    runs: tuple[str, ...]


@dataclass(frozen=True)
class Alternative:
    run: str
    how: str


@dataclass(frozen=True)
class Fits:
    run: str
    package: str
    card_gb: float
    searches: tuple[str, ...] = ()
    alternatives: tuple[Alternative, ...] = ()


@dataclass(frozen=True)
class Bound:
    run: str
    expect: str
    host_below: float
    gpu_from: float


@dataclass(frozen=True)
class Supported:
    flags: tuple[str, ...]
    attn_impl: str = "sdpa"


@dataclass(frozen=True)
class Recipe:
    run: str
    baseline: str
    spread: tuple[str, ...]
    expect: str = "faster"


@dataclass(frozen=True)
class TargetSpeedup:
    run: str
    seed_runs: tuple[str, ...]
    factor: float
    spread: tuple[str, ...]
    paired: bool = False
    same_host: bool = False
    also_against: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClassBest:
    candidates: tuple[str, ...]
    card_gb: float
    seed_runs: tuple[str, ...]
    spread: tuple[str, ...]


@dataclass(frozen=True)
class Scaling:
    gpus: int
    min_efficiency: float


@dataclass(frozen=True)
class NcclEnv:
    min_gain_pct: float
    with_: str = "seed000-env"   # `with` in claims.yaml
    without: str = "plain"


@dataclass(frozen=True)
class ResumeTime:
    max_s: float


Rule = (MemoryLossPair | Speedup | Tradeoff | CappedFit | CapacityExplainsBatch | MinMemory | Flags | SeedSpread | Fits
        | Bound | Supported | Recipe | TargetSpeedup | ClassBest | Scaling | NcclEnv | ResumeTime)

# rule kind (claims.yaml) -> its class; analysis.judge.rules.RULES holds one function per kind
KINDS: dict[str, type] = {
    "memory_loss_pair": MemoryLossPair, "speedup": Speedup, "tradeoff": Tradeoff, "capped_fit": CappedFit,
    "capacity_explains_batch": CapacityExplainsBatch, "min_memory": MinMemory, "flags": Flags,
    "seed_spread": SeedSpread, "fits": Fits, "bound": Bound, "supported": Supported, "recipe": Recipe,
    "target_speedup": TargetSpeedup, "class_best": ClassBest, "scaling": Scaling, "nccl_env": NcclEnv,
    "resume_time": ResumeTime,
}
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
