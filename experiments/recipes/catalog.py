"""The claims audit's runs as data: experiments and capacity searches of experiments/recipes/claims/.

experiments/recipes/claims/experiments.yaml holds `defaults` and `experiments`, experiments/recipes/claims/searches.yaml
the capacity
`searches`; the defaults apply to both. `load()` checks them (InputError naming the file) and expands every search
into one experiment per rung of its ladder (probe ids <search>-bs<N>), so a probe runs like any other experiment.

A `combine` experiment (tp-combo) runs a *resolved recipe*: a step of the claims audit (`swiftbench claims resolve
NAME --hw HW`) picks its overrides and launcher options from the results of its members and writes them to
`resolved_path(results_dir, hw, name)`; the runner reads that file with `read_resolved` and never decides itself.

Light at import time (PyYAML only): the runner, the plan and the claims audit all read it.
"""
from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from experiments.base.datafiles import read_yaml
from experiments.base.errors import InputError
from experiments.base.runfolder import Launcher, RunKey

CLAIMS_DIR = Path(__file__).resolve().parent / "claims"
EXPERIMENTS_FILE = "experiments.yaml"
SEARCHES_FILE = "searches.yaml"
# The launcher measures (profiler, memory cap, cut, quick stop) and sets the worst case of a memory probe (longest
# samples first, rows padded to N); what changes the training itself is a swift flag (`overrides`, the plugin's
# --callbacks among them) or the command's environment (`env`).
LAUNCHER_KEYS = {"mem_cap_gib", "profile_steps", "profile_skip", "profile_activities", "profile_warmup",
                 "profile_host_stacks", "longest_first", "pad_to", "fast_exit", "stop_after"}


def recipe_of_key(key: Mapping[str, Any]) -> tuple[dict, dict, dict]:
    """A run key's (overrides, launcher, env) in today's terms: launcher options that changed the training become
    the plugin flags and environment that do the same (sdpa_padding_free: --external_plugins swiftbench;
    sdp_backends flash,efficient,math: --callbacks sdpa_no_cudnn; liger_config: --callbacks liger_config with
    SWIFTBENCH_LIGER_CONFIG; env: the command's environment). A key without them comes back as it is."""
    import json

    overrides = dict(key.get(RunKey.OVERRIDES) or {})
    launcher = dict(key.get(RunKey.LAUNCHER) or {})
    env = {k: str(v) for k, v in (key.get(RunKey.ENV) or {}).items()}
    callbacks = list(overrides.get("callbacks") or [])
    if launcher.pop(Launcher.SDPA_PADDING_FREE, False):
        overrides["external_plugins"] = "swiftbench"
    backends = launcher.pop(Launcher.SDP_BACKENDS, None)
    if backends and set(backends) == {"flash", "efficient", "math"}:
        overrides["external_plugins"] = "swiftbench"
        callbacks.append("sdpa_no_cudnn")
    elif backends:
        callbacks.append("sdp_backends:" + ",".join(backends))  # no plugin callback does this: never equal
    liger = launcher.pop(Launcher.LIGER_CONFIG, None)
    if liger:
        overrides["external_plugins"] = "swiftbench"
        callbacks.append("liger_config")
        env["SWIFTBENCH_LIGER_CONFIG"] = json.dumps(liger, sort_keys=True)
    env.update({k: str(v) for k, v in (launcher.pop(Launcher.ENV, None) or {}).items()})
    if callbacks:
        overrides["callbacks"] = callbacks
    return overrides, launcher, env


EXPERIMENT_KEYS = {"description", "recipe", "overrides", "launcher", "env", "max_steps", "timeout_s", "matrix",
                   "est_gpu_s", "requires", "blocked", "combine", "search", "probe"}
SEARCH_KEYS = {"description", "recipe", "overrides", "launcher", "max_steps", "timeout_s", "flag", "ladder", "start",
               "est_gpu_s_per_probe", "requires"}
# A resolved recipe file of a `combine` experiment: results/resolved/<hw>/<name>.yaml
RESOLVED_DIR = "resolved"
RESOLVED_KEYS = {"experiment": str, "overrides": dict, "launcher": dict, "used": list, "reason": str}


# ------------------------------------------------------------------------------------------------ loading


def _merge_defaults(defaults: dict, item: dict) -> dict:
    out = copy.deepcopy(item)
    for key, value in defaults.items():
        if key == "overrides":
            out["overrides"] = {**(value or {}), **(item.get("overrides") or {})}
        elif key == "launcher":
            out["launcher"] = {**(value or {}), **(item.get("launcher") or {})}
        else:
            out.setdefault(key, copy.deepcopy(value))
    return out


def probe_name(search: str, batch: int) -> str:
    """The experiment id of one probe of a capacity search."""
    return f"{search}-bs{batch}"


def _section(path: Path, key: str) -> dict:
    data = read_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get(key), dict):
        raise InputError(path, f"missing top-level key {key!r}")
    return data


@functools.lru_cache(maxsize=None)
def _load(folder: str) -> dict:
    exp_file, search_file = Path(folder) / EXPERIMENTS_FILE, Path(folder) / SEARCHES_FILE
    data = _section(exp_file, "experiments")
    searches_data = _section(search_file, "searches")
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise InputError(exp_file, "`defaults` must be a mapping")
    experiments: dict[str, dict] = {}
    origin: dict[str, Path] = {}
    for name, item in data["experiments"].items():
        unknown = set(item) - EXPERIMENT_KEYS
        if unknown:
            raise InputError(exp_file, f"experiment {name!r}: unknown key(s) {', '.join(sorted(unknown))}")
        experiments[name], origin[name] = _merge_defaults(defaults, item), exp_file
    searches: dict[str, dict] = {}
    for name, item in searches_data["searches"].items():
        unknown = set(item) - SEARCH_KEYS
        if unknown:
            raise InputError(search_file, f"search {name!r}: unknown key(s) {', '.join(sorted(unknown))}")
        if name in experiments:
            raise InputError(search_file, f"search {name!r}: also an experiment of {exp_file.name}")
        s = _merge_defaults(defaults, item)
        if not s.get("flag"):
            raise InputError(search_file, f"search {name!r}: no flag")
        if s.get("start") not in (s.get("ladder") or []) or sorted(s["ladder"]) != s["ladder"]:
            raise InputError(search_file, f"search {name!r}: start must be on an ascending ladder")
        searches[name] = s
        for b in s["ladder"]:  # each probe is an experiment of its own (its own run folders)
            probe = {k: copy.deepcopy(v) for k, v in s.items()
                     if k in ("recipe", "launcher", "max_steps", "timeout_s", "matrix", "requires")}
            probe["overrides"] = {**(s.get("overrides") or {}), s["flag"]: b}
            probe["description"] = f"{name} probe: {s['flag']} {b} ({s.get('description') or ''})"
            probe["est_gpu_s"] = s.get("est_gpu_s_per_probe")
            probe["search"], probe["probe"] = name, b
            pname = probe_name(name, b)
            if pname in experiments:
                raise InputError(search_file, f"search {name!r}: probe {pname!r} is also an experiment")
            experiments[pname], origin[pname] = probe, search_file
    for name, e in experiments.items():
        unknown = set(e.get("launcher") or {}) - LAUNCHER_KEYS
        if unknown:
            raise InputError(origin[name], f"experiment {name!r}: unknown launcher option(s) "
                                           f"{', '.join(sorted(unknown))}")
        if not e.get("recipe"):
            raise InputError(origin[name], f"experiment {name!r}: no recipe")
        env = e.get("env") or {}
        if not isinstance(env, dict) or not all(isinstance(k, str) and k.replace("_", "").isalnum()
                                                and isinstance(v, (str, int, float)) for k, v in env.items()):
            raise InputError(origin[name], f"experiment {name!r}: `env` must map NAME to a value")
    return {"defaults": defaults, "experiments": experiments, "searches": searches, "path": str(Path(folder)),
            "files": {"experiments": str(exp_file), "searches": str(search_file)}}


def load(folder: str | Path = CLAIMS_DIR) -> dict:
    """{'experiments': {name: definition (defaults applied; probes of searches included)}, 'searches': {...},
    'defaults': {...}, 'path': the folder, 'files': {'experiments': ..., 'searches': ...}}. Cached: do not change."""
    return _load(str(Path(folder).resolve()))


def experiment(name: str, folder: str | Path = CLAIMS_DIR) -> dict | None:
    """The definition of a claims experiment (defaults applied; probes of searches included), else None."""
    e = load(folder)["experiments"].get(name)
    return copy.deepcopy(e) if e is not None else None


def search(name: str, folder: str | Path = CLAIMS_DIR) -> dict | None:
    """The definition of a capacity search (defaults applied), else None."""
    s = load(folder)["searches"].get(name)
    return copy.deepcopy(s) if s is not None else None


def next_probe(name: str, outcomes: dict[int, str], folder: str | Path = CLAIMS_DIR) -> int | None:
    """The next batch to probe given {batch: 'ok' | 'oom'}; None when the search is done."""
    s = search(name, folder)
    if s is None:
        raise InputError(load(folder)["files"]["searches"], f"unknown search {name!r}")
    ladder = s["ladder"]
    oks = [b for b, o in outcomes.items() if o == "ok"]
    ooms = [b for b, o in outcomes.items() if o == "oom"]
    if not oks and not ooms:
        return s["start"]
    if oks:
        top = max(oks)
        i = ladder.index(top)
        if i + 1 >= len(ladder):
            return None
        nxt = ladder[i + 1]
        return None if nxt in ooms else nxt
    low = min(ooms)  # only OOMs so far: go down
    i = ladder.index(low)
    return ladder[i - 1] if i > 0 else None


def estimate_s(name: str, folder: str | Path = CLAIMS_DIR, probes_per_search: int = 2) -> float:
    """Estimated GPU seconds of an experiment, or of a search (PROBES_PER_SEARCH probes)."""
    data = load(folder)
    if name in data["searches"]:
        return probes_per_search * float(data["searches"][name].get("est_gpu_s_per_probe") or 0)
    return float(data["experiments"][name].get("est_gpu_s") or 0)


# ------------------------------------------------------------------------- resolved recipes of `combine` experiments


def resolved_path(results_dir: str | Path, hw: str, name: str) -> Path:
    """Where the resolved recipe of `combine` experiment NAME on HW lives: <results_dir>/resolved/<hw>/<name>.yaml."""
    return Path(results_dir) / RESOLVED_DIR / hw / f"{name}.yaml"


def read_resolved(results_dir: str | Path, hw: str, name: str) -> dict | None:
    """The resolved recipe of `combine` experiment NAME on HW ({'experiment', 'overrides', 'launcher', 'used',
    'reason', 'made'}), or None when `swiftbench claims resolve NAME --hw HW` has not written it yet.
    `overrides: null` records a resolution that found nothing to combine (its `reason` says why).
    A file that is there but malformed is bad input (InputError naming it)."""
    path = resolved_path(results_dir, hw, name)
    if not path.is_file():
        return None
    data = read_yaml(path, "resolved recipe")
    if not isinstance(data, dict):
        raise InputError(path, "a resolved recipe must be a mapping")
    unresolved = data.get("overrides") is None
    for key, kind in RESOLVED_KEYS.items():
        if unresolved and key in ("overrides", "launcher", "used") and data.get(key) is None:
            continue
        if not isinstance(data.get(key), kind):
            raise InputError(path, f"resolved recipe: {key!r} must be a {kind.__name__}")
    unknown = set(data.get("launcher") or {}) - LAUNCHER_KEYS
    if unknown:
        raise InputError(path, f"resolved recipe: unknown launcher option(s) {', '.join(sorted(unknown))} "
                               f"(resolve it again: swiftbench claims resolve {name} --hw {hw} --force)")
    if data["experiment"] != name:
        raise InputError(path, f"resolved recipe of {data['experiment']!r}, not of {name!r}")
    unknown = set(data.get("launcher") or {}) - LAUNCHER_KEYS
    if unknown:
        raise InputError(path, f"resolved recipe: unknown launcher option(s) {', '.join(sorted(unknown))}")
    made = data.get("made")
    if made is not None and not isinstance(made, str):  # YAML reads an unquoted ISO time as a datetime
        data["made"] = made.isoformat()
    return data
