"""A seed file (`seeds/*.yaml`) as typed dicts, the shape analysis.core.seeds.load_seed validates: mypy checks every
key a reader takes of a seed, its claims, their internal checks and its figures."""
from __future__ import annotations

from typing import Any, TypedDict


class _SeedCheck(TypedDict):
    id: str
    formula: str | int | float
    result: float


class SeedCheck(_SeedCheck, total=False):
    """One internal check of a claim: the article's own arithmetic, its printed number and the reviewed verdict."""

    what: str
    published: Any
    printed: Any
    tolerance: float
    relation: str
    fragment: str
    consistent: bool | None


class _SeedClaim(TypedDict):
    id: str
    quote: str
    english: str
    kind: str
    testable_here: bool
    why: str


class SeedClaim(_SeedClaim, total=False):
    internal_checks: list[SeedCheck]


class SeedFigure(TypedDict):
    """A published number; `value` is None unless every digit of `text` was legible."""

    id: str
    hw: str | None
    metric: str
    value: float | None
    text: str
    legible: str
    unit: str | None
    meaning: str
    quote: str


class RecipeSeed(TypedDict):
    """The published `swift sft` command: its quote, and each flag's value or its legibility record."""

    quote: str
    flags: dict[str, Any]


class _SeedFile(TypedDict):
    source: str
    title: str
    summary: str
    claims: list[SeedClaim]


class SeedFile(_SeedFile, total=False):
    figures: list[SeedFigure]
    environment: dict[str, Any]
    hardware: dict[str, Any]
    recipe: RecipeSeed
    nonexistent_flags: list[dict[str, Any]]
