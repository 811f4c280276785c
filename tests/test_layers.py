"""The architecture as a test: folders in the order data flows, each importing only from lower levels (or its own
package), no modules importing each other in a cycle (issues "Architecture" and 31).

    experiments/  0 base/ (errors, paths, data files, hardware classes, the run-folder contract)
                  1 recipes/   2 offline/, record/   3 launch/   4 run/   5 setup/, cloud/   6 probes/
    analysis/    10 core/ (the seeds' published figures)   11 parse/   12 measure/   13 estimate/   14 judge/
                 15 present/   16 cli.py

Nothing in experiments/ imports analysis/ (every experiments level is below every analysis level). The analysis
stages read run folders, so of experiments/ they import only base/ (the contract) and recipes/ (what an experiment
is); only analysis/cli.py, the command line on top, dispatches to the runner. Nothing imports a probe.

Every import counts: top level or inside a function, `import x` and `from x import y` (y may be a module),
relative imports resolved. The data files (data/, top level) sit below both packages and hold no code; a module
directly in analysis/ sits outside a stage.

Inside judge/ the two jobs are siblings (issue 46): the claims audit (judge/audit/) and the answer (judge/answer/)
never import each other; what both read is the one shared module, judge/band.py, which imports neither. judge/cli.py,
the `swiftbench claims` command, may import both.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("analysis", "experiments")
LEVELS = {  # the longest matching prefix decides
    "experiments": 0, "experiments.base": 0, "experiments.recipes": 1, "experiments.offline": 2,
    "experiments.record": 2, "experiments.launch": 3, "experiments.anchors": 3, "experiments.run": 4,
    "experiments.setup": 5,
    "experiments.cloud": 5, "experiments.probes": 6,
    "analysis": 10, "analysis.core": 10, "analysis.parse": 11, "analysis.measure": 12, "analysis.estimate": 13,
    "analysis.judge": 14, "analysis.present": 15, "analysis.cli": 16,
}
ANALYSIS_MAY_IMPORT = ("experiments.base", "experiments.recipes")  # of experiments/, for the stages below the CLI
PROBES = "experiments.probes"
DATA = ("analysis.data",)
JUDGE_JOBS = ("analysis.judge.audit", "analysis.judge.answer")  # siblings: neither imports the other
JUDGE_SHARED = ("analysis.judge.band",)  # what both jobs read; it imports neither
JUDGE_TOP = JUDGE_SHARED + ("analysis.judge", "analysis.judge.cli")  # every other judge module is in a job


def job(name: str) -> str | None:
    """The judge job (package) module NAME belongs to, else None."""
    return next((j for j in JUDGE_JOBS if name == j or name.startswith(j + ".")), None)


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path = ROOT) -> dict[str, Path]:
    """{dotted name: file} of every .py file under the packages."""
    out = {}
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            if "__pycache__" not in path.parts:
                out[module_name(path, root)] = path
    return out


def imports(name: str, path: Path, known: set[str]) -> list[tuple[str, int]]:
    """(imported module, line) for every import in PATH that names one of KNOWN (anywhere in the file)."""
    is_pkg = path.name == "__init__.py"
    package = name if is_pkg else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            for alias in node.names:  # `from pkg import sub` imports the submodule pkg.sub
                sub = f"{prefix}.{alias.name}" if prefix else alias.name
                targets.append(sub if sub in known else prefix)
        for t in targets:
            # `import a.b.c` of a module we do not have (a typo, a removed module) still points at its nearest parent
            while t and t not in known and "." in t:
                t = t.rpartition(".")[0]
            if t in known and t != name:
                out.append((t, node.lineno))
    return out


def level(name: str) -> int | None:
    """The stage level of module NAME; None for a module outside every stage."""
    if name in DATA or any(name.startswith(d + ".") for d in DATA):
        return None
    best = None
    for prefix, lvl in LEVELS.items():
        if name == prefix or name.startswith(prefix + "."):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, lvl)
    if best is None:
        return None
    if best[0] == "analysis" and name != "analysis":  # analysis.<x> that is not a stage package: outside
        return None
    return best[1]


def graph(root: Path = ROOT) -> tuple[dict[str, list[tuple[str, int]]], dict[str, Path]]:
    mods = modules(root)
    known = set(mods)
    return {name: imports(name, path, known) for name, path in mods.items()}, mods


def strongly_connected(edges: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's algorithm (iterative): the components of more than one module, or of one importing itself."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(set(edges.get(start, [])))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(set(edges.get(child, []))))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        comp.append(top)
                        if top == node:
                            break
                    if len(comp) > 1 or node in edges.get(node, []):
                        out.append(sorted(comp))
    return out


def problems(root: Path = ROOT) -> list[str]:
    """One line per offending module or import edge: outside a stage, upward, or part of a cycle."""
    edges, mods = graph(root)
    out = []
    for name in sorted(mods):
        if level(name) is None and not (name in DATA or name.startswith(tuple(d + "." for d in DATA))):
            out.append(f"module outside a stage package: {name} ({mods[name].relative_to(root)})")
        elif level(name) is None:
            out.append(f"code in the data folder: {name} ({mods[name].relative_to(root)})")
        elif name.startswith("analysis.judge.") and job(name) is None and name not in JUDGE_TOP:
            out.append(f"judge module in neither job nor declared shared: {name} ({mods[name].relative_to(root)})")
    for name in sorted(edges):
        src = level(name)
        for target, line in edges[name]:
            dst = level(target)
            if src is not None and dst is not None and dst > src:
                out.append(f"upward import: {mods[name].relative_to(root)}:{line} {name} (level {src}) -> "
                           f"{target} (level {dst})")
        for target, line in edges[name]:
            if name.startswith("analysis") and name != "analysis.cli" and target.startswith("experiments") \
                    and not target.startswith(ANALYSIS_MAY_IMPORT):
                out.append(f"analysis reads files, not the runner: {mods[name].relative_to(root)}:{line} {name} -> "
                           f"{target}")
            if target.startswith(PROBES) and not name.startswith(PROBES):
                out.append(f"a probe is imported: {mods[name].relative_to(root)}:{line} {name} -> {target}")
            src_job, dst_job = job(name), job(target)
            if src_job and dst_job and src_job != dst_job:
                out.append(f"one judge job imports the other: {mods[name].relative_to(root)}:{line} {name} -> "
                           f"{target} (what both need belongs in {', '.join(JUDGE_SHARED)})")
            if name in JUDGE_SHARED and dst_job:
                out.append(f"the judge's shared module imports a job: {mods[name].relative_to(root)}:{line} {name} -> "
                           f"{target}")
    for comp in strongly_connected({n: [t for t, _ in e] for n, e in edges.items()}):
        members = set(comp)
        where = [f"{mods[n].relative_to(root)}:{line} {n} -> {t}" for n in comp for t, line in edges[n]
                 if t in members]
        out.append(f"import cycle between {', '.join(comp)}: " + "; ".join(where))
    return out


def test_stages_import_only_downwards_and_never_in_a_cycle():
    found = problems()
    for line in found:
        print(line)
    assert not found, "\n" + "\n".join(found)


# ---------------------------------------------------------------------------------------- the checker itself


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    for pkg in PACKAGES:
        (root / pkg).mkdir(exist_ok=True)
        (root / pkg / "__init__.py").touch()
    return root


def test_levels():
    assert level("experiments") == 0 and level("experiments.base.errors") == 0
    assert level("experiments.recipes.catalog") == 1 and level("experiments.record.gpu") == 2
    assert level("experiments.launch.launcher") == 3 and level("experiments.run.runner") == 4
    assert level("experiments.probes.sdpa_shapes") == 6
    assert level("analysis") == 10 and level("analysis.parse.logs") == 11 and level("analysis.measure") == 12
    assert level("analysis.estimate.cli") == 13 and level("analysis.judge.audit.rules") == 14
    assert level("analysis.present.report.build") == 15 and level("analysis.cli") == 16
    assert level("analysis.claims") is None and level("analysis.data") is None
    assert level("analysis.presentation") is None  # a prefix of the name, not of the package
    assert max(v for k, v in LEVELS.items() if k.startswith("experiments")) < LEVELS["analysis"]


def test_the_checker_finds_upward_imports_cycles_and_strays(tmp_path):
    root = _tree(tmp_path, {
        "analysis/core/__init__.py": "",
        "experiments/base/errors.py": "",
        "analysis/parse/__init__.py": "",
        "analysis/parse/logs.py": "from ..core import errors\nfrom experiments.base.errors import X\n",
        "analysis/measure/__init__.py": "",
        "analysis/measure/steps.py": "def f():\n    from . import speed\n",  # inside a function, relative
        "analysis/measure/speed.py": "import analysis.measure.steps\n",
        "analysis/judge/__init__.py": "",
        "analysis/judge/audit/rules.py": "from analysis.present import tables\n",  # upward
        "analysis/present/__init__.py": "",
        "analysis/present/tables.py": "from analysis.judge.audit.rules import verdict\n"
                                      "from analysis.parse import logs\n",
        "analysis/cli.py": "import importlib\n",
        "analysis/claims.py": "from analysis.core import errors\n",  # outside a stage
        "experiments/run/runner.py": "from analysis.judge.audit import rules\nfrom experiments import gpu\n",
        "experiments/record/gpu.py": "from analysis.core import errors\n",
        "analysis/measure/load.py": "from experiments.run import runner\n",  # analysis reads files only
        "experiments/probes/p.py": "",
        "experiments/cloud/fleet.py": "from experiments.probes import p\n",  # nothing imports a probe
    })
    edges, _ = graph(root)
    assert ("experiments.base.errors", 2) in edges["analysis.parse.logs"]
    assert edges["analysis.measure.steps"] == [("analysis.measure.speed", 2)]
    found = problems(root)
    assert "module outside a stage package: analysis.claims (analysis/claims.py)" in found
    assert ("upward import: analysis/judge/audit/rules.py:1 analysis.judge.audit.rules (level 14) -> "
            "analysis.present.tables (level 15)") in found
    assert ("upward import: experiments/run/runner.py:1 experiments.run.runner (level 4) -> analysis.judge.audit.rules "
            "(level 14)") in found
    assert ("analysis reads files, not the runner: analysis/measure/load.py:1 analysis.measure.load -> "
            "experiments.run.runner") in found
    assert "a probe is imported: experiments/cloud/fleet.py:1 experiments.cloud.fleet -> experiments.probes.p" in found
    cycles = [f for f in found if f.startswith("import cycle")]
    assert len(cycles) == 2
    assert any("analysis.judge.audit.rules, analysis.present.tables" in c for c in cycles)
    assert any("analysis.measure.speed, analysis.measure.steps" in c and "steps.py:2" in c for c in cycles)
    assert len(found) == 9, found


def test_tarjan_on_a_longer_cycle():
    edges = {"a": ["b"], "b": ["c"], "c": ["a", "d"], "d": ["d"], "e": ["a"]}
    assert sorted(strongly_connected(edges)) == [["a", "b", "c"], ["d"]]
    assert strongly_connected({"a": ["b"], "b": []}) == []


def test_no_run_folder_file_name_is_spelled_outside_the_contract():
    """Every run-folder file name is spelled once, in experiments/base/runfiles.py; code elsewhere says
    runfiles.RUN_JSON (docstrings may name the files)."""
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    from experiments.base import runfiles

    names = {v for k, v in vars(runfiles).items() if k.isupper() and isinstance(v, str) and "." in v}
    assert {"run.json", "env.json", "logging.jsonl", "args.json", "tokens.jsonl", "gpm.jsonl"} <= names
    found = []
    for name, path in modules().items():
        if name == "experiments.base.runfiles":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.body
                and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        found += [f"{path.relative_to(ROOT)}:{n.lineno} {n.value!r}" for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in names
                  and id(n) not in docs]
    assert not found, "spell these as experiments.base.runfiles names:\n" + "\n".join(found)


SHARED_BASENAMES = {"__init__.py", "__main__.py", "cli.py"}  # a package's own entry points may share a name


def test_no_two_modules_share_a_basename():
    """A file name says which module it is: `quick.py` in two places (a run's stop and the estimate from it) sent
    readers to the wrong one. Report sections that show a measure are `section_<measure>.py`."""
    seen: dict[str, list[str]] = {}
    for top in PACKAGES:
        for path in sorted((ROOT / top).rglob("*.py")):
            if path.name not in SHARED_BASENAMES:
                seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    clashes = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not clashes, clashes


def test_the_checker_keeps_the_judge_jobs_apart(tmp_path):
    root = _tree(tmp_path, {
        "analysis/judge/__init__.py": "",
        "analysis/judge/band.py": "from analysis.judge.audit import config\n",  # shared imports a job
        "analysis/judge/cli.py": "from analysis.judge.audit import verdicts\nfrom analysis.judge.answer import x\n",
        "analysis/judge/audit/__init__.py": "",
        "analysis/judge/audit/config.py": "from analysis.judge import band\n",  # a job reads the shared module
        "analysis/judge/audit/verdicts.py": "from analysis.judge.answer.x import y\n",  # audit -> answer
        "analysis/judge/answer/__init__.py": "",
        "analysis/judge/answer/x.py": "from analysis.judge.band import seed_spread\n",
        "analysis/judge/answer/z.py": "import analysis.judge.audit.config\n",  # answer -> audit
        "analysis/judge/stray.py": "",  # a judge module that is in neither job nor shared
    })
    found = problems(root)
    assert ("one judge job imports the other: analysis/judge/audit/verdicts.py:1 analysis.judge.audit.verdicts -> "
            "analysis.judge.answer.x (what both need belongs in analysis.judge.band)") in found
    assert ("one judge job imports the other: analysis/judge/answer/z.py:1 analysis.judge.answer.z -> "
            "analysis.judge.audit.config (what both need belongs in analysis.judge.band)") in found
    assert ("the judge's shared module imports a job: analysis/judge/band.py:1 analysis.judge.band -> "
            "analysis.judge.audit.config") in found
    assert "judge module in neither job nor declared shared: analysis.judge.stray (analysis/judge/stray.py)" in found
    cycles = [f for f in found if f.startswith("import cycle")]
    assert len(cycles) == 1 and "analysis.judge.audit.config, analysis.judge.band" in cycles[0]
    assert len(found) == 5, found
