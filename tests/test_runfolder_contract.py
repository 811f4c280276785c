"""The run-folder contract typed on both sides (issue 46): no key of experiments/base/runfolder.py is spelled as a
string literal both by a writer (experiments/record, experiments/run, the launcher experiments/launch, the anchor
runner experiments/anchors) and by a reader (analysis/parse, and the analysis modules that read a run-folder file's
keys themselves: profile.json's windows, nvml.csv's columns, launch.json's records), and each reader's TypedDict names
only keys its file's class declares.

A literal is a dict display's key, a subscript (`d["key"]`) or the first argument of `.get`/`.pop`/`.setdefault`
that equals a key of the contract. One side spelling a key is allowed (a dict of its own that shares a name); both
sides spelling it is the drift the contract exists to stop: the writer renames, the reader reads nothing.
"""
from __future__ import annotations

import ast
from pathlib import Path

from analysis.parse import runfile_rows
from experiments.base import runfolder

ROOT = Path(__file__).resolve().parents[1]
WRITERS = ("experiments/record", "experiments/run", "experiments/launch", "experiments/anchors")
READERS = ("analysis/parse",
           # profile.json's windows, kernels, host stacks
           "analysis/measure/profile.py", "analysis/estimate/transfer.py", "analysis/estimate/scaled.py",
           "analysis/judge/audit/rules_tooling.py", "analysis/present/profile_view.py",
           # nvml.csv's columns (and run.json's times)
           "analysis/measure/utilisation.py", "analysis/measure/utilisation_view.py",
           # launch.json's allocator cap and quick stop, schedule.jsonl's counts, the launcher's options
           "analysis/estimate/epoch.py", "analysis/judge/audit/card.py", "analysis/estimate/quick.py",
           "analysis/judge/answer/run_tables.py",
           # run.json's round, harness and probe_after, env.json's host probe, packages, GPU memory, run.json's command
           # and notes, times and imported mark
           "analysis/measure/repeats.py", "analysis/present/report/header.py",
           "analysis/present/report/section_hardware.py", "analysis/present/report/section_memory.py",
           "analysis/estimate/planner.py",
           # the launcher's options (run.json key's launcher), schedule.jsonl's lines
           "analysis/judge/audit/rules_card.py", "analysis/estimate/quick_check.py", "analysis/estimate/workload.py")
_KEY_METHODS = ("get", "pop", "setdefault")


def literal_keys(tree: ast.AST, names: set[str]) -> list[tuple[str, int]]:
    """(key, line) of every string literal used as a dict key or subscript in TREE that is one of NAMES."""
    out = []
    for node in ast.walk(tree):
        candidates: list[ast.expr | None] = []
        if isinstance(node, ast.Dict):
            candidates = list(node.keys)
        elif isinstance(node, ast.Subscript):
            candidates = [node.slice]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in _KEY_METHODS and node.args:
            candidates = [node.args[0]]
        for c in candidates:
            if isinstance(c, ast.Constant) and isinstance(c.value, str) and c.value in names:
                out.append((c.value, node.lineno))
    return out


def spelled(root: Path, folders: tuple[str, ...], names: set[str]) -> dict[str, list[str]]:
    """{key: ["file:line", ...]} of the literals of NAMES under FOLDERS (a folder, or one .py file)."""
    out: dict[str, list[str]] = {}
    for folder in folders:
        where = root / folder
        for path in [where] if where.is_file() else sorted(where.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            for key, line in literal_keys(tree, names):
                out.setdefault(key, []).append(f"{path.relative_to(root)}:{line}")
    return out


def both_sides(root: Path = ROOT) -> list[str]:
    names = runfolder.all_keys()
    writers, readers = spelled(root, WRITERS, names), spelled(root, READERS, names)
    return [f"{key!r}: written at {', '.join(writers[key])}; read at {', '.join(readers[key])}"
            for key in sorted(set(writers) & set(readers))]


def test_no_key_spelled_by_writer_and_reader():
    found = both_sides()
    assert not found, "run-folder keys spelled on both sides (use experiments/base/runfolder.py):\n" + "\n".join(found)


def test_the_scan_finds_a_key_spelled_on_both_sides(tmp_path):
    """The check can fail: a writer and a reader that both spell env.json's gpu_name are reported."""
    (tmp_path / "experiments/record").mkdir(parents=True)
    (tmp_path / "experiments/run").mkdir(parents=True)
    (tmp_path / "analysis/parse").mkdir(parents=True)
    (tmp_path / "experiments/record/w.py").write_text('def env(n):\n    return {"gpu_name": n, "other": 1}\n')
    (tmp_path / "analysis/parse/r.py").write_text('def name(env):\n    return env.get("gpu_name"), env["other"]\n')
    assert both_sides(tmp_path) == ["'gpu_name': written at experiments/record/w.py:2; read at analysis/parse/r.py:2"]


def test_readers_typeddicts_name_only_contract_keys():
    """A reader's TypedDict of a run-folder object declares only keys of that object's class."""
    pairs = [(runfile_rows.EnvJson, runfolder.Env), (runfile_rows.RunJson, runfolder.Run),
             (runfile_rows.RunKey, runfolder.RunKey), (runfile_rows.GpuCheck, runfolder.GpuCheck),
             (runfile_rows.HostJson, runfolder.Host), (runfile_rows.ResumeEntry, runfolder.Resume),
             (runfile_rows.RoundPlace, runfolder.Round), (runfile_rows.ScheduleStep, runfolder.Tokens),
             (runfile_rows.LauncherOptions, runfolder.Launcher),
             # profile.json and what its windows hold
             (runfile_rows.ProfileJson, runfolder.Profile), (runfile_rows.ProfileWindow, runfolder.ProfileWindow),
             (runfile_rows.GpuOpRow, runfolder.GpuOp), (runfile_rows.GcRow, runfolder.GcSummary),
             (runfile_rows.GpmRow, runfolder.Gpm), (runfile_rows.HostStacks, runfolder.HostStacks),
             (runfile_rows.ThreadRow, runfolder.StackThread), (runfile_rows.ShareRow, runfolder.StackShare),
             (runfile_rows.CpuRow, runfolder.TaskCpu),
             # launch.json and its records
             (runfile_rows.LaunchJson, runfolder.Launch), (runfile_rows.QuickStop, runfolder.Quick),
             (runfile_rows.MemCap, runfolder.MemCap)]
    for typed, keys in pairs:
        extra = set(typed.__annotations__) - set(runfolder.keys(keys).values())
        assert not extra, f"{typed.__name__} reads keys {sorted(extra)} that runfolder.{keys.__name__} lacks"


def test_schemas_name_only_contract_keys():
    """The runtime schema's top-level fields are keys of the contract."""
    from experiments.base import runschema
    for schema, keys in [(runschema.RUN_JSON, runfolder.Run), (runschema.ENV_JSON, runfolder.Env),
                         (runschema.ARGS_JSON, runfolder.Args), (runschema.PROFILE_JSON, runfolder.Profile),
                         (runschema.TOKENS_LINE, runfolder.Tokens)]:
        assert set(schema.fields) <= set(runfolder.keys(keys).values())


def test_every_contract_class_is_scanned():
    """all_keys() holds every class of the contract module, the launcher's and the anchor runner's files' included."""
    import inspect

    classes = {c for _, c in inspect.getmembers(runfolder, inspect.isclass) if c.__module__ == runfolder.__name__}
    assert classes == set(runfolder.FILES)
    for cls in (runfolder.Launch, runfolder.MemCap, runfolder.Quick, runfolder.ProfileWindow, runfolder.GpuOp,
                runfolder.Nvml, runfolder.Anchor, runfolder.AnchorStep):
        assert set(runfolder.keys(cls).values()) <= runfolder.all_keys(), cls.__name__


def test_nvml_columns_are_the_contracts():
    """nvml.csv's header is runfolder.Nvml's columns, in order, and every one of them is a constant of the class."""
    from experiments.record import gpu

    assert gpu.NVML_FIELDS == list(runfolder.Nvml.COLUMNS) == [
        "time_s", "gpu", "power_w", "sm_clock_mhz", "mem_clock_mhz", "temp_c", "util_gpu_pct", "util_mem_pct",
        "mem_used_mib", "throttle_reasons", "throttle", "energy_j"]  # the header of every nvml.csv written so far
    assert set(runfolder.Nvml.COLUMNS) == set(runfolder.keys(runfolder.Nvml).values())


def test_readers_exist():
    """Every folder and file the scan reads is there (a renamed module would leave the scan blind to it)."""
    missing = [p for p in WRITERS + READERS if not (ROOT / p).exists()]
    assert not missing, missing
