"""The seed articles' own arithmetic re-checked: each `internal_checks` formula of seeds/*.yaml recomputed.

A check is data (`formula`, the stored `result`, what the article printed, a tolerance and a `consistent` verdict
reviewed by hand); `safe_eval` recomputes the formula as plain arithmetic in floats, never as code, and `checks_frame`
sets the recomputed value beside the stored one (`result_ok`: they agree to 0.1 %).
"""
from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from analysis.core.seed_rows import SeedFile
from analysis.core.seeds import DEFAULT_SEEDS_DIR, load_seed

FUNCTIONS: dict[str, Callable] = {"ceil": math.ceil, "floor": math.floor, "round": round, "min": min, "max": max,
                                  "abs": abs}
ALLOWED_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Add, ast.Sub, ast.Mult, ast.Div,
                 ast.FloorDiv, ast.Mod, ast.Pow, ast.USub, ast.UAdd, ast.Call, ast.Name, ast.Load)
REL_TOL = ABS_TOL = 1e-3  # a stored result agrees with its formula within 0.1 % (results are rounded to 4 digits)
COLUMNS = ["seed", "claim", "check", "consistent", "published", "formula", "result", "recomputed", "result_ok",
           "tolerance", "relation", "fragment", "what"]


def safe_eval(formula) -> float | None:
    """Arithmetic of a seed check's formula (+ - * / // % **, ceil, floor, round, min, max, abs); else None."""
    if isinstance(formula, (int, float)):
        return float(formula)
    try:
        tree = ast.parse(str(formula), mode="eval")
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if not isinstance(node, ALLOWED_NODES):
            return None
        if isinstance(node, ast.Name) and node.id not in FUNCTIONS:
            return None
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)):
            return None
    try:
        return float(_evaluate(tree.body))
    except (ArithmeticError, TypeError, ValueError):
        return None


_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
              ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}


def _evaluate(node) -> float:
    """The node's value in floats, never Python's unbounded integers: 9**9**9**9 overflows at once instead of
    computing a number with billions of digits (OverflowError, so safe_eval says None)."""
    if isinstance(node, ast.Constant):
        return float(node.value)  # type: ignore[arg-type]  # typeshed: any literal; float() refuses the others
    if isinstance(node, ast.UnaryOp):
        value = _evaluate(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp):
        return float(_OPERATORS[type(node.op)](_evaluate(node.left), _evaluate(node.right)))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        return float(FUNCTIONS[node.func.id](*(_evaluate(a) for a in node.args)))
    raise ValueError(f"not arithmetic: {ast.dump(node)[:60]}")


def load_seeds(seeds_dir: str | Path = DEFAULT_SEEDS_DIR) -> dict[str, SeedFile]:
    """Every seed file of SEEDS_DIR by file name, validated (analysis.core.seeds.load_seed)."""
    return {p.name: load_seed(p) for p in sorted(Path(seeds_dir).glob("*.yaml"))}


def checks_frame(seeds: dict[str, SeedFile]) -> pd.DataFrame:
    """One row per internal check of SEEDS (file name -> parsed seed): the stored result, the recomputed one, whether
    they agree, and the article's printed number with the check's reviewed verdict (`consistent`)."""
    rows = []
    for fname, data in seeds.items():
        for claim in data.get("claims", []):
            for c in claim.get("internal_checks") or []:
                recomputed = safe_eval(c["formula"])
                rows.append({
                    "seed": fname, "claim": claim["id"], "check": c["id"],
                    "what": " ".join(str(c.get("what", "")).split()),
                    "formula": str(c["formula"]), "result": c["result"], "recomputed": recomputed,
                    "result_ok": (recomputed is not None
                                  and math.isclose(recomputed, c["result"], rel_tol=REL_TOL, abs_tol=ABS_TOL)),
                    "published": c.get("published", c.get("printed")), "tolerance": c.get("tolerance"),
                    "relation": c.get("relation"), "fragment": c.get("fragment") or None,
                    "consistent": c.get("consistent"),
                })
    return pd.DataFrame(rows, columns=COLUMNS)
