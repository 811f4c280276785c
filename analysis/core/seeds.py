"""The seed articles' published numbers and claims, as reviewed data (`seeds/*.yaml`).

The seed texts lost digits in extraction, so every number carries its extracted `text` and a `legible`
grade, and a number is only a number when it was fully legible. This module refuses files that break
that rule (or the rest of the schema), so the comparison code downstream never meets a guessed digit.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from analysis.core.seed_rows import SeedFile
from experiments.base import hardware, paths
from experiments.base.datafiles import read_yaml
from experiments.base.errors import InputError

DEFAULT_SEEDS_DIR = paths.SEEDS_DIR
RECIPE_SEED = "ms_swift_hw_test.yaml"

LEGIBLE = {"full", "partial", "none"}
CLAIM_KINDS = {"speed", "memory", "convergence", "flag", "hardware-spec"}
TOP_KEYS = ("source", "title", "summary", "claims")
FIGURE_KEYS = ("id", "hw", "metric", "value", "text", "legible", "unit", "meaning", "quote")
CLAIM_KEYS = ("id", "quote", "english", "kind", "testable_here", "why")
CHECK_KEYS = ("id", "formula", "result")
FIGURE_COLUMNS = ["source", "id", "hw", "metric", "value", "text", "legible", "unit", "meaning"]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _require(path: Path, where: str, item: Any, keys: tuple[str, ...]) -> None:
    if not isinstance(item, dict):
        raise InputError(path, f"{where}: expected a mapping, got {type(item).__name__}")
    missing = [k for k in keys if k not in item]
    if missing:
        raise InputError(path, f"{where}: missing key(s) {', '.join(missing)}")


def _check_figure(path: Path, fig: Any, index: int) -> str:
    where = f"figure #{index + 1}"
    if isinstance(fig, dict) and isinstance(fig.get("id"), str):
        where = f"figure {fig['id']!r}"
    _require(path, where, fig, FIGURE_KEYS)
    if not isinstance(fig["id"], str) or not fig["id"]:
        raise InputError(path, f"{where}: id must be a non-empty string")
    if fig["hw"] is not None and hardware.get(str(fig["hw"])) is None:
        raise InputError(path, f"{where}: hw {fig['hw']!r} is not a class of data/hardware.yaml or null")
    if not isinstance(fig["metric"], str) or not fig["metric"]:
        raise InputError(path, f"{where}: metric must be a non-empty string")
    if fig["legible"] not in LEGIBLE:
        raise InputError(path, f"{where}: legible {fig['legible']!r} is not one of full, partial, none")
    # The one rule that matters most: a value is only recorded when every digit of it was legible.
    if fig["legible"] == "full":
        if not _is_number(fig["value"]):
            raise InputError(path, f"{where}: legible full needs a numeric value, got {fig['value']!r}")
    elif fig["value"] is not None:
        raise InputError(path, f"{where}: value must be null unless legible is full (legible {fig['legible']})")
    for key in ("text", "meaning", "quote"):
        if not isinstance(fig[key], str):
            raise InputError(path, f"{where}: {key} must be a string")
    if fig["unit"] is not None and not isinstance(fig["unit"], str):
        raise InputError(path, f"{where}: unit must be a string or null")
    if fig["text"] not in fig["quote"]:
        raise InputError(path, f"{where}: text {fig['text']!r} does not occur in its quote")
    return fig["id"]


def _check_claim(path: Path, claim: Any, index: int) -> str:
    where = f"claim #{index + 1}"
    if isinstance(claim, dict) and isinstance(claim.get("id"), str):
        where = f"claim {claim['id']!r}"
    _require(path, where, claim, CLAIM_KEYS)
    if claim["kind"] not in CLAIM_KINDS:
        raise InputError(path, f"{where}: kind {claim['kind']!r} is not one of {sorted(CLAIM_KINDS)}")
    if not isinstance(claim["testable_here"], bool):
        raise InputError(path, f"{where}: testable_here must be true or false")
    for key in ("quote", "english", "why"):
        if not isinstance(claim[key], str) or not claim[key]:
            raise InputError(path, f"{where}: {key} must be a non-empty string")
    checks = claim.get("internal_checks", [])
    if not isinstance(checks, list):
        raise InputError(path, f"{where}: internal_checks must be a list")
    for j, check in enumerate(checks):
        cwhere = f"{where} check #{j + 1}"
        if isinstance(check, dict) and isinstance(check.get("id"), str):
            cwhere = f"{where} check {check['id']!r}"
        _require(path, cwhere, check, CHECK_KEYS)
        if not isinstance(check["formula"], (str, int, float)) or not _is_number(check["result"]):
            raise InputError(path, f"{cwhere}: formula must be text and result a number")
        if check.get("consistent") not in (True, False, None):
            raise InputError(path, f"{cwhere}: consistent must be true, false or null")
    return claim["id"]


def _check_legible_items(path: Path, section: str, items: Any, allowed: set) -> None:
    """Items of `environment` or recipe flags given as mappings: text plus a legibility grade."""
    for name, item in items.items():
        if not isinstance(item, dict):
            continue
        if "text" not in item or "legible" not in item:
            raise InputError(path, f"{section} {name!r}: needs text and legible")
        if item["legible"] not in allowed:
            raise InputError(path, f"{section} {name!r}: legible {item['legible']!r} is not one of "
                                   f"{sorted(map(str, allowed))}")


def load_seed(path: str | Path) -> SeedFile:
    """Parse one seed YAML and validate it; raise InputError naming the file (and figure/claim id) if bad."""
    path = Path(path)
    data = read_yaml(path)
    _require(path, "top level", data, TOP_KEYS)
    for key in ("source", "title", "summary"):
        if not isinstance(data[key], str) or not data[key].strip():
            raise InputError(path, f"{key} must be a non-empty string")

    if not isinstance(data["claims"], list):
        raise InputError(path, "claims must be a list")
    seen: set[str] = set()
    for i, claim in enumerate(data["claims"]):
        cid = _check_claim(path, claim, i)
        if cid in seen:
            raise InputError(path, f"claim {cid!r}: duplicate id")
        seen.add(cid)

    figures = data.get("figures", [])
    if not isinstance(figures, list):
        raise InputError(path, "figures must be a list")
    seen = set()
    for i, fig in enumerate(figures):
        fid = _check_figure(path, fig, i)
        if fid in seen:
            raise InputError(path, f"figure {fid!r}: duplicate id")
        seen.add(fid)

    if "environment" in data:
        if not isinstance(data["environment"], dict):
            raise InputError(path, "environment must be a mapping")
        _check_legible_items(path, "environment", data["environment"], {True, False})
        for name, item in data["environment"].items():
            if not isinstance(item, dict):
                raise InputError(path, f"environment {name!r}: expected a mapping with text and legible")
    if "hardware" in data:
        if not isinstance(data["hardware"], dict):
            raise InputError(path, "hardware must be a mapping")
        unknown = {k for k in data["hardware"] if k != "note" and hardware.get(str(k)) is None}
        if unknown:
            raise InputError(path, f"hardware: unknown key(s) {', '.join(sorted(unknown))}")
    if "recipe" in data:
        _require(path, "recipe", data["recipe"], ("quote", "flags"))
        if not isinstance(data["recipe"]["flags"], dict):
            raise InputError(path, "recipe flags must be a mapping")
        _check_legible_items(path, "recipe flag", data["recipe"]["flags"], LEGIBLE)
        for name, item in data["recipe"]["flags"].items():
            if isinstance(item, dict) and item["legible"] != "full" and "value" in item and "basis" not in item:
                raise InputError(path, f"recipe flag {name!r}: a reconstructed value needs a basis")
    for i, flag in enumerate(data.get("nonexistent_flags", []) or []):
        _require(path, f"nonexistent flag #{i + 1}", flag, ("flag", "quote"))
    return data


def published_figures(seeds_dir: str | Path = DEFAULT_SEEDS_DIR) -> pd.DataFrame:
    """All figures of all seed files, one row each; `value` is NaN wherever the article's digits were lost."""
    if not Path(seeds_dir).is_dir():  # a missing folder read as "no published figures" left those rows out unsaid
        raise InputError(seeds_dir, "no such seeds folder")
    rows = []
    for path in sorted(Path(seeds_dir).glob("*.yaml")):
        data = load_seed(path)
        for fig in data.get("figures", []):
            rows.append({"source": data["source"], "id": fig["id"], "hw": fig["hw"], "metric": fig["metric"],
                         "value": fig["value"], "text": fig["text"], "legible": fig["legible"], "unit": fig["unit"],
                         "meaning": fig["meaning"]})
    frame = pd.DataFrame(rows, columns=FIGURE_COLUMNS)
    frame["value"] = pd.to_numeric(frame["value"], errors="raise").astype(float)
    return frame


def published_recipe(seeds_dir: str | Path = DEFAULT_SEEDS_DIR, detail: bool = False) -> dict[str, Any]:
    """The `swift sft` flags of article 003 as published, flattened to flag -> value.

    `model` and `warmup_ratio` are reconstructions of partly illegible text (see their `basis` in the YAML);
    pass detail=True to get those entries as their full mappings (value, text, legible, basis) instead.
    """
    data = load_seed(Path(seeds_dir) / RECIPE_SEED)
    flags = data["recipe"]["flags"]
    if detail:
        return dict(flags)
    return {name: (item["value"] if isinstance(item, dict) else item) for name, item in flags.items()}
