"""The GPU plan of the claims audit (experiments/recipes/claims/plan.yaml): device calls of chains, one lane per GPU.

Each plan command is one chain of claims experiments / searches (experiments/recipes/catalog.py) run one after another
on
one GPU by `swiftbench run-all --claims --experiments plan:NAME`; experiments/cloud/claims_gpu.sh CALL runs the chains
of one device call side by side.

    python -m experiments.recipes.plan                 the plan with its estimated GPU time per chain and per call
    python -m experiments.recipes.plan --chains CALL   device call CALL's chains as `GPU LANE NAME` lines
"""
from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

from experiments.base.datafiles import read_yaml
from experiments.base.errors import InputError
from experiments.recipes import catalog

PLAN_FILE = "plan.yaml"


@functools.lru_cache(maxsize=None)
def _load(folder: str) -> dict:
    path = Path(folder) / PLAN_FILE
    data = read_yaml(path)
    plan = (data or {}).get("plan") if isinstance(data, dict) else None
    if not isinstance(plan, dict):
        raise InputError(path, "missing top-level key 'plan'")
    if not isinstance(plan.get("commands"), list):
        raise InputError(path, "plan: `commands` must be a list")
    seen = set()
    for i, c in enumerate(plan["commands"]):
        if not isinstance(c, dict) or "name" not in c or not isinstance(c.get("experiments"), list):
            raise InputError(path, f"plan command {i + 1}: needs a `name` and a list of `experiments`")
        if str(c["name"]) in seen:
            raise InputError(path, f"plan command {c['name']!r} appears twice")
        seen.add(str(c["name"]))
    return {**plan, "path": str(path)}


def load(folder: str | Path = catalog.CLAIMS_DIR) -> dict:
    """plan.yaml's `plan` ({'setup_s', 'budget_s', 'commands': [...]}) plus its 'path'. Cached: do not change."""
    return _load(str(Path(folder).resolve()))


def expand(names: list[str] | None, folder: str | Path = catalog.CLAIMS_DIR) -> list[str]:
    """Experiment / search names from a command line: `plan:N` is the plan's command N; default: the whole plan.
    Unknown names are an InputError; a name given twice runs once."""
    plan = load(folder)
    data = catalog.load(folder)
    commands = {str(c["name"]): c for c in plan["commands"]}
    if not names:
        names = [f"plan:{c['name']}" for c in plan["commands"]]
    out: list[str] = []
    for n in names:
        if n.startswith("plan:"):
            key = n.split(":", 1)[1]
            if key not in commands:
                raise InputError(plan["path"], f"no plan command {key!r} (known: {', '.join(commands)})")
            items = commands[key]["experiments"]
        else:
            items = [n]
        for item in items:
            if item not in data["experiments"] and item not in data["searches"]:
                known = sorted(set(data["experiments"]) | set(data["searches"]))
                raise InputError(data["path"], f"unknown claims experiment {item!r} (known: {', '.join(known)})")
            if item not in out:
                out.append(item)
    return out


def plan_first_ok(names: list[str] | None, folder: str | Path = catalog.CLAIMS_DIR) -> bool:
    """True when NAMES is one plan command marked first_ok (its candidates stop at the first that trains)."""
    if not names or len(names) != 1 or not names[0].startswith("plan:"):
        return False
    key = names[0].split(":", 1)[1]
    return any(str(c["name"]) == key and c.get("first_ok") for c in load(folder)["commands"])


def plan_estimates(folder: str | Path = catalog.CLAIMS_DIR) -> list[dict]:
    """Estimated GPU seconds of each plan command (a chain of runs on one GPU). A `first_ok` chain is expected to
    stop at its first candidate (`est_s`); `worst_s` runs them all."""
    out = []
    for c in load(folder)["commands"]:
        expand(list(c["experiments"]), folder)  # unknown names: InputError, not a KeyError
        each = [catalog.estimate_s(n, folder) for n in c["experiments"]]
        out.append({"name": str(c["name"]), "tier": c.get("tier"), "call": c.get("call", 1), "gpu": c.get("gpu", 0),
                    "made": str(c["made"]) if c.get("made") else None,
                    "lane": c.get("lane", "a"),
                    "first_ok": bool(c.get("first_ok")), "experiments": c["experiments"],
                    "est_s": (each[0] if each else 0.0) if c.get("first_ok") else sum(each), "worst_s": sum(each)})
    return out


def call_estimates(folder: str | Path = catalog.CLAIMS_DIR) -> dict[int, dict]:
    """Per device call: the set-up plus each GPU's chains (they run side by side), and the call's length:
    {call: {'setup_s', 'lanes': {(gpu, lane): seconds}, 'tiers': {...}, 'est_s'}}."""
    plan = load(folder)
    calls: dict[int, dict] = {}
    for c in plan_estimates(folder):
        call = calls.setdefault(c["call"], {"setup_s": plan.get("setup_s") or 0, "lanes": {}, "tiers": set(),
                                            "made": True})
        call["made"] = call["made"] and c["made"] is not None
        lane = (c["gpu"], c["lane"])
        call["lanes"][lane] = call["lanes"].get(lane, 0.0) + c["est_s"]
        call["tiers"].add(c["tier"])
    for call in calls.values():
        call["est_s"] = call["setup_s"] + max(call["lanes"].values())
    return calls


def summary_lines(folder: str | Path = catalog.CLAIMS_DIR) -> list[str]:
    """The plan in words: a line per chain (its call, GPU lane, tier, estimate, experiments), one per call, a total."""
    calls = call_estimates(folder)
    out = [f"call {c['call']} gpu {c['gpu']}{c['lane']}  plan:{c['name']:6} tier {c['tier']}  "
           f"~{c['est_s'] / 60:4.1f} min" + (f" (all candidates {c['worst_s'] / 60:.1f})" if c["first_ok"] else "")
           + "  " + ",".join(c["experiments"]) for c in plan_estimates(folder)]
    out += [f"call {n}: ~{call['est_s'] / 60:.1f} min (set-up {call['setup_s'] / 60:.1f} + the longest lane)"
            for n, call in calls.items()]
    out.append(f"all calls: ~{sum(c['est_s'] for c in calls.values()) / 60:.1f} min of device time plus machine starts")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.recipes.plan", description=__doc__.splitlines()[0])
    p.add_argument("--chains", type=int, default=None, metavar="CALL",
                   help="print device call CALL's chains as `GPU LANE NAME` lines "
                        "(for experiments/cloud/claims_gpu.sh)")
    a = p.parse_args(argv)
    try:
        if a.chains is not None:
            for c in plan_estimates():
                if c["call"] == a.chains:
                    print(f"{c['gpu']} {c['lane']} {c['name']}")
            return 0
        print("\n".join(summary_lines()))
    except InputError as exc:
        print(f"plan: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
