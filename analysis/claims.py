"""Claims audit (issue 5): experiments/claims.yaml as data, and its claims turned into verdicts.

`claims_table(results_dir)` gives one row per claim or throughput recipe: holds / does not hold / inconclusive /
cannot be tested here / not run yet, with the numbers and the run folders behind it. Claims about the installed
ms-swift (flags, padding-free) are decided now from its argument dataclass and parser; the rest from the runs
that experiments/runner.py made (`run-all --claims`), matched to their current definition in claims.yaml.

The runner imports the loader part of this module (experiment definitions, capacity searches, the plan); it must
stay light at import time (no torch, no ms-swift, no pandas until a table is asked for).
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import importlib.util
import math
import statistics
from pathlib import Path
from typing import Any


from analysis.datafiles import read_yaml
from analysis.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
CLAIMS_FILE = ROOT / "experiments" / "claims.yaml"
LAUNCHER_KEYS = {"mem_cap_gib", "profile_steps", "profile_skip", "longest_first", "pad_to", "fast_exit", "stop_after",
                 "sdpa_padding_free"}
EXPERIMENT_KEYS = {"description", "recipe", "overrides", "launcher", "max_steps", "timeout_s", "matrix", "est_gpu_s",
                   "requires", "blocked", "combine", "search", "probe"}
SEARCH_KEYS = {"description", "recipe", "overrides", "launcher", "max_steps", "timeout_s", "flag", "ladder", "start",
               "est_gpu_s_per_probe", "requires"}
VERDICTS = ("holds", "does not hold", "inconclusive", "cannot be tested here", "not run yet")


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
    return f"{search}-bs{batch}"


@functools.lru_cache(maxsize=None)
def _load(path: str) -> dict:
    p = Path(path)
    data = read_yaml(p)
    for key in ("experiments", "searches", "claims", "plan"):
        if not isinstance((data or {}).get(key), (dict, list)):
            raise InputError(p, f"missing top-level key {key!r}")
    defaults = data.get("defaults") or {}
    experiments: dict[str, dict] = {}
    for name, item in data["experiments"].items():
        unknown = set(item) - EXPERIMENT_KEYS
        if unknown:
            raise InputError(p, f"experiment {name!r}: unknown key(s) {', '.join(sorted(unknown))}")
        experiments[name] = _merge_defaults(defaults, item)
    searches: dict[str, dict] = {}
    for name, item in data["searches"].items():
        unknown = set(item) - SEARCH_KEYS
        if unknown:
            raise InputError(p, f"search {name!r}: unknown key(s) {', '.join(sorted(unknown))}")
        s = _merge_defaults(defaults, item)
        if s["start"] not in s["ladder"] or sorted(s["ladder"]) != s["ladder"]:
            raise InputError(p, f"search {name!r}: start must be on an ascending ladder")
        searches[name] = s
        for b in s["ladder"]:  # each probe is an experiment of its own (its own run folders)
            probe = {k: copy.deepcopy(v) for k, v in s.items()
                     if k in ("recipe", "launcher", "max_steps", "timeout_s", "matrix", "requires")}
            probe["overrides"] = {**s["overrides"], s["flag"]: b}
            probe["description"] = f"{name} probe: {s['flag']} {b} ({s['description']})"
            probe["est_gpu_s"] = s.get("est_gpu_s_per_probe")
            probe["search"], probe["probe"] = name, b
            experiments[probe_name(name, b)] = probe
    for name, e in experiments.items():
        unknown = set(e.get("launcher") or {}) - LAUNCHER_KEYS
        if unknown:
            raise InputError(p, f"experiment {name!r}: unknown launcher option(s) {', '.join(sorted(unknown))}")
        if not e.get("recipe"):
            raise InputError(p, f"experiment {name!r}: no recipe")
    return {**data, "defaults": defaults, "experiments": experiments, "searches": searches, "path": str(p)}


def load(path: str | Path = CLAIMS_FILE) -> dict:
    return _load(str(Path(path).resolve()))


def experiment(name: str, path: str | Path = CLAIMS_FILE) -> dict | None:
    """The definition of a claims experiment (defaults applied; probes of searches included), else None."""
    e = load(path)["experiments"].get(name)
    return copy.deepcopy(e) if e is not None else None


def search(name: str, path: str | Path = CLAIMS_FILE) -> dict | None:
    s = load(path)["searches"].get(name)
    return copy.deepcopy(s) if s is not None else None


def expand(names: list[str] | None, path: str | Path = CLAIMS_FILE) -> list[str]:
    """Experiment / search names from a command line: `plan:N` is the plan's command N; default: the whole plan."""
    data = load(path)
    commands = {c["name"]: c for c in data["plan"]["commands"]}
    if not names:
        names = [f"plan:{c['name']}" for c in data["plan"]["commands"]]
    out: list[str] = []
    for n in names:
        if n.startswith("plan:"):
            key = n.split(":", 1)[1]
            if key not in commands:
                raise InputError(data["path"], f"no plan command {key!r} (known: {', '.join(commands)})")
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


def plan_first_ok(names: list[str] | None, path: str | Path = CLAIMS_FILE) -> bool:
    """True when NAMES is one plan command marked first_ok (its candidates stop at the first that trains)."""
    if not names or len(names) != 1 or not names[0].startswith("plan:"):
        return False
    key = names[0].split(":", 1)[1]
    return any(c["name"] == key and c.get("first_ok") for c in load(path)["plan"]["commands"])


def estimate_s(name: str, path: str | Path = CLAIMS_FILE, probes_per_search: int = 2) -> float:
    data = load(path)
    if name in data["searches"]:
        return probes_per_search * float(data["searches"][name].get("est_gpu_s_per_probe") or 0)
    return float(data["experiments"][name].get("est_gpu_s") or 0)


def plan_estimates(path: str | Path = CLAIMS_FILE) -> list[dict]:
    """Estimated GPU seconds of each plan command (a chain of runs on one GPU). A `first_ok` chain is expected to
    stop at its first candidate (`est_s`); `worst_s` runs them all."""
    data = load(path)
    out = []
    for c in data["plan"]["commands"]:
        each = [estimate_s(n, path) for n in c["experiments"]]
        out.append({"name": c["name"], "tier": c["tier"], "call": c.get("call", 1), "gpu": c.get("gpu", 0),
                    "lane": c.get("lane", "a"),
                    "first_ok": bool(c.get("first_ok")), "experiments": c["experiments"],
                    "est_s": each[0] if c.get("first_ok") else sum(each), "worst_s": sum(each)})
    return out


def call_estimates(path: str | Path = CLAIMS_FILE) -> dict[int, dict]:
    """Per device call: the set-up plus each GPU's chains (they run side by side), and the call's length."""
    data = load(path)
    calls: dict[int, dict] = {}
    for c in plan_estimates(path):
        call = calls.setdefault(c["call"], {"setup_s": data["plan"]["setup_s"], "lanes": {}, "tiers": set()})
        lane = (c["gpu"], c["lane"])
        call["lanes"][lane] = call["lanes"].get(lane, 0.0) + c["est_s"]
        call["tiers"].add(c["tier"])
    for call in calls.values():
        call["est_s"] = call["setup_s"] + max(call["lanes"].values())
    return calls


# --------------------------------------------------------------------------- what the installed ms-swift says


def swift_version() -> str | None:
    import importlib.metadata as md

    try:
        return md.version("ms-swift")
    except md.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def _sft_fields() -> dict[str, Any]:
    from swift.arguments import SftArguments

    return {f.name: f for f in dataclasses.fields(SftArguments)}


def _default(f) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        try:
            return f.default_factory()  # type: ignore[misc]
        except Exception:  # noqa: BLE001 - a factory that needs context
            return None
    return None


@functools.lru_cache(maxsize=1)
def _sft_parser():
    from transformers import HfArgumentParser

    from swift.arguments import SftArguments

    try:  # ms-swift parses with this patch (swift.utils.parse_args); the same parser, without running __post_init__
        from swift.utils.utils import _patch_get_type_hints
    except ImportError:  # pragma: no cover - other ms-swift versions
        import contextlib

        _patch_get_type_hints = contextlib.nullcontext
    with _patch_get_type_hints():
        return HfArgumentParser([SftArguments])


def flag_report(flag: str, value: str | None = None) -> dict:
    """Is --FLAG an argument of the installed `swift sft`, and does its parser accept VALUE?

    Uses ms-swift's own parser (HfArgumentParser over SftArguments) without building the arguments, so nothing is
    loaded: unknown flags come back as remaining strings, which `swift sft` turns into a ValueError.
    """
    version = swift_version()
    fields = _sft_fields()
    f = fields.get(flag)
    out = {"flag": f"--{flag}", "exists": f is not None, "swift_version": version}
    if f is None:
        similar = sorted(n for n in fields if any(part in n for part in flag.split("_") if len(part) > 3
                                                  and part not in ("disable", "enable")))
        out["similar"] = similar
        out["text"] = f"--{flag}: does not exist in ms-swift {version}"
    else:
        out["type"] = str(f.type)
        out["default"] = _default(f)
        out["text"] = f"--{flag}: exists in ms-swift {version} (default {out['default']!r})"
    if value is not None:
        parser = _sft_parser()
        try:
            _, remaining = parser.parse_known_args([f"--{flag}", value])
            out["parser_accepts"] = not remaining
            if remaining:
                out["parser"] = f"left unparsed: {remaining} (swift sft raises ValueError: remaining_argv)"
        except SystemExit:
            out["parser_accepts"] = False
            out["parser"] = f"rejected by the argument parser: --{flag} {value}"
    return out


def padding_free_report(flags: list[str], attn_impl: str = "sdpa") -> dict:
    """Does the installed ms-swift allow padding_free / packing with ATTN_IMPL, and is flash-attn importable?"""
    from types import SimpleNamespace

    from swift.arguments import SftArguments

    out: dict[str, Any] = {"swift_version": swift_version(), "attn_impl": attn_impl,
                           "flash_attn_importable": importlib.util.find_spec("flash_attn") is not None}
    for flag in flags:
        probe = SimpleNamespace(padding_free=flag == "padding_free", packing=flag == "packing", attn_impl=attn_impl)
        try:
            SftArguments._check_padding_free(probe)
            out[flag] = {"allowed": True}
        except ValueError as exc:
            out[flag] = {"allowed": False, "message": str(exc)}
    return out


def package_report(name: str, recorded: dict | None = None) -> dict:
    """Is NAME importable here; what was recorded about its wheel for the GPU host (claims.yaml package_check)."""
    out = {"package": name, "importable_here": importlib.util.find_spec(name) is not None}
    if recorded:
        out["pypi"] = {k: recorded[k] for k in ("version", "file", "size_mb", "kernels") if k in recorded}
        out["note"] = recorded.get("note")
    return out


def pypi_wheel(name: str, python_version: str = "3.12", platform: str = "manylinux_2_24_x86_64",
               timeout: float = 120) -> dict:
    """`pip download --no-deps NAME` for the GPU host's Python and platform (needs network): what wheel exists."""
    import subprocess
    import sys
    import tempfile
    import zipfile

    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", name, "--python-version",
                            python_version, "--platform", platform, "--only-binary=:all:", "-d", tmp, "-q"],
                           capture_output=True, text=True, timeout=timeout)
        wheels = list(Path(tmp).glob("*.whl"))
        if p.returncode != 0 or not wheels:
            return {"available": False, "error": (p.stderr or p.stdout).strip()[-500:]}
        whl = wheels[0]
        with zipfile.ZipFile(whl) as z:
            libs = sorted(Path(n).name for n in z.namelist() if n.endswith(".so"))
        return {"available": True, "file": whl.name, "size_mb": round(whl.stat().st_size / 1e6, 1), "libs": libs}


from analysis.run_measures import (  # noqa: F401 - peak_at is re-exported: the audit's measurements of one run
    PROFILE_FILE, _profile, busy_fraction, common_peaks, eval_at, host_of, last_eval_step, last_train_step,
    paired_ratio, peak_at, step_stats, throughput,
)


def is_oom(row: dict) -> bool:
    return row.get("status") == "failed" and str(row.get("failure") or "").startswith("OOM")


def _defined_as(row: dict, name: str, path: str | Path) -> bool:
    """Was this run made from the current definition of claims experiment NAME (overrides, launcher, steps)?"""
    e = experiment(name, path)
    key = (row.get("run_status") or {}).get("key") or {}
    if e is None or not key:
        return False
    if e.get("combine"):  # resolved at run time: its overrides and launcher are whatever the combination was
        got_launcher = key.get("launcher") or {}
        return all(got_launcher.get(k) == v for k, v in (e.get("launcher") or {}).items())
    want = dict(e.get("overrides") or {})
    got = dict(key.get("overrides") or {})
    for k in ("torch_dtype", "check_model"):  # set by the runner for the machine, not by the definition
        got.pop(k, None)
    return got == want and key.get("launcher") == e.get("launcher")


def collected(results_dir: str | Path | None, rows: list[dict] | None = None) -> list[dict]:
    """The results rows (analysis.runs.collect) of RESULTS_DIR, or ROWS when a caller already collected them: the
    claims table and its figures parse every run once."""
    from analysis.runs import collect

    if rows is not None:
        return rows
    if results_dir is None or not Path(results_dir).is_dir():
        return []
    return collect(results_dir)


def runs_by_experiment(results_dir: str | Path | None, path: str | Path = CLAIMS_FILE, hw: str | None = None,
                       rows: list[dict] | None = None) -> dict:
    """{experiment: [rows, newest first]} for the claims experiments under RESULTS_DIR (matching definitions)."""
    names = set(load(path)["experiments"])
    out: dict[str, list[dict]] = {}
    for row in collected(results_dir, rows):
        name = row.get("experiment")
        if name not in names or (hw and row.get("hw") != hw):
            continue
        if not _defined_as(row, name, path):
            continue
        # a run stopped by a time limit (the device call's deadline, the runner's timeout) says nothing about the
        # recipe: kept aside, named by the verdicts that would have used it
        if cut_short(row):
            out.setdefault(CUT_SHORT, {}).setdefault(name, []).append(row)
        else:
            out.setdefault(name, []).append(row)
    for name, runs in out.items():
        if name != CUT_SHORT:
            runs.sort(key=lambda r: r.get("run") or "", reverse=True)
    return out


CUT_SHORT = "__cut_short__"


def cut_short(row: dict) -> bool:
    """Failed because time ran out (interrupted at a deadline, or the per-run timeout), not because of the recipe."""
    reason = str(row.get("failure") or "")
    return row.get("status") != "ok" and reason.startswith(("interrupted", "timeout"))


def _profiled(runs: dict, name: str) -> tuple[dict | None, bool]:
    """(run, cut short?): NAME's complete run, else one cut short by a time limit after its profiled step(s), which
    it still measured."""
    row = _pick(runs, name)
    if row is not None:
        return row, False
    row = next((r for r in runs.get(CUT_SHORT, {}).get(name, []) if busy_fraction(r) is not None), None)
    return row, row is not None


def _pick(runs: dict, name: str, allow_oom: bool = False) -> dict | None:
    for row in runs.get(name, []):
        if row.get("status") == "ok" or (allow_oom and is_oom(row)):
            return row
    return None


def _r(x: float | None, nd: int = 4) -> float | None:
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else round(x, nd)


def _dummy(*rows: dict) -> bool:
    return any("dummy weights" in (r.get("labels") or []) for r in rows if r)


def _hw_choice(rows: list[dict], path) -> str | None:
    """The hardware class with the most claims runs."""
    names = set(load(path)["experiments"])
    counts: dict[str, int] = {}
    for row in rows:
        if row.get("experiment") in names and row.get("hw"):
            counts[row["hw"]] = counts.get(row["hw"], 0) + 1
    return max(counts, key=counts.get) if counts else None


# -------------------------------------------------------------------------------------------- verdicts


def _rel(path: str) -> str:
    """A run folder relative to the repository when it is inside it (tables travel between machines)."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def _result(verdict: str, detail: str, numbers: dict | None = None, runs: list | None = None) -> dict:
    assert verdict in VERDICTS, verdict
    return {"verdict": verdict, "detail": detail, "numbers": numbers or {},
            "runs": [_rel(r["path"]) for r in (runs or []) if r and r.get("path")]}


def _not_run(claim: dict, path, runs: dict | None = None) -> dict:
    planned = claim.get("experiments") or []
    est = sum(estimate_s(n, path) for n in planned)
    cut = (runs or {}).get(CUT_SHORT, {})
    short = [f"{n} ({cut[n][0].get('failure')}, {cut[n][0].get('run')})" for n in planned if n in cut]
    return _result("not run yet", f"planned: {', '.join(planned)} (about {est / 60:.1f} GPU min)"
                   + (f"; cut short by a time limit: {', '.join(short)}" if short else ""),
                   runs=[cut[n][0] for n in planned if n in cut])


def tokens_ratio(t: dict, b: dict) -> dict:
    """tokens/s of T over B (two throughput() results) with a range from their bootstrap ranges: low = T's low /
    B's high, high = T's high / B's low. Unrounded; None where a side has no tokens/s or no range."""
    out = {"ratio": None, "low": None, "high": None}
    if t["tokens_per_s"] and b["tokens_per_s"]:
        out["ratio"] = t["tokens_per_s"] / b["tokens_per_s"]
        if None not in (b["low"], b["high"], t["low"], t["high"]) and b["low"] > 0:
            out["low"], out["high"] = t["low"] / b["high"], t["high"] / b["low"]
    return out


def _speedup(base: dict, test: dict) -> dict:
    """Speed-up of TEST over BASE in %. Runs that trained the same batches are compared step by step (paired_ratio:
    time of the steps both timed); others by their tokens/s ratio (measured tokens over steady time) with the range
    from the two runs' bootstrap ranges. Also each run's tokens/s and median step time, for the reader."""
    b, t = throughput(base), throughput(test)
    out = {"base_step_s": _r(step_stats(base)["median"]), "test_step_s": _r(step_stats(test)["median"]),
           "base_tokens_per_s": _r(b["tokens_per_s"], 1), "test_tokens_per_s": _r(t["tokens_per_s"], 1),
           "base_n": b["n_intervals"], "test_n": t["n_intervals"], "paired_steps": None}
    out["other_host"] = _other_host(test, base, "the baseline's")
    q = paired_ratio(base, test)
    if q is not None:
        out["paired_steps"] = q["n_steps"]
    else:
        q = tokens_ratio(t, b)
    if q["ratio"] is None:
        return {**out, "speedup_pct": None}
    out["speedup_pct"] = _r((q["ratio"] - 1) * 100, 2)
    if q["low"] is not None:
        out["speedup_pct_low"] = _r((q["low"] - 1) * 100, 2)
        out["speedup_pct_high"] = _r((q["high"] - 1) * 100, 2)
    return out


def _other_host(test: dict, base: dict, whose: str) -> str | None:
    """'TEST's host vs WHOSE BASE's host' when both are known and differ (host-bound steps depend on it), else None."""
    ht, hb = host_of(test), host_of(base)
    return f"{ht} vs {whose} {hb}" if ht and hb and ht != hb else None


def _paired_note(nums: dict) -> str:
    n = nums.get("paired_steps")
    note = f", paired over the {n} steps both timed on the same batches" if n else ""
    if nums.get("other_host"):
        note += f"; made on another host ({nums['other_host']}): host-bound steps may differ for that alone"
    return note


def rule_memory_loss_pair(claim: dict, runs: dict, path, **_) -> dict:
    rule = claim["rule"]
    base, test = _pick(runs, rule["base"]), _pick(runs, rule["test"])
    cut_note = ""
    if base is None and test is not None:  # a base run cut short still measured its first steps' memory
        base = next((r for r in runs.get(CUT_SHORT, {}).get(rule["base"], [])
                     if (last_train_step(r) or 0) >= (last_train_step(test) or 1)), None)
        if base is not None:
            cut_note = f" ({rule['base']} {base.get('run')} was cut short afterwards: {base.get('failure')})"
    if base is None or test is None:
        failed = [r for n in (rule["base"], rule["test"]) for r in runs.get(n, [])[:1] if r.get("status") != "ok"]
        if failed:
            return _result("inconclusive", "a run failed: " + "; ".join(f"{r['experiment']}: {r['failure']}"
                                                                        for r in failed), runs=failed)
        return _not_run(claim, path, runs)
    pb, pt, at = common_peaks(base, test)
    common_eval = sorted({int(x) for x, _ in base.get("eval_loss") or []} & {int(x) for x, _ in test.get("eval_loss") or []})
    lb = eval_at(base, common_eval[-1]) if common_eval else None
    lt = eval_at(test, common_eval[-1]) if common_eval else None
    nums = {"peak_gib_" + rule["base"]: pb, "peak_gib_" + rule["test"]: pt, "peak_at_step": at,
            "eval_loss_" + rule["base"]: _r(lb), "eval_loss_" + rule["test"]: _r(lt),
            "eval_step": common_eval[-1] if common_eval else None}
    parts = []
    if pb and pt:
        saving = (pb - pt) / pb * 100
        nums["mem_saving_pct"] = _r(saving, 2)
        mem_ok = saving >= rule["min_mem_saving_pct"]
        parts.append(("memory", mem_ok, f"memory saved {saving:.2f} % ({pb} -> {pt} GiB at step {at}; claim needs "
                                        f">= {rule['min_mem_saving_pct']} %)"))
    if not common_eval:
        parts.append(("loss", None, "no eval step in common: loss part not compared"))
    if lb is not None and lt is not None:
        nums["loss_increase"] = _r(lt - lb)
        if _dummy(base, test):
            parts.append(("loss", None, f"loss increase {lt - lb:+.4f} on dummy weights: says nothing about quality"))
        else:
            parts.append(("loss", lt - lb <= rule["max_loss_increase"],
                          f"loss increase {lt - lb:+.4f} (claim allows <= {rule['max_loss_increase']})"))
    detail = ("; ".join(p[2] for p in parts) or "no peak memory / eval loss in the logs") + cut_note
    if any(p[1] is False for p in parts):
        return _result("does not hold", detail, nums, [base, test])
    if parts and all(p[1] is True for p in parts) and len(parts) == 2:
        return _result("holds", detail, nums, [base, test])
    return _result("cannot be tested here", detail, nums, [base, test])


def rule_speedup(claim: dict, runs: dict, path, **_) -> dict:
    """TEST over BASE, and over each of the rule's `repeats` (the same comparison made another way)."""
    rule = claim["rule"]
    need = rule["min_speedup_pct"]
    pairs = [rule] + list(rule.get("repeats") or [])
    parts, used, measured = [], [], []
    numbers: dict[str, Any] = {}
    for i, pair in enumerate(pairs):
        base, test_rows = _pick(runs, pair["base"]), runs.get(pair["test"], [])
        if base is None or not test_rows:
            continue
        test = _pick(runs, pair["test"])
        if test is None:
            bad = test_rows[0]
            return _result("does not hold", f"{pair['test']} did not train (not safe): {bad.get('failure')}",
                           runs=[base, bad])
        nums = _speedup(base, test)
        lo, hi = nums.get("speedup_pct_low"), nums.get("speedup_pct_high")
        how = f" ({pair['how']})" if pair.get("how") else ""
        parts.append(f"{pair['test']} vs {pair['base']}{how}: speed-up {nums['speedup_pct']} % (95 % range {lo} .. "
                     f"{hi} %{_paired_note(nums)}; step {nums['base_step_s']} s -> {nums['test_step_s']} s)")
        numbers.update(nums if i == 0 else {f"{k}_{pair['test']}": v for k, v in nums.items()})
        used += [base, test]
        measured.append((lo, hi))
    if not measured:
        return _not_run(claim, path, runs)
    missing = [p["test"] for p in pairs if p["test"] not in runs]
    detail = ("; ".join(parts) + f"; claim: >= {need} %; measured on this GPU only"
              + (f"; not run yet: {', '.join(missing)}" if missing else ""))
    if all(lo is not None and lo >= need for lo, _ in measured):
        return _result("holds", detail, numbers, used)
    if all(hi is not None and hi < need for _, hi in measured):
        return _result("does not hold", detail, numbers, used)
    return _result("inconclusive", detail, numbers, used)


def rule_tradeoff(claim: dict, runs: dict, path, **_) -> dict:
    rule = claim["rule"]
    on = _pick(runs, rule["with_flag"])
    off = _pick(runs, rule["without_flag"], allow_oom=True)
    nums: dict[str, Any] = {}
    note = ""
    if swift_version():
        try:
            d = flag_report(rule["flag"])
            nums["default_" + rule["flag"]] = d.get("default")
            if d.get("default") is True:
                note = (f"; --{rule['flag']} already defaults to true in ms-swift {d['swift_version']}, so the "
                        "advice changes nothing")
        except ImportError:
            pass
    if on is None or off is None:
        res = _not_run(claim, path, runs)
        res["detail"] += note
        res["numbers"] = nums
        return res
    nums.update({"peak_gib_on": on.get("peak_mem_gib"), "step_s_on": _r(step_stats(on)["median"])})
    if is_oom(off):
        return _result("holds", f"with it off the run OOMed ({off.get('failure')}); on: {on.get('peak_mem_gib')} GiB"
                       + note, nums, [on, off])
    p_off, p_on, at = common_peaks(off, on)
    nums.update({"peak_gib_off": p_off, "peak_gib_on": p_on, "peak_at_step": at,
                 "step_s_off": _r(step_stats(off)["median"])})
    sp = _speedup(on, off)  # how much faster OFF is than ON: the speed GC costs
    if p_on and p_off:
        saved = (p_off - p_on) / p_off * 100
        nums["mem_saved_pct"] = _r(saved, 2)
        nums["speed_lost_pct"] = (_r((1 - 1 / (1 + sp["speedup_pct"] / 100)) * 100, 2)
                                  if sp.get("speedup_pct") is not None else None)
        nums["tokens_per_s_on"], nums["tokens_per_s_off"] = sp.get("base_tokens_per_s"), sp.get("test_tokens_per_s")
        detail = (f"GC on saves {saved:.1f} % of peak memory ({p_off} -> {p_on} GiB over the same {at} steps) and "
                  f"costs {nums['speed_lost_pct']} % of the tokens/s ({nums['tokens_per_s_off']} off, "
                  f"{nums['tokens_per_s_on']} on; step {nums['step_s_off']} s off, {nums['step_s_on']} s on)" + note)
        return _result("holds" if saved > 0 else "does not hold", detail, nums, [on, off])
    return _result("inconclusive", "no peak memory in the logs" + note, nums, [on, off])


def search_result(name: str, runs: dict, path=CLAIMS_FILE) -> dict:
    """Probes of one capacity search: largest batch that trained, smallest above it that OOMed."""
    s = search(name, path)
    ok, oom, other = {}, {}, {}
    for b in s["ladder"]:
        rows = runs.get(probe_name(name, b), [])
        row = next((r for r in rows if r.get("status") == "ok" or is_oom(r)), rows[0] if rows else None)
        if row is None:
            continue
        (ok if row.get("status") == "ok" else oom if is_oom(row) else other)[b] = row
    largest_ok = max(ok) if ok else None
    above = [b for b in oom if largest_ok is None or b > largest_ok]
    first_oom = min(above) if above else None
    ladder = s["ladder"]
    bracketed = (largest_ok is not None and first_oom is not None
                 and ladder.index(first_oom) == ladder.index(largest_ok) + 1)
    if largest_ok is None and first_oom == ladder[0]:
        bracketed = True
    if largest_ok == ladder[-1]:
        bracketed = True
    return {"search": name, "cap_gib": s["launcher"].get("mem_cap_gib"), "largest_ok": largest_ok,
            "first_oom": first_oom, "bracketed": bracketed,
            "peak_gib_at_largest": ok[largest_ok].get("peak_mem_gib") if largest_ok else None,
            "runs": [r for r in (ok.get(largest_ok), oom.get(first_oom)) if r],
            "failed_other": {b: r.get("failure") for b, r in other.items()}}


def next_probe(name: str, outcomes: dict[int, str], path=CLAIMS_FILE) -> int | None:
    """The next batch to probe given {batch: 'ok' | 'oom'}; None when the search is done."""
    s = search(name, path)
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


def _capacity_lines(results: list[dict]) -> str:
    parts = []
    for r in results:
        if r["largest_ok"] is None and r["first_oom"] is None:
            parts.append(f"{r['cap_gib']} GiB: not run")
            continue
        s = f"{r['cap_gib']} GiB: "
        s += f"bs {r['largest_ok']} trains ({r['peak_gib_at_largest']} GiB)" if r["largest_ok"] else "nothing trains"
        s += f", bs {r['first_oom']} OOMs" if r["first_oom"] else ", nothing OOMed yet"
        if not r["bracketed"]:
            s += " (search not finished)"
        parts.append(s)
    return "; ".join(parts)


def rule_capacity(claim: dict, runs: dict, path, **_) -> dict:
    rule = claim["rule"]
    results = [search_result(n, runs, path) for n in rule["searches"]]
    nums = {f"max_bs_{r['search']}": r["largest_ok"] for r in results}
    nums.update({f"oom_bs_{r['search']}": r["first_oom"] for r in results})
    used = [row for r in results for row in r["runs"]]
    enough = next(r for r in results if r["search"] == rule["enough_cap"])
    detail = _capacity_lines(results) + " (longest samples first; max sample length of the offline data)"
    if enough["largest_ok"] is not None and enough["largest_ok"] >= rule["enough_batch"]:
        return _result("holds", detail, nums, used)
    if enough["first_oom"] is not None and enough["first_oom"] <= rule["enough_batch"]:
        return _result("does not hold", detail, nums, used)
    return _not_run(claim, path, runs) if not used else _result("inconclusive", detail, nums, used)


def rule_capacity_explains_batch(claim: dict, runs: dict, path, **_) -> dict:
    results = [search_result(n, runs, path) for n in claim["rule"]["searches"]]
    done = [r for r in results if r["bracketed"] and r["largest_ok"] is not None]
    used = [row for r in results for row in r["runs"]]
    nums = {f"max_bs_{r['search']}": r["largest_ok"] for r in results}
    if len(done) < 2:
        return _not_run(claim, path, runs) if not used else _result("inconclusive", _capacity_lines(results), nums, used)
    done.sort(key=lambda r: r["cap_gib"])
    grows = all(b["largest_ok"] > a["largest_ok"] for a, b in zip(done, done[1:]))
    detail = (_capacity_lines(results) + ": same GPU and memory controller, only the allocator cap differs; "
              + ("the largest batch grows with capacity alone" if grows else "the largest batch does not grow"))
    return _result("does not hold" if grows else "inconclusive", detail, nums, used)


def rule_min_memory(claim: dict, runs: dict, path, **_) -> dict:
    rule = claim["rule"]
    results = [search_result(n, runs, path) for n in rule["searches"]]
    below = [r for r in results if r["cap_gib"] < rule["claimed_min_gib"]]
    trained = [r for r in below if r["largest_ok"]]
    nums = {f"max_bs_{r['search']}": r["largest_ok"] for r in results}
    used = [row for r in results for row in r["runs"]]
    if trained:
        r = min(trained, key=lambda r: r["cap_gib"])
        others = [f"{o['search']}: {_capacity_lines([o])}" for o in below if o is not r and o["largest_ok"]]
        return _result("does not hold", f"bf16 LoRA of the 7B shape trained bs {r['largest_ok']} under a "
                       f"{r['cap_gib']} GiB cap ({r['peak_gib_at_largest']} GiB peak), below the claimed "
                       f"{rule['claimed_min_gib']} GB" + "".join("; " + o for o in others), nums, used)
    if below and all(r["first_oom"] == 1 for r in below):
        return _result("holds", "every probe below the claimed minimum OOMed at bs 1", nums, used)
    return _not_run(claim, path, runs) if not used else _result("inconclusive", _capacity_lines(results), nums, used)


def rule_flags(claim: dict, runs: dict, path, **_) -> dict:
    rule = claim["rule"]
    if swift_version() is None:
        return _result("cannot be tested here", "ms-swift is not installed where this table was made")
    reports = [flag_report(f, v) for f, v in rule["flags"].items()]
    related = [flag_report(f) for f in rule.get("related", [])]
    nums = {r["flag"]: ("exists" if r["exists"] else "does not exist") for r in reports + related}
    detail = "; ".join(r["text"] + (f" ({r['parser']})" if r.get("parser") else "") for r in reports)
    if related:
        detail += "; related: " + "; ".join(r["text"] for r in related)
    missing = [r for r in reports if not r["exists"] or r.get("parser_accepts") is False]
    if missing:
        return _result("does not hold", detail + " - the advice cannot be followed with this ms-swift", nums)
    return _result("inconclusive", detail + " - the flags exist; their effect needs runs", nums)


def _published_loss_spread(seeds_dir: str | Path | None, figure_ids: list[str]) -> dict:
    from analysis.seeds import published_figures

    frame = published_figures(seeds_dir) if seeds_dir else published_figures()
    texts = {row.id: str(row.text) for row in frame.itertuples() if row.id in figure_ids}
    digits = {k: v for k, v in texts.items() if v.isdigit()}
    if len(digits) < 2:
        return {"published_spread": None, "texts": texts}
    vals = {k: int(v) / 10 ** len(v) for k, v in digits.items()}
    return {"published_spread": round(max(vals.values()) - min(vals.values()), 6), "texts": texts,
            "note": "from the legible fractional digits; equal only if the lost integer parts are equal"}


def rule_seed_spread(claim: dict, runs: dict, path, seeds_dir=None, **_) -> dict:
    rows = [_pick(runs, n) for n in claim["rule"]["runs"]]
    pub = _published_loss_spread(seeds_dir, claim["source"].get("figures") or [])
    nums: dict[str, Any] = {"published_spread": pub["published_spread"]}
    have = [r for r in rows if r and r.get("final_eval_loss") is not None]
    common = sorted(set.intersection(*[{int(x) for x, _ in r["eval_loss"]} for r in have])) if have else []
    if len(have) < 2 or not common:
        res = _not_run(claim, path, runs) if not have else _result("inconclusive", "fewer than 2 seeds finished", nums, have)
        res["numbers"] = nums
        return res
    step = common[-1]
    losses = [eval_at(r, step) for r in have]
    band = {st: seed_band(runs, claim["rule"]["runs"], st) for st in common}
    nums.update({"eval_step": step, "seed_losses": [_r(x) for x in losses], "seed_range": _r(max(losses) - min(losses)),
                 "seed_sd": _r(statistics.stdev(losses)) if len(losses) > 1 else None, "n_seeds": len(losses),
                 "seed_range_by_step": {st: _r(b["range"]) for st, b in band.items() if b}})
    detail = (f"seed-to-seed range {nums['seed_range']} over {len(losses)} seeds at step {step} (eval loss "
              f"{nums['seed_losses']}; range by step {nums['seed_range_by_step']}); "
              f"published spread {pub['published_spread']} ({pub.get('note', '')})")
    if _dummy(*have):
        return _result("cannot be tested here", detail + "; dummy weights: the loss scale is not the article's",
                       nums, have)
    if pub["published_spread"] is None:
        return _result("cannot be tested here", detail + "; the published losses are illegible", nums, have)
    verdict = "holds" if pub["published_spread"] > nums["seed_range"] else "does not hold"
    return _result(verdict, detail, nums, have)


def _shipped_version(package: str) -> str | None:
    """The version of PACKAGE pinned in the GPU wheelhouse's requirements, if any."""
    import re

    try:
        text = (ROOT / "experiments" / "requirements-gpu.txt").read_text(encoding="utf-8")
    except OSError:
        return None
    m = re.search(rf"^{re.escape(package)}==(\S+)", text, flags=re.M)
    return m.group(1) if m else None


def rule_fits(claim: dict, runs: dict, path, **_) -> dict:
    rule = claim["rule"]
    rows = runs.get(rule["run"], [])
    row = _pick(runs, rule["run"], allow_oom=True)
    pkg = package_report(rule["package"], claim.get("package_check"))
    nums = {"package_importable_here": pkg["importable_here"], "pypi": pkg.get("pypi")}
    if row is None:
        if rows and rows[0].get("failure"):
            return _result("inconclusive", f"{rule['run']} failed: {rows[0]['failure']}", nums, rows[:1])
        shipped = _shipped_version(rule["package"])
        if shipped:
            res = _not_run(claim, path, runs)
            res["detail"] += (f"; {rule['package']} {shipped} is in the GPU wheelhouse (experiments/requirements-gpu.txt,"
                              " slimmed to the host's CUDA 13.0 library), so the run is possible")
            res["numbers"] = {**nums, "shipped": shipped}
            return res
        p = pkg.get("pypi") or {}
        return _result("cannot be tested here",
                       f"needs {rule['package']}, which the GPU host does not have; PyPI has {p.get('file')} "
                       f"({p.get('size_mb')} MB, kernels {', '.join(p.get('kernels') or [])}): {pkg.get('note')}",
                       nums)
    extra, used = [], [row]
    for alt in rule.get("alternatives") or []:  # the same shape another way: {run, how}
        a = _pick(runs, alt["run"], allow_oom=True)
        if a is None:
            extra.append(f"{alt['run']}: not run yet")
            continue
        used.append(a)
        nums[f"{alt['run']}_trained"] = not is_oom(a)
        extra.append(f"{alt['run']} ({alt['how']}) "
                     + ("OOMed" if is_oom(a) else f"trained, peak {a.get('peak_mem_gib')} GiB"))
    for name in rule.get("searches") or []:
        r = search_result(name, runs, path)
        nums[f"max_bs_{name}"], nums[f"oom_bs_{name}"] = r["largest_ok"], r["first_oom"]
        used += r["runs"]
        extra.append(f"{name}: " + _capacity_lines([r]))
    tail = ("; " + "; ".join(extra)) if extra else ""
    if is_oom(row):
        return _result("does not hold", f"{rule['run']} OOMed at ms-swift's defaults: {row.get('failure')}{tail}",
                       nums, used)
    return _result("holds", f"{rule['run']} trained, peak {row.get('peak_mem_gib')} GiB{tail}",
                   {**nums, "peak_gib": row.get("peak_mem_gib")}, used)


def rule_bound(claim: dict, runs: dict, path, **_) -> dict:
    rule = claim["rule"]
    row, cut = _profiled(runs, rule["run"])
    if row is None:
        return _not_run(claim, path, runs)
    note = (f" (from the profiled steps of {rule['run']} {row.get('run')}, which was then cut short: "
            f"{row.get('failure')})") if cut else ""
    frac = busy_fraction(row)
    prof = _profile(row["path"]) or {}
    nums = {"gpu_busy_frac": _r(frac, 3), "profiled_steps": [s.get("step") for s in prof.get("steps", [])],
            "step_wall_s": [s.get("wall_s") for s in prof.get("steps", [])]}
    if frac is None:
        return _result("cannot be tested here",
                       f"no GPU busy time in {PROFILE_FILE} ({prof.get('device', 'no profile')})",
                       nums, [row])
    kind = "host" if frac < rule["host_below"] else "gpu" if frac >= rule["gpu_from"] else "mixed"
    nums["bound"] = kind
    detail = (f"GPU busy {frac:.1%} of each step's wall time: {kind}-bound" if kind != "mixed" else
              f"GPU busy {frac:.1%} of each step's wall time: mixed") + note
    top = [op for st in prof.get("steps", []) for op in st.get("top_gpu_ops", [])[:1]]
    if top:
        nums["top_gpu_op"] = top[0]
    return _result("holds" if kind == rule["expect"] else "does not hold", detail, nums, [row])


def rule_supported(claim: dict, runs: dict, path, **_) -> dict:
    rule = claim["rule"]
    if swift_version() is None:
        return _result("cannot be tested here", "ms-swift is not installed where this table was made")
    rep = padding_free_report(rule["flags"], rule.get("attn_impl", "sdpa"))
    blocked = [f for f in rule["flags"] if not rep[f]["allowed"]]
    nums = {f: ("allowed" if rep[f]["allowed"] else "refused") for f in rule["flags"]}
    nums["flash_attn_importable"] = rep["flash_attn_importable"]
    if blocked and not rep["flash_attn_importable"]:
        msg = rep[blocked[0]]["message"]
        return _result("cannot be tested here",
                       f"ms-swift {rep['swift_version']} refuses {', '.join('--' + f for f in blocked)} with "
                       f"--attn_impl {rep['attn_impl']} ({msg}); flash-attn is not installed (nor on the GPU host)",
                       nums)
    return _result("not run yet", "allowed here: " + ", ".join(f for f in rule["flags"] if rep[f]["allowed"]), nums)


def seed_band(runs: dict, names: list[str], step: int) -> dict | None:
    """Mean and range (max - min) of the seeds' eval loss at STEP; None with fewer than 2 seeds there."""
    rows = [_pick(runs, n) for n in names]
    losses = [v for v in (eval_at(r, step) for r in rows if r) if v is not None]
    if len(losses) < 2:
        return None
    return {"mean": statistics.fmean(losses), "range": max(losses) - min(losses), "n": len(losses), "step": step}


def loss_check(row: dict, spread: list[str], runs: dict) -> dict:
    """Does ROW's eval loss at its last eval step stay within the seed band at that step?"""
    step = last_eval_step(row)
    band = seed_band(runs, spread, step) if step else None
    out: dict[str, Any] = {"eval_step": step, "eval_loss": _r(eval_at(row, step)) if step else None, "counts": None}
    if band and out["eval_loss"] is not None:
        dev = abs(eval_at(row, step) - band["mean"])
        out.update(counts=dev <= band["range"], loss_dev_from_seed_mean=_r(dev), seed_range=_r(band["range"]),
                   seed_mean=_r(band["mean"]), seeds_at_step=band["n"])
    return out


def recipe_outcome(name: str, baseline: str, spread: list[str], runs: dict, expect: str = "faster") -> dict:
    """Speed-up of a throughput recipe over the baseline and whether its eval loss counts."""
    row = _pick(runs, name, allow_oom=True)
    base = _pick(runs, baseline)
    out: dict[str, Any] = {"row": row, "base": base}
    if row is None or base is None:
        out["state"] = "missing"
        return out
    if row.get("status") != "ok":
        out.update(state="failed", failure=row.get("failure"))
        return out
    nums = _speedup(base, row)
    lc = loss_check(row, spread, runs)
    nums.update({"peak_gib": row.get("peak_mem_gib"), "gpu_busy_frac": _r(busy_fraction(row), 3),
                 **{k: v for k, v in lc.items() if k != "counts"}})
    lo, hi = nums.get("speedup_pct_low"), nums.get("speedup_pct_high")
    if expect == "slower":
        lo, hi = (None if hi is None else -hi), (None if lo is None else -lo)
    better = True if (lo is not None and lo > 0) else False if (hi is not None and hi < 0) else None
    out.update(state="ok", counts=lc["counts"], better=better, numbers=nums)
    return out


def rule_recipe(claim: dict, runs: dict, path, **_) -> dict:
    rule = claim["rule"]
    o = recipe_outcome(rule["run"], rule["baseline"], rule["spread"], runs, rule.get("expect", "faster"))
    if o["state"] == "missing":
        return _not_run(claim, path, runs)
    if o["state"] == "failed":
        return _result("does not hold", f"{rule['run']} failed: {o['failure']}", runs=[o["row"], o["base"]])
    n = o["numbers"]
    word = "slower" if rule.get("expect") == "slower" else "faster"
    detail = (f"tokens/s {n['base_tokens_per_s']} -> {n['test_tokens_per_s']}: speed-up {n['speedup_pct']} % (95 % "
              f"range {n.get('speedup_pct_low')} .. {n.get('speedup_pct_high')} %{_paired_note(n)}; median step "
              f"{n['base_step_s']} -> "
              f"{n['test_step_s']} s), peak {n['peak_gib']} GiB, eval loss {n['eval_loss']} at step {n['eval_step']}")
    if o["counts"] is None:
        detail += "; no seed band at that step (needs 2+ seeds evaluated there)"
    else:
        detail += (f", {'within' if o['counts'] else 'OUTSIDE'} the seed band (|dev| {n['loss_dev_from_seed_mean']} "
                   f"vs range {n['seed_range']})")
    if o["row"] is not None and rule["run"] == "tp-combo":
        detail += f"; combination: {((o['row'].get('run_status') or {}).get('key') or {}).get('overrides')}"
    used = [o["row"], o["base"]]
    if o["counts"] is False or o["better"] is False:
        return _result("does not hold", detail + f": not {word} and counting", n, used)
    if o["counts"] and o["better"]:
        return _result("holds", detail, n, used)
    return _result("inconclusive", detail, n, used)


def seed_baseline(names: list[str], runs: dict, rows: list[dict], hw: str | None = None) -> dict | None:
    """The seed recipe's run to hold a speed-up against: the first of NAMES that has one. A recipes.yaml experiment
    (the matrix's `seed`) means its longest complete run among ROWS for HW; a claims experiment its run."""
    for name in names:
        if name in load()["experiments"]:
            row = _pick(runs, name)
        else:
            done = [r for r in rows if r.get("experiment") == name and r.get("status") == "ok"
                    and (hw is None or r.get("hw") == hw) and (r.get("global_steps") or 0) > 0]
            row = max(done, key=lambda r: (r.get("global_steps") or 0, r.get("run") or "")) if done else None
        if row is not None:
            return row
    return None


def _ratio(test: dict, base: dict) -> dict:
    t, b = throughput(test), throughput(base)
    out = {"tokens_per_s": _r(t["tokens_per_s"], 1), "seed_tokens_per_s": _r(b["tokens_per_s"], 1),
           "tokens_source": t["source"], "seed_tokens_source": b["source"]}
    q = tokens_ratio(t, b)
    if q["ratio"] is not None:
        out["ratio"] = _r(q["ratio"], 2)
        if q["low"] is not None:
            out["ratio_low"], out["ratio_high"] = _r(q["low"], 2), _r(q["high"], 2)
    return out


def rule_target_speedup(claim: dict, runs: dict, path, rows=(), hw=None, **_) -> dict:
    rule = claim["rule"]
    row = _pick(runs, rule["run"], allow_oom=True)
    seed = seed_baseline(rule["seed_runs"], runs, rows, hw)
    if row is None or seed is None:
        return _not_run(claim, path, runs)
    if row.get("status") != "ok":
        return _result("does not hold", f"{rule['run']} failed: {row.get('failure')}", runs=[row, seed])
    nums = _ratio(row, seed)
    lc = loss_check(row, rule["spread"], runs)
    nums.update({k: v for k, v in lc.items() if k != "counts"}, peak_gib=row.get("peak_mem_gib"),
                combination=((row.get("run_status") or {}).get("key") or {}).get("overrides"))
    need = rule["factor"]
    detail = (f"{nums.get('tokens_per_s')} tokens/s vs the seed recipe's {nums.get('seed_tokens_per_s')} "
              f"({seed.get('experiment')}, {seed.get('run')}): {nums.get('ratio')}x (95 % range "
              f"{nums.get('ratio_low')} .. {nums.get('ratio_high')}x; bar {need}x); eval loss {lc['eval_loss']} at step "
              f"{lc['eval_step']}" + ("" if lc["counts"] is None else
                                      f", {'within' if lc['counts'] else 'OUTSIDE'} the seed band (|dev| "
                                      f"{lc.get('loss_dev_from_seed_mean')} vs range {lc.get('seed_range')})")
              + f"; recipe: {nums['combination']}")
    elsewhere = _other_host(row, seed, "the seed run's")
    if elsewhere:
        nums["other_host"] = elsewhere
        detail += f"; made on another host than the seed run ({elsewhere})"
    for name in rule.get("also_against") or []:  # the seed recipe again, where the recipe ran (context, no verdict)
        other = _pick(runs, name)
        if other is None:
            continue
        q = _ratio(row, other)
        nums[f"ratio_vs_{name}"] = q.get("ratio")
        nums[f"ratio_vs_{name}_low"], nums[f"ratio_vs_{name}_high"] = q.get("ratio_low"), q.get("ratio_high")
        ho = host_of(other)
        where = "the same host" if ho == host_of(row) else f"host {ho}"
        detail += (f"; against {name} ({where}, {q.get('seed_tokens_per_s')} tokens/s): {q.get('ratio')}x (95 % range "
                   f"{q.get('ratio_low')} .. {q.get('ratio_high')}x)")
    lo, hi = nums.get("ratio_low"), nums.get("ratio_high")
    if lc["counts"] is False or (hi is not None and hi < need):
        return _result("does not hold", detail, nums, [row, seed])
    if lc["counts"] and lo is not None and lo >= need:
        return _result("holds", detail, nums, [row, seed])
    return _result("inconclusive", detail, nums, [row, seed])


def rule_class_best(claim: dict, runs: dict, path, rows=(), hw=None, **_) -> dict:
    rule = claim["rule"]
    tried, winner = [], None
    for name in rule["candidates"]:
        row = _pick(runs, name, allow_oom=True) or next(iter(runs.get(name, [])), None)
        if row is None:
            continue
        cap = ((row.get("run_status") or {}).get("key") or {}).get("launcher", {}).get("mem_cap_gib")
        if row.get("status") == "ok" and cap is None:
            peak = row.get("peak_mem_gib")
            if peak is None or peak > rule["cap_gib"]:  # uncapped and above the class's memory: says nothing
                tried.append((name, {**row, "status": "over", "failure": f"uncapped peak {peak} GiB > cap"}))
                continue
        tried.append((name, row))
        if row.get("status") == "ok":
            winner = (name, row)
            break
    if not tried:
        return _not_run(claim, path, runs)
    seed = seed_baseline(rule["seed_runs"], runs, rows, hw)
    failed = "; ".join(f"{n} " + ("OOMed" if is_oom(r) else r["failure"] if r.get("status") == "over"
                                  else "failed: " + str(r.get("failure")))
                       for n, r in tried if r.get("status") != "ok")
    if winner is None:
        return _result("does not hold", f"no candidate trained under {rule['cap_gib']} GiB: {failed}",
                       runs=[r for _, r in tried])
    name, row = winner
    nums = {"recipe": name, "cap_gib": rule["cap_gib"], "peak_gib": row.get("peak_mem_gib"),
            "overrides": ((row.get("run_status") or {}).get("key") or {}).get("overrides")}
    if seed is not None:
        nums.update(_ratio(row, seed))
    lc = loss_check(row, rule["spread"], runs)
    nums.update({k: v for k, v in lc.items() if k != "counts"})
    capped = ((row.get("run_status") or {}).get("key") or {}).get("launcher", {}).get("mem_cap_gib")
    how = f"under a {capped:g} GiB allocator cap" if capped else f"uncapped, peak below {rule['cap_gib']} GiB"
    detail = (f"{name} trains ({how}; peak {row.get('peak_mem_gib')} GiB): "
              f"{nums.get('tokens_per_s')} tokens/s = {nums.get('ratio')}x the seed recipe (95 % range "
              f"{nums.get('ratio_low')} .. {nums.get('ratio_high')}x); eval loss {lc['eval_loss']} at step "
              f"{lc['eval_step']}" + ("" if lc["counts"] is None else
                                      f", {'within' if lc['counts'] else 'OUTSIDE'} the seed band")
              + (f"; before it: {failed}" if failed else ""))
    used = [r for _, r in tried if r.get("path")] + ([seed] if seed else [])
    if lc["counts"] is False:
        return _result("does not hold", detail, nums, used)
    return _result("holds" if lc["counts"] else "inconclusive", detail, nums, used)


RULES = {
    "memory_loss_pair": rule_memory_loss_pair, "speedup": rule_speedup, "tradeoff": rule_tradeoff,
    "capacity": rule_capacity, "capacity_explains_batch": rule_capacity_explains_batch, "min_memory": rule_min_memory,
    "flags": rule_flags, "seed_spread": rule_seed_spread, "fits": rule_fits, "bound": rule_bound,
    "supported": rule_supported, "recipe": rule_recipe, "target_speedup": rule_target_speedup,
    "class_best": rule_class_best,
}


# Launcher options that say how long a run goes and what is measured, not how it trains.
SCHEDULE_LAUNCHER_KEYS = frozenset({"stop_after", "profile_steps", "profile_skip"})


def resolve_combo(name: str, results_dir: str | Path, hw: str | None = None, path: str | Path = CLAIMS_FILE) -> dict:
    """Overrides and launcher options of a `combine` experiment from the results:
    {'overrides': {...}, 'launcher': {...}, 'used': [...], 'reason': str}."""
    e = experiment(name, path)
    data = load(path)
    runs = runs_by_experiment(results_dir, path, hw)
    rules = {c["rule"].get("run"): c["rule"] for c in data["claims"] if c["rule"]["kind"] == "recipe"}
    winners, missing = [], []
    for member in e["combine"]:
        rule = rules.get(member)
        if rule is None:
            continue
        o = recipe_outcome(member, rule["baseline"], rule["spread"], runs)
        if o["state"] == "missing":
            missing.append(member)
        elif o["state"] == "ok" and o["counts"] and o["better"]:
            winners.append((o["numbers"]["speedup_pct"], member))
    if missing and not winners:
        return {"overrides": None, "used": [], "reason": f"run these first: {', '.join(missing)}"}
    if not winners:
        return {"overrides": None, "used": [], "reason": "no recipe in `combine` was faster and counted"}
    ordered = [m for _, m in sorted(winners, reverse=True)]  # fastest first: on a conflicting flag it wins
    overrides: dict = {}
    launcher: dict = {}
    for member in ordered:
        m = experiment(member, path)
        for k, v in (m["overrides"] or {}).items():
            overrides.setdefault(k, v)
        # a member's launcher options that change the training itself (--sdpa-padding-free) travel with its
        # overrides; how long to run and what to profile stay the combination's own
        for k, v in (m.get("launcher") or {}).items():
            if k not in SCHEDULE_LAUNCHER_KEYS:
                launcher.setdefault(k, v)
    overrides = {**(e.get("overrides") or {}), **overrides}
    launcher = {**launcher, **(e.get("launcher") or {})}
    return {"overrides": overrides, "launcher": launcher, "used": ordered,
            "reason": f"combined {', '.join(ordered)}"
                      + (f" (not run yet: {', '.join(missing)})" if missing else "")}


RECIPE_RUNS = ("spread-s42", "tp-best", "tp-pf", "tp-gbl", "tp-nogc", "tp-liger", "tp-eager", "tp-bs8", "tp-bs4",
               "tp-bs2", "tp-combo", "best24-a", "best24-b")


def recipes_frame(results_dir, hw: str | None = None, path: str | Path = CLAIMS_FILE,
                  rows: list[dict] | None = None):
    """One row per throughput recipe that has a run: measured tokens/s with its 95 % range, the multiple of the seed
    recipe's tokens/s, peak memory, the eval loss at its last eval step and whether it stays in the seed band."""
    import pandas as pd

    rows = collected(results_dir, rows)
    hw = hw or _hw_choice(rows, path)
    runs = runs_by_experiment(results_dir, path, hw, rows)
    seed = seed_baseline(["seed", "workers4"], runs, rows, hw)
    seed_tps = throughput(seed)["tokens_per_s"] if seed else None
    spread = ["spread-s42", "spread-s43", "spread-s44"]
    base = _pick(runs, "spread-s42")
    base_host = host_of(base) if base else None
    table = []
    for name in RECIPE_RUNS:
        row = _pick(runs, name)
        if row is None:
            continue
        t = throughput(row)
        lc = loss_check(row, spread, runs)
        key = (row.get("run_status") or {}).get("key") or {}
        flags = {k: v for k, v in (key.get("overrides") or {}).items() if k not in ("logging_steps", "eval_steps",
                                                                                    "seed")}
        cap = (key.get("launcher") or {}).get("mem_cap_gib")
        label = {"spread-s42": "spread-s42 (bs16 baseline)"}.get(name, name) + (f" ({cap:g} GiB cap)" if cap else "")
        host = host_of(row)
        if base_host and host and host != base_host:  # host-bound steps: another host is part of the result
            label += " (other host)"
        table.append({"recipe": name, "label": label, "flags": ", ".join(f"{k}={v}" for k, v in flags.items()) or "(bs16 baseline)",
                     "cap_gib": (key.get("launcher") or {}).get("mem_cap_gib"),
                     "tokens_per_s": _r(t["tokens_per_s"], 1), "low": _r(t["low"], 1), "high": _r(t["high"], 1),
                     "x_seed": _r(t["tokens_per_s"] / seed_tps, 2) if seed_tps and t["tokens_per_s"] else None,
                     "steady_steps": t.get("steady_steps"), "tokens_source": t["source"],
                     "peak_gib": row.get("peak_mem_gib"), "eval_step": lc["eval_step"], "eval_loss": lc["eval_loss"],
                     "loss_counts": lc["counts"], "gpu_busy_frac": _r(busy_fraction(row), 3),
                     "host": host, "labels": "; ".join(row.get("labels") or []), "run": _rel(row["path"])})
    df = pd.DataFrame(table)
    df.attrs["seed_tokens_per_s"] = seed_tps
    df.attrs["seed_run"] = _rel(seed["path"]) if seed else None
    df.attrs["seed_host"] = host_of(seed) if seed else None
    return df


def time_breakdown(results_dir, hw: str | None = None, path: str | Path = CLAIMS_FILE,
                   rows: list[dict] | None = None):
    """Where a step's time goes, from the profiled steps: wall time, GPU busy time (the union of kernels and copies),
    their ratio, and the operator with the most GPU time. Runs cut short after profiling are included (marked)."""
    import pandas as pd

    rows = collected(results_dir, rows)
    hw = hw or _hw_choice(rows, path)
    runs = runs_by_experiment(results_dir, path, hw, rows)
    table = []
    for name in ("workers4", "spread-s42", "tp-best", "tp-combo"):
        row, cut = _profiled(runs, name)
        if row is None:
            continue
        for st in (_profile(row["path"]) or {}).get("steps", []):
            if st.get("gpu_busy_s") is None:
                continue
            ops = st.get("top_gpu_ops") or []
            table.append({"run": name, "step": st["step"], "wall_s": st.get("wall_s"), "gpu_busy_s": st["gpu_busy_s"],
                         "gpu_busy_frac": st.get("gpu_busy_frac"), "host_s": _r(st["wall_s"] - st["gpu_busy_s"], 4),
                         "median_unprofiled_step_s": _r(step_stats(row)["median"], 4),
                         "top_op": f"{ops[0]['op']} {ops[0]['gpu_ms']:.0f} ms" if ops else None,
                         "note": f"run cut short afterwards ({row.get('failure')})" if cut else "",
                         "path": _rel(row["path"])})
    return pd.DataFrame(table)


def capacity_frame(results_dir, hw: str | None = None, path: str | Path = CLAIMS_FILE,
                   rows: list[dict] | None = None):
    """Every capacity probe: cap, per-device batch, trained or OOM, peak reserved memory."""
    import pandas as pd

    rows = collected(results_dir, rows)
    hw = hw or _hw_choice(rows, path)
    runs = runs_by_experiment(results_dir, path, hw, rows)
    table = []
    for name, srch in load(path)["searches"].items():
        cap = srch["launcher"]["mem_cap_gib"]
        # one row of the figure per search: the cap, and what else differs from the seed recipe's shape
        what = [f"{cap:g} GiB cap"]
        if srch["overrides"].get("quant_bits") == 4:
            what.append("QLoRA 4-bit")
        if srch["launcher"].get("pad_to"):
            what.append(f"rows padded to {srch['launcher']['pad_to']}")
        for b in srch["ladder"]:
            row = _pick(runs, probe_name(name, b), allow_oom=True)
            if row is None:
                continue
            table.append({"search": name, "setting": ", ".join(what), "cap_gib": cap, "batch": b,
                          "outcome": "trained" if row.get("status") == "ok" else "OOM",
                          "peak_gib": row.get("peak_mem_gib"), "path": _rel(row["path"])})
    return pd.DataFrame(table)


def _source(claim: dict) -> str:
    s = claim["source"]
    out = f"{s['file']}#{s['claim']}"
    if s.get("also"):
        out += " + " + ", ".join(s["also"])
    return out


def claims_table(results_dir: str | Path | None, seeds_dir: str | Path | None = None, hw: str | None = None,
                 path: str | Path = CLAIMS_FILE, rows: list[dict] | None = None):
    """One row per claim / throughput recipe: id, claim, source, verdict, detail, numbers, runs, experiments, hw.
    ROWS: RESULTS_DIR already collected (analysis.runs.collect), if the caller has it."""
    import pandas as pd

    data = load(path)
    rows = collected(results_dir, rows)
    hw = hw or _hw_choice(rows, path)
    runs = runs_by_experiment(results_dir, path, hw, rows)
    table = []
    for claim in data["claims"]:
        res = RULES[claim["rule"]["kind"]](claim, runs, path, seeds_dir=seeds_dir, rows=rows, hw=hw)
        table.append({"id": claim["id"], "claim": claim["claim"].strip(), "source": _source(claim),
                     "verdict": res["verdict"], "detail": res["detail"], "numbers": res["numbers"],
                     "runs": res["runs"], "experiments": list(claim.get("experiments") or []), "hw": hw})
    return pd.DataFrame(table, columns=["id", "claim", "source", "verdict", "detail", "numbers", "runs",
                                       "experiments", "hw"])


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m analysis.claims", description="claims table of a results tree")
    p.add_argument("results", nargs="?", default="results")
    p.add_argument("--hw", default=None)
    p.add_argument("--plan", action="store_true", help="print the GPU plan with its estimates instead")
    p.add_argument("--chains", type=int, default=None, metavar="CALL",
                   help="print device call CALL's chains as `GPU LANE NAME` lines (for experiments/claims_gpu.sh)")
    a = p.parse_args(argv)
    if a.chains is not None:
        for c in plan_estimates():
            if c["call"] == a.chains:
                print(f"{c['gpu']} {c['lane']} {c['name']}")
        return 0
    if a.plan:
        calls = call_estimates()
        for c in plan_estimates():
            print(f"call {c['call']} gpu {c['gpu']}{c['lane']}  plan:{c['name']:6} tier {c['tier']}  ~{c['est_s'] / 60:4.1f} min"
                  + (f" (all candidates {c['worst_s'] / 60:.1f})" if c["first_ok"] else "") + "  "
                  + ",".join(c["experiments"]))
        for n, call in calls.items():
            print(f"call {n}: ~{call['est_s'] / 60:.1f} min (set-up {call['setup_s'] / 60:.1f} + the longest lane)")
        print(f"all calls: ~{sum(c['est_s'] for c in calls.values()) / 60:.1f} min of device time plus machine starts")
        return 0
    df = claims_table(a.results, hw=a.hw)
    for row in df.itertuples():
        print(f"[{row.verdict}] {row.id}: {row.detail}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
