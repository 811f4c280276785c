"""The resolved recipe of a `combine` experiment (tp-combo): the members that were faster and counted, combined.

`resolve_combo` judges each member of the experiment's `combine` list with its claim's recipe rule (faster than the
baseline, eval loss inside the seed band) and merges the winners' overrides and training launcher options, the
fastest first (on a conflicting flag it wins). `write_resolved` writes the result where the runner reads it
(experiments.recipes.catalog.resolved_path: results/resolved/<hw>/<name>.yaml); a different file already there is kept
unless FORCE: a resolution is a decision, and a later one must not replace it silently.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import yaml

from analysis.judge.audit import config, rulespec
from analysis.judge.audit.rules_speed import recipe_outcome
from analysis.judge.band import runs_by_experiment
from analysis.parse.record import RunRecord
from experiments.base import userfiles
from experiments.base.errors import InputError
from experiments.recipes import catalog

# Launcher options that say how long a run goes and what is measured, not how it trains: a combination keeps its own.
SCHEDULE_LAUNCHER_KEYS = frozenset({"stop_after", "profile_steps", "profile_skip", "profile_activities",
                                    "profile_warmup", "profile_host_stacks"})
CONTENT_KEYS = ("experiment", "overrides", "launcher", "used", "reason")  # what makes two resolutions the same


def combine_experiments() -> list[str]:
    """The `combine` experiments of experiments/recipes/claims/, in definition order."""
    return [n for n, e in catalog.load()["experiments"].items() if e.get("combine")]


@dataclass(frozen=True)
class CombineSpec:
    """A `combine` experiment as defined: its members, and the swift flags and launcher options of its own."""

    members: tuple[str, ...]
    overrides: dict
    launcher: dict


def _combine_definition(name: str) -> CombineSpec:
    e = catalog.experiment(name)
    if e is None or not e.get("combine"):
        known = ", ".join(combine_experiments()) or "none"
        raise InputError(catalog.load()["files"]["experiments"],
                         f"{name!r} is not a `combine` experiment (those are: {known})")
    return CombineSpec(tuple(e["combine"]), dict(e.get("overrides") or {}), dict(e.get("launcher") or {}))


@dataclass(frozen=True)
class Combo:
    """A `combine` experiment resolved from the results: its swift flags and launcher options (None: nothing to
    combine yet), the members it took, fastest first, and why."""

    overrides: dict | None
    launcher: dict | None
    used: list[str]
    reason: str


def resolve_combo(name: str, results_dir: str | Path, hw: str | None = None,
                  records: list[RunRecord] | None = None) -> Combo:
    """Overrides and launcher options of `combine` experiment NAME from the results on HW (Combo)."""
    e = _combine_definition(name)
    runs = runs_by_experiment(results_dir, hw, records)
    rules = {c.rule.run: c.rule for c in config.claims() if isinstance(c.rule, rulespec.Recipe)}
    winners, missing = [], []
    for member in e.members:
        rule = rules.get(member)
        if rule is None:
            continue
        o = recipe_outcome(member, rule.baseline, rule.spread, runs)
        if o.state == "missing":
            missing.append(member)
        elif o.state == "ok" and o.counts and o.better and o.speedup is not None:
            winners.append((o.speedup.speedup_pct, member))
    if missing and not winners:
        return Combo(None, None, [], f"run these first: {', '.join(missing)}")
    if not winners:
        return Combo(None, None, [], "no recipe in `combine` was faster and counted")
    ordered = [m for _, m in sorted(winners, reverse=True)]  # fastest first: on a conflicting flag it wins
    overrides: dict = {}
    launcher: dict = {}
    for member in ordered:
        m = catalog.experiment(member)
        if m is None:  # never: recipe_outcome above found its runs
            raise InputError(catalog.CLAIMS_DIR, f"`combine` names {member!r}, which is no claims experiment")
        for k, v in (m["overrides"] or {}).items():
            overrides.setdefault(k, v)
        # a member's launcher options that change the training itself (--sdpa-padding-free) travel with its
        # overrides; how long to run and what to profile stay the combination's own
        for k, v in (m.get("launcher") or {}).items():
            if k not in SCHEDULE_LAUNCHER_KEYS:
                launcher.setdefault(k, v)
    overrides = {**e.overrides, **overrides}
    launcher = {**launcher, **e.launcher}
    return Combo(overrides, launcher, ordered,
                 f"combined {', '.join(ordered)}" + (f" (not run yet: {', '.join(missing)})" if missing else ""))


@dataclass(frozen=True)
class Resolution:
    """What write_resolved did (written | replaced | unchanged | kept | not resolved), with the combination, the
    file's resolution where there was one, and one line that says it."""

    path: Path
    action: str
    combo: Combo
    existing: dict | None
    message: str


def write_resolved(name: str, results_dir: str | Path, hw: str, force: bool = False,
                   records: list[RunRecord] | None = None, combo: Combo | None = None,
                   now: dt.datetime | None = None) -> Resolution:
    """Resolve NAME on HW (or take COMBO) and write it to catalog.resolved_path(results_dir, hw, name) as YAML
    (experiment, overrides, launcher, used, reason, made: ISO UTC time).

    An existing file with the same resolution is left as it is (its `made` time stays); one with another resolution
    is kept unless FORCE; a combination that cannot be resolved yet writes nothing."""
    combo = combo if combo is not None else resolve_combo(name, results_dir, hw, records)
    path = catalog.resolved_path(results_dir, hw, name)
    if combo.overrides is None:  # nothing to run yet: no file, so a later resolve is not blocked by this one
        return Resolution(path, "not resolved", combo, None, f"not resolved: {name} on {hw}: {combo.reason}")
    made = (now or dt.datetime.now(dt.timezone.utc)).astimezone(dt.timezone.utc).replace(microsecond=0)
    data = {"experiment": name, "overrides": combo.overrides, "launcher": combo.launcher,
            "used": list(combo.used), "reason": combo.reason,
            "made": made.isoformat().replace("+00:00", "Z")}
    existing = catalog.read_resolved(results_dir, hw, name)  # InputError when the file there is broken
    what = f"{name} on {hw}: {combo.reason}"
    if existing is not None:
        same = all(existing.get(k) == data[k] for k in CONTENT_KEYS)
        if same:
            return Resolution(path, "unchanged", combo, existing,
                              f"unchanged {path} ({what}; resolved {existing.get('made') or '?'})")
        if not force:
            return Resolution(path, "kept", combo, existing,
                              f"kept {path}: it says {existing['reason']!r} (resolved {existing.get('made') or '?'}), "
                              f"the results now say {combo.reason!r}; --force replaces it")
    path.parent.mkdir(parents=True, exist_ok=True)
    userfiles.write_atomic(path, yaml.safe_dump(data, sort_keys=False, default_flow_style=False))
    action = "written" if existing is None else "replaced"
    return Resolution(path, action, combo, existing, f"{action} {path} ({what})")
