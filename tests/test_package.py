"""The built wheel works outside the checkout: it carries what the commands need (report notebook, seeds' figures,
hardware tables, recipes and claims data, the report's CSS, the committed runs the planner reads) under one top-level
package, swiftbench/, and `swiftbench --version`, `plan`, `plan --optimize`, `plugin`, `tables` and `report`, run from
an installed wheel in a fresh virtual environment in an empty folder, answer as the checkout does.

The fresh venv gets no dependency installed from an index (that would take minutes): it sees this interpreter's
site-packages through a plain path line in a .pth file, which adds the folder to sys.path without processing the
.pth files inside it, so the checkout's editable install of swiftbench stays out. The wheel is built from a copy of
the checkout, so the build writes nothing into the checkout.
"""
from __future__ import annotations

import fnmatch
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from committed import committed_results

from experiments.recipes import recipes

REPO = Path(__file__).resolve().parents[1]
RESULTS = committed_results()

# Files the wheel must carry, relative to the installed packages' parent folder (experiments/base/paths.py's ROOT),
# which is swiftbench/ in the wheel (TOP): one top-level package in site-packages.
TOP = "swiftbench"
NAMED_FILES = [
    "seeds/ms_swift_hw_test.yaml",
    "notebooks/report.ipynb",
    "data/hardware.yaml",
    "analysis/judge/audit/claims.yaml",
    "experiments/recipes/recipes.yaml",
    "analysis/present/report/report.css",
]
# Every checkout file matching one of these must be in the wheel too (new data files included).
PACKAGE_DATA_GLOBS = [
    "seeds/*.yaml",
    "notebooks/*.ipynb",
    "data/*.yaml",
    "data/*.json",
    "data/*.csv",
    "analysis/judge/*/*.yaml",
    "analysis/present/report/*.css",
    "experiments/*/*.yaml",
    "experiments/*/*.ipynb",
    "experiments/*/*.txt",
    "experiments/*/*.sh",
    "experiments/recipes/claims/*.yaml",
    "data/committed-runs/*/*/*/*",
]
PACKAGES = ["analysis", "experiments", "data", "seeds", "notebooks"]
PROBES = "experiments/probes/"  # one-off probes: in the checkout, never in the wheel

# Not copied for the build: local, ignored and heavy folders (see .gitignore and .dockerignore).
_SKIP_TOP = {".git", ".venv", ".cache", ".data", ".models", ".whl", ".gl", "build", "dist", "report", "scratch",
             "wheelhouse", ".pytest_cache", ".hypothesis", ".ci"}
_SKIP_ANY = ["__pycache__", "*.pyc", "*.egg-info", "artifacts"]

# Inert unless SWIFTBENCH_PROBE names a folder: then every process of the temporary venv's interpreter writes, at
# exit, which interpreter it was, its arguments and where `analysis` came from (a Jupyter kernel included).
_PROBE_PTH = (
    "import os, sys; os.environ.get('SWIFTBENCH_PROBE') and __import__('atexit').register("
    "lambda: open(os.path.join(os.environ['SWIFTBENCH_PROBE'], '%d.json' % os.getpid()), 'w').write("
    "__import__('json').dumps({'executable': sys.executable, 'argv': sys.argv, "
    "'analysis': getattr(sys.modules.get('analysis'), '__file__', None)})))\n"
)


def _ignore(folder: str, names: list[str]) -> set[str]:
    skipped = {n for n in names if any(fnmatch.fnmatch(n, pat) for pat in _SKIP_ANY)}
    if Path(folder).resolve() == REPO:
        skipped |= _SKIP_TOP & set(names)
    return skipped


def _run(cmd: list, cwd: Path, env: dict, timeout: int = 300) -> subprocess.CompletedProcess:
    p = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, f"{' '.join(map(str, cmd))} -> {p.returncode}\nstdout:\n{p.stdout[-3000:]}\n" \
                              f"stderr:\n{p.stderr[-5000:]}"
    return p


def _inside(path: str | Path, folder: Path) -> bool:
    """PATH lies in FOLDER (an interpreter's path is not resolved: the venv's python links to the base one)."""
    return Path(os.path.abspath(path)).is_relative_to(os.path.abspath(folder))


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """Build the wheel from a copy of the checkout, install it into a fresh venv; returns paths and a clean env."""
    base = tmp_path_factory.mktemp("package")
    src, dist, venv, work = base / "src", base / "dist", base / "venv", base / "work"
    shutil.copytree(REPO, src, ignore=_ignore)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "JUPYTER_PATH",
                        "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "SWIFTBENCH_PROBE") and not k.startswith("PIP_")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", PIP_CONFIG_FILE=os.devnull,
               PYTHONDONTWRITEBYTECODE="1")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
          "-w", dist, src], cwd=base, env=env)
    (wheel,) = dist.glob("swiftbench-*.whl")

    _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=base, env=env)
    python = venv / "bin" / "python"
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     cwd=base, env=env).stdout.strip())
    deps = Path(sysconfig.get_paths()["purelib"])       # this interpreter's dependencies (and its editable install)
    (site / "_swiftbench_test_deps.pth").write_text(f"{deps}\n")
    (site / "_swiftbench_test_probe.pth").write_text(_PROBE_PTH)
    # Dependencies' Jupyter data (nbconvert's templates) sit under their prefix, as a pip install into the venv would
    # put them; the kernel spec is the venv's own, so the report's kernel runs the venv's interpreter.
    shared = Path(sys.prefix) / "share" / "jupyter"
    (venv / "share" / "jupyter").mkdir(parents=True)
    for entry in shared.iterdir() if shared.is_dir() else ():
        if entry.name != "kernels":
            (venv / "share" / "jupyter" / entry.name).symlink_to(entry)
    # --ignore-installed: never touch the swiftbench this interpreter has (pip sees it through the .pth path line)
    _run([python, "-m", "pip", "install", "--no-deps", "--no-index", "--ignore-installed", "-q", wheel],
         cwd=base, env=env)
    _run([python, "-m", "ipykernel", "install", "--sys-prefix", "--name", "python3"], cwd=base, env=env)

    work.mkdir()
    env.update(PATH=os.pathsep.join([str(venv / "bin"), env.get("PATH", "")]), VIRTUAL_ENV=str(venv),
               JUPYTER_PREFER_ENV_PATH="1", MPLBACKEND="Agg")
    return {"wheel": wheel, "venv": venv, "python": python, "site": site, "work": work, "env": env}


def test_wheel_carries_what_the_commands_need(installed):
    listed = set(zipfile.ZipFile(installed["wheel"]).namelist())
    names = {n.removeprefix(TOP + "/") for n in listed}
    missing = [n for n in NAMED_FILES if n not in names]
    for pattern in PACKAGE_DATA_GLOBS:
        missing += [str(p.relative_to(REPO)) for p in sorted(REPO.glob(pattern))
                    if str(p.relative_to(REPO)) not in names]
    for package in PACKAGES:
        missing += [str(p.relative_to(REPO)) for p in sorted((REPO / package).rglob("*.py"))
                    if "__pycache__" not in p.parts and str(p.relative_to(REPO)) not in names
                    and not str(p.relative_to(REPO)).startswith(PROBES)]
    assert not missing, f"not in the wheel: {list(dict.fromkeys(missing))}"
    assert [n for n in names if n.startswith("experiments/recipes/claims/") and n.endswith(".yaml")]
    leaked = sorted(n for n in names if "results/" in n or "tests/" in n or n.startswith(PROBES))
    assert not leaked, f"the wheel carries what it should not: {leaked[:20]}"
    tops = {n.split("/")[0] for n in listed} - {TOP}
    assert all(t.endswith(".dist-info") for t in tops), f"unexpected top-level entries in the wheel: {tops}"
    assert {f"{TOP}/__init__.py", f"{TOP}/__main__.py"} <= listed
    entry_points = zipfile.ZipFile(installed["wheel"]).read(
        next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert "swiftbench = swiftbench:main" in entry_points


def test_site_packages_holds_one_top_level_package(installed):
    """Nothing of the wheel lands in site-packages beside swiftbench/ (and its .dist-info): no `analysis`, `data`,
    ... to shadow a user's own; without `import swiftbench` the names are not importable from the venv."""
    site, dist = installed["site"], installed["site"] / "swiftbench-0.1.0.dist-info"
    ours = {p.name for p in site.iterdir()} - {"_swiftbench_test_deps.pth", "_swiftbench_test_probe.pth"}
    assert ours == {TOP, dist.name} or ours == {TOP, dist.name, "__pycache__"}, ours
    record = [line.split(",")[0] for line in (next(site.glob("swiftbench-*.dist-info")) / "RECORD").read_text()
              .splitlines()]
    stray = [r for r in record if r.split("/")[0] not in (TOP, next(site.glob("swiftbench-*.dist-info")).name)
             and not r.endswith("bin/swiftbench")]
    assert not stray, stray
    for name in PACKAGES:
        assert not (site / name).exists(), name
    p = subprocess.run([installed["python"], "-c", "import analysis"], cwd=installed["work"], env=installed["env"],
                       capture_output=True, text=True)
    assert p.returncode != 0 and "No module named 'analysis'" in p.stderr, p.stderr


def test_installed_package_imports_from_the_venv(installed):
    python, work, env, venv = installed["python"], installed["work"], installed["env"], installed["venv"]
    out = _run([python, "-c", "import json, swiftbench, analysis, experiments.base.paths as p, seeds, notebooks; "
                "print(json.dumps("
                "[analysis.__file__, str(p.ROOT), str(p.SEEDS_DIR), str(p.NOTEBOOKS), str(p.DATA)]))"],
               cwd=work, env=env).stdout
    analysis_file, root, seeds_dir, notebooks_dir, data_dir = json.loads(out)
    assert _inside(analysis_file, venv) and not _inside(analysis_file, REPO), analysis_file
    assert Path(root).resolve() == (installed["site"] / TOP).resolve()
    for path in (Path(seeds_dir) / "ms_swift_hw_test.yaml", Path(notebooks_dir) / "report.ipynb",
                 Path(data_dir) / "hardware.yaml"):
        assert path.is_file(), f"not installed: {path}"

    version = _run([python, "-m", "swiftbench", "--version"], cwd=work, env=env).stdout.split()
    assert version[0] == "swiftbench" and version[1][0].isdigit(), version
    assert _run([venv / "bin" / "swiftbench", "--version"], cwd=work, env=env).stdout.split() == version


def test_installed_plugin_is_the_one_the_answer_names(installed):
    """The answer's command names the plugin as recipes.PLUGIN_SHELL (`"$(swiftbench plugin || ...)"`): the installed
    command prints the path of a file of the installed package, the same bytes as the checkout's (issue 36's bar: the
    plugin is in the wheel)."""
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    assert f"{TOP}/experiments/recipes/swift_plugin.py" in names
    out = _run([installed["venv"] / "bin" / "swiftbench", "plugin"], cwd=installed["work"],
               env=installed["env"]).stdout.strip()
    path = Path(out)
    assert path.is_file() and _inside(str(path), installed["venv"]) and path.name == "swift_plugin.py"
    assert path.read_bytes() == (REPO / "experiments" / "recipes" / "swift_plugin.py").read_bytes()
    answer = _run([installed["venv"] / "bin" / "swiftbench", "tables", RESULTS, "--answer"],
                  cwd=installed["work"], env=installed["env"]).stdout
    assert f"--external_plugins {recipes.PLUGIN_SHELL}" in answer and "experiments.launch" not in answer


# The planner's questions of issue 43: the installed wheel, from an empty folder, reads the committed runs it carries
# (data/committed-runs) and answers as the checkout does from its results/.
PLAN_QUESTIONS = [["--hw", "h100"], ["--optimize", "time"], ["--optimize", "time", "--model", "Qwen2.5-7B"]]
_SOURCE_LINE = "measured times and profiles come from"


def _plan_figures(text: str, roots: list[Path]) -> object:
    """`plan --json` output with the install's own paths named alike and the line naming the runs' folder left out
    (it names results/ in the checkout, the packaged copy in the wheel: test_packaged_runs.py checks that line)."""
    for root in roots:
        text = text.replace(str(root), "<ROOT>")

    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items()}
        if isinstance(x, list):
            return [strip(v) for v in x if not (isinstance(v, str) and _SOURCE_LINE in v)]
        return x

    return strip(json.loads(text))


def _table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if "\u2502" in line or "\u2503" in line]


def _checkout_plan(monkeypatch, capsys, *args: str) -> str:
    """`python -m analysis.cli plan ARGS` in the checkout (in this process: the results/ scan is read once)."""
    from analysis.cli import main

    monkeypatch.chdir(REPO)
    monkeypatch.setenv("COLUMNS", "250")
    capsys.readouterr()
    assert main(["plan", *args]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("question", PLAN_QUESTIONS, ids=" ".join)
def test_installed_plan_from_an_empty_folder_is_the_checkouts(installed, question, tmp_path, monkeypatch, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    env = dict(installed["env"], COLUMNS="250")
    script = installed["venv"] / "bin" / "swiftbench"
    roots = [installed["site"] / TOP, REPO]
    there = _run([script, "plan", *question, "--json"], cwd=empty, env=env).stdout
    here = _checkout_plan(monkeypatch, capsys, *question, "--json")
    assert _plan_figures(there, roots) == _plan_figures(here, roots)
    if question == PLAN_QUESTIONS[2]:
        return  # the figures suffice for the third question
    table = _run([script, "plan", *question], cwd=empty, env=env).stdout
    assert _table_rows(table) and _table_rows(table) == _table_rows(_checkout_plan(monkeypatch, capsys, *question))
    if question[0] == "--hw":  # the footer says where the runs came from
        assert "the committed runs packaged with swiftbench" in table and "no ./results here" in table
    assert list(empty.iterdir()) == []  # nothing written into the folder


def test_installed_tables_on_the_committed_results(installed):
    out = _run([installed["python"], "-m", "swiftbench", "tables", RESULTS, "--format", "json"],
               cwd=installed["work"], env=installed["env"]).stdout
    tables = json.loads(out)
    rows = [r for r in tables["speedup"]
            if r["hw"] == "h200" and r["experiment"] == "seed" and r["source"] == "measured"]
    # every run with a steady step time has tokens/s (a quick run stopped before its steady steps has neither)
    timed = [r for r in rows if r["ms_per_step"] is not None]
    assert timed and all((r["tokens_per_s"] or 0) > 0 for r in timed), rows
    published = {r["hw"] for r in tables["speedup"] if r["source"] == "published"}
    assert {"a10", "a100"} <= published, published       # the seeds' figures came from the installed seeds/


def test_installed_report_on_the_committed_results(installed, tmp_path):
    probe, out = tmp_path / "probe", tmp_path / "report"
    probe.mkdir()
    env = dict(installed["env"], SWIFTBENCH_PROBE=str(probe))
    _run([installed["python"], "-m", "swiftbench", "report", "--results", RESULTS, "--out", out],
         cwd=installed["work"], env=env, timeout=400)
    assert (out / "index.html").stat().st_size > 10_000
    assert (out / "speedup.csv").read_text().count("\n") > 1
    assert "h200" in (out / "speedup.csv").read_text()

    meta = json.loads((out / "report.ipynb").read_text())["metadata"]["papermill"]
    assert _inside(meta["input_path"], installed["venv"]), meta["input_path"]          # the installed notebook
    assert _inside(meta["parameters"]["seeds_dir"], installed["venv"]), meta["parameters"]
    # The kernel ran the venv's interpreter and imported the installed package, not the checkout.
    runs = [json.loads(p.read_text()) for p in probe.glob("*.json")]
    kernels = [r for r in runs if any("ipykernel" in a for a in r["argv"])]
    assert kernels, f"no kernel ran the temporary venv's interpreter: {runs}"
    for r in kernels:
        assert _inside(r["executable"], installed["venv"]), r
        assert r["analysis"] and _inside(r["analysis"], installed["venv"]), r
        assert not _inside(r["analysis"], REPO), r
