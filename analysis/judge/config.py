"""The claims as data: analysis/judge/claims.yaml loaded and checked (claims, their rules, the figures' run lists).

`load()` gives {'claims': [...], 'figures': {...}, 'key_numbers': {...}, 'path': ...}. Every claim says whose it is
(`origin`: one of ORIGINS), names a rule `kind` of RULE_KINDS with the keys that rule reads, and the experiments
behind it, which are experiments or capacity searches of experiments.recipes.catalog (experiments/recipes/claims/).
`key_numbers` holds per rule kind the template of a verdict's key number (a claim's own `key` replaces it). Anything
else is bad input: InputError naming claims.yaml. The `figures` section names the runs of the audit's tables
(analysis.judge.frames), so no experiment name is code.
"""
from __future__ import annotations

import copy
import functools
import string
from pathlib import Path

from experiments.base.datafiles import read_yaml
from experiments.base.errors import InputError
from experiments.recipes import catalog

CLAIMS_FILE = Path(__file__).resolve().parent / "claims.yaml"
VERDICTS = ("holds", "does not hold", "inconclusive", "cannot be tested here", "not run yet")
# whose claim it is -> its heading, in the order they are shown: a seed article's or the project's own finding
ORIGINS = {"article": "The seed articles' claims (seeds/*.yaml)",
           "finding": "The project's own findings (its issues and notes, not the articles')"}

# rule kind -> the keys of `rule` it reads (each required); analysis.judge.rules.RULES holds one function per kind
RULE_KINDS: dict[str, tuple[str, ...]] = {
    "memory_loss_pair": ("base", "test", "min_mem_saving_pct", "max_loss_increase"),
    "speedup": ("base", "test", "min_speedup_pct"),
    "tradeoff": ("with_flag", "without_flag", "flag"),
    "capped_fit": ("run", "card_gb"),
    "capacity_explains_batch": ("searches",),
    "min_memory": ("searches", "claimed_min_gb"),
    "flags": ("flags",),
    "seed_spread": ("runs",),
    "fits": ("run", "package", "card_gb"),
    "bound": ("run", "expect", "host_below", "gpu_from"),
    "supported": ("flags",),
    "recipe": ("run", "baseline", "spread"),
    "target_speedup": ("run", "seed_runs", "factor", "spread"),
    "class_best": ("candidates", "card_gb", "seed_runs", "spread"),
    "scaling": ("gpus", "min_efficiency"),
    "nccl_env": ("min_gain_pct",),
    "resume_time": ("max_s",),
}
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
    if kind not in RULE_KINDS:
        raise InputError(path, f"claim {cid!r}: unknown rule kind {kind!r} (known: {', '.join(RULE_KINDS)})")
    missing = [k for k in RULE_KINDS[kind] if k not in rule]
    if missing:
        raise InputError(path, f"claim {cid!r}: rule {kind} needs {', '.join(missing)}")


def _check_template(path: Path, where: str, text) -> None:
    """A key-number template: a string whose fields name numbers of the verdict ('{mem_saving_pct} % saved')."""
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(text)] if isinstance(text, str) else None
    except ValueError as exc:
        raise InputError(path, f"{where}: {exc}") from None
    if not fields or not any(fields) or any(f == "" for f in fields):
        raise InputError(path, f"{where}: must be a string with named fields such as '{{ratio}}x'")


def _check_key_numbers(path: Path, keys) -> dict:
    if not isinstance(keys, dict):
        raise InputError(path, "`key_numbers` must be a mapping of rule kind to template")
    for kind, text in keys.items():
        if kind not in RULE_KINDS:
            raise InputError(path, f"key_numbers: unknown rule kind {kind!r}")
        _check_template(path, f"key_numbers.{kind}", text)
    return keys


def _check_figures(path: Path, figures) -> dict:
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
    return figures


@functools.lru_cache(maxsize=None)
def _load(path: str) -> dict:
    p = Path(path)
    data = read_yaml(p, "claims")
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        raise InputError(p, "missing top-level key 'claims' (a list)")
    cat = catalog.load()
    known = set(cat["experiments"]) | set(cat["searches"])
    seen: set[str] = set()
    for i, claim in enumerate(data["claims"]):
        _check_claim(p, i, claim, known, seen)
    return {"claims": data["claims"], "figures": _check_figures(p, data.get("figures")),
            "key_numbers": _check_key_numbers(p, data.get("key_numbers") or {}), "path": str(p)}


def load(path: str | Path = CLAIMS_FILE) -> dict:
    """{'claims': [claim, ...], 'figures': {...}, 'key_numbers': {...}, 'path': str} of claims.yaml (checked; a copy,
    change it freely)."""
    return copy.deepcopy(_load(str(Path(path).resolve())))


def claims(path: str | Path = CLAIMS_FILE) -> list[dict]:
    return load(path)["claims"]


def claim(claim_id: str, path: str | Path = CLAIMS_FILE) -> dict | None:
    """The claim with id CLAIM_ID, else None."""
    return next((c for c in claims(path) if c["id"] == claim_id), None)


def key_template(claim: dict, data: dict) -> str | None:
    """The template of CLAIM's key number: its own `key`, else its rule kind's of DATA's (load()) `key_numbers`."""
    return claim.get("key") or data["key_numbers"].get(claim["rule"]["kind"])


def figures(table: str, path: str | Path = CLAIMS_FILE) -> dict:
    """The run names of one table of analysis.judge.frames (`recipes`, `time_breakdown`)."""
    return load(path)["figures"][table]
