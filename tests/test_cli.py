"""`swiftbench parse` and `swiftbench tables` as a user runs them: output, exit codes, one-line errors."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.cli import main


def _run(*args):
    return subprocess.run([sys.executable, "-m", "analysis.cli", *map(str, args)], capture_output=True, text=True)


def test_parse_json_three_formats(fixtures):
    for name, fmt, complete in [("v3_full", "v3", True), ("h200_bs16", "v4", True), ("v4_killed", "v4", False)]:
        p = _run("parse", fixtures / name, "--json")
        assert p.returncode == 0, p.stderr
        (m,) = json.loads(p.stdout)
        assert m["log_format"] == fmt and m["complete"] is complete
        assert m["peak_mem_gib"] > 0 and len(m["train_loss"]) > 3 and m["step_time_s"]["median"] > 0


def test_parse_parent_folder_parses_each_run(fixtures):
    p = _run("parse", fixtures, "--json")
    assert p.returncode == 0
    assert len(json.loads(p.stdout)) == 6


def test_parse_human_output(fixtures):
    p = _run("parse", fixtures / "h200_bs16")
    assert p.returncode == 0 and "tokens/s" in p.stdout and "0.9162" in p.stdout


@pytest.mark.parametrize("content,needle", [("", "empty log file"), ('{"loss": 1}\n[1]\n', ":2: a JSON list")])
def test_bad_input_one_line_exit_2(tmp_path, content, needle):
    log = tmp_path / "logging.jsonl"
    log.write_text(content)
    out = tmp_path / "out.json"
    p = _run("parse", log, "--json")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and needle in p.stderr and str(log) in p.stderr
    assert not out.exists()


def test_missing_path(tmp_path):
    assert main(["parse", str(tmp_path / "nope")]) == 2


def test_tables_markdown_has_both_tables_and_published_rows(results_tree):
    p = _run("tables", results_tree, "--baseline", "a10")
    assert p.returncode == 0, p.stderr
    assert "## Speedup" in p.stdout and "## Convergence" in p.stdout
    assert "published" in p.stdout and "measured" in p.stdout


def test_tables_json(results_tree):
    p = _run("tables", results_tree, "--format", "json")
    data = json.loads(p.stdout)
    assert {"speedup", "convergence"} <= data.keys()


@pytest.mark.parametrize("argv,needle", [(["parse"], "required: path"),
                                         (["tables", "x", "--format", "xml"], "invalid choice"),
                                         (["nope"], "invalid choice")])
def test_argument_errors_are_one_line(argv, needle):
    p = _run(*argv)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and needle in p.stderr


def test_yaml_errors_name_file_and_line(tmp_path):
    from experiments.base.datafiles import read_yaml
    from experiments.base.errors import InputError

    bad = tmp_path / "x.yaml"
    bad.write_text("a: 1\nb: [2\n")
    with pytest.raises(InputError) as err:
        read_yaml(bad)
    assert err.value.path == str(bad) and err.value.line is not None and "not valid YAML" in err.value.message
    with pytest.raises(InputError, match="cannot read price table"):
        read_yaml(tmp_path / "missing.yaml", "price table")


# ------------------------------------------------------------------------------------------ one program, lazily


def test_version_is_the_distribution_s():
    import importlib.metadata as md

    p = _run("--version")
    assert p.returncode == 0 and p.stdout.strip() == f"swiftbench {md.version('swiftbench')}"


def test_version_falls_back_to_pyproject(monkeypatch):
    import importlib.metadata as md

    import tomllib

    from analysis import cli

    def missing(name):
        raise md.PackageNotFoundError(name)

    monkeypatch.setattr(md, "version", missing)
    with open(cli.Path(cli.__file__).resolve().parents[1] / "pyproject.toml", "rb") as f:
        assert cli.version() == tomllib.load(f)["project"]["version"]


def test_help_lists_every_subcommand_and_imports_none():
    code = ("import sys; from analysis import cli\n"
            "try:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in [*cli.SUBCOMMAND_MODULES.values(), 'torch', "
            "'swift', 'pandas'] if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    for command in ("run-all", "claims", "plan", "parse", "tables", "report", "wheelhouse"):
        assert f"\n    {command}" in p.stdout, command
    assert p.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("argv", [["tables", "--help"], ["parse", "--help"], ["plan", "--help"]])
def test_a_subcommand_imports_only_its_own_module(argv):
    """`swiftbench tables` must not load torch or ms-swift (nor the runner, which the GPU side imports)."""
    code = ("import sys; from analysis import cli\n"
            f"try:\n    cli.main({argv!r})\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('torch', 'swift', 'transformers', 'experiments.run.runner', "
            "'experiments.setup.wheelhouse', 'analysis.judge.cli') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "usage: swiftbench " + argv[0] in p.stdout
    assert p.stdout.strip().splitlines()[-1] == "[]"


def test_run_all_and_wheelhouse_are_subcommands(tmp_path):
    p = _run("run-all", "--help")
    assert p.returncode == 0 and all(o in p.stdout for o in ("--hw", "--claims", "--set", "--first-ok"))
    p = _run("wheelhouse", "--help")
    assert p.returncode == 0 and "--dest" in p.stdout and "install" in p.stdout
    p = _run("wheelhouse", "install", "--from", tmp_path / "nope")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "no such folder" in p.stderr
    p = _run("wheelhouse", "install", "--from", tmp_path, "--dry-run")
    assert p.returncode == 0 and "--no-index" in p.stdout and str(tmp_path) in p.stdout


def test_every_subcommand_module_exists_and_registers(monkeypatch, tmp_path):
    """Each subcommand's module is importable and adds its subcommand; a module that fails to import is an error."""
    from analysis import cli

    parser = cli.build_parser()
    assert set(parser._subparsers._group_actions[0].choices) == set(cli.SUBCOMMAND_MODULES)
    bad = tmp_path / "brokenstage.py"
    bad.write_text("import no_such_dependency_anywhere\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(cli, "SUBCOMMAND_MODULES", {**cli.SUBCOMMAND_MODULES, "tables": "brokenstage"})
    with pytest.raises(ModuleNotFoundError, match="no_such_dependency_anywhere"):
        cli.main(["tables", "results"])



# -------------------------------------------------------------------------------------- as a user meets them (issue 13)

RESULTS = Path(__file__).resolve().parents[1] / "results"
REPO = RESULTS.parent


def test_tables_refuses_an_unknown_baseline_like_report_and_plan(results_tree):
    p = _run("tables", results_tree, "--baseline", "rtx3090")
    assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1, p.stderr
    assert "unknown hardware 'rtx3090'" in p.stderr and "(known: a10, " in p.stderr and "rtx4090" in p.stderr


def test_tables_of_the_committed_results_refuses_rtx3090():
    if not RESULTS.is_dir():
        pytest.skip("no committed results")
    p = _run("tables", RESULTS, "--baseline", "rtx3090")
    assert p.returncode == 2 and "unknown hardware 'rtx3090'" in p.stderr


def test_parse_says_an_oom_run_is_not_complete():
    """`swiftbench parse results/h200/cap24-bs12/*`: the runner marked the run OOM; ms-swift still wrote its closing
    summary line, so the log alone would call it complete."""
    runs = sorted((RESULTS / "h200" / "cap24-bs12").glob("*"))
    if not runs:
        pytest.skip("no committed cap24-bs12 run")
    p = _run("parse", *runs)
    assert p.returncode == 0, p.stderr
    rows = {ln.split("│")[1].strip(): ln.split("│")[2].strip() for ln in p.stdout.splitlines() if ln.count("│") >= 3}
    assert rows["complete"] == "false" and rows["status"].startswith("failed (OOM")
    p = _run("parse", *runs, "--json")
    (m,) = json.loads(p.stdout)
    assert m["complete"] is False and m["status"] == "failed" and m["failure"].startswith("OOM")
    assert m["log_complete"] is True and m["path"] == "results/h200/cap24-bs12/" + runs[0].name


def test_parse_a_crashed_run_without_a_log(results_tree):
    run = results_tree / "h200" / "seed" / "run-crashed"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"status": "failed", "reason": "crash (exit code 1): ValueError"}))
    p = _run("parse", run, "--json")
    assert p.returncode == 0, p.stderr
    (m,) = json.loads(p.stdout)
    assert m["complete"] is False and m["failure"].startswith("crash")


def test_parse_several_runs_is_one_row_each_with_mfu_as_a_percentage(results_tree):
    """A folder of runs, and several paths: a table, one row per run; --json has the full records."""
    p = _run("parse", results_tree / "h200", results_tree / "a100")
    assert p.returncode == 0, p.stderr
    rows = [ln for ln in p.stdout.splitlines() if "run-20261130-000000" in ln]
    assert len(rows) == 3 and "3 runs" in p.stdout
    assert all("%" in ln for ln in rows)  # MFU
    p = _run("parse", results_tree / "h200", results_tree / "a100", "--json")
    data = json.loads(p.stdout)
    assert len(data) == 3 and all("step_time_s" in m and "train_loss" in m for m in data)
    p = _run("parse", results_tree / "h200" / "bs16" / "run-20261130-000000")
    assert "MFU" in p.stdout and "%" in [ln for ln in p.stdout.splitlines() if "MFU" in ln][0]


def test_claims_prints_one_line_per_claim_no_wider_than_160():
    from analysis.judge.audit import config
    from analysis.judge.cli import LINE_WIDTH, one_line

    long = "[holds] x: " + "; ".join(f"part {i} with some words" for i in range(40))
    cut = one_line(long)
    assert len(cut) <= LINE_WIDTH and cut.endswith(" …") and long.startswith(cut[:-2])
    assert one_line("short") == "short"
    if not RESULTS.is_dir():
        return
    p = _run("claims", RESULTS)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines and max(map(len, lines)) <= LINE_WIDTH
    assert sum(ln.startswith("[") for ln in lines) == len(config.claims())
    assert "--json" in lines[-1] and "--plan" in lines[-1] and not any(ln.startswith("call ") for ln in lines)


def test_every_declared_make_target_has_a_recipe():
    """A .PHONY target without a recipe makes `make TARGET` say "Nothing to be done"."""
    import re

    text = (REPO / "Makefile").read_text()
    phony = re.search(r"^\.PHONY:(.*)$", text, re.M).group(1).split()
    for target in phony:
        m = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n)+)", text, re.M)
        assert m and m.group(1).strip(), f"make {target}: no recipe"
    assert re.search(r"^parse:.*\n\t.*swiftbench parse \$\(RESULTS\)", text, re.M)


# ------------------------------------------------------------------------------------------ small ones (issue 32)


def test_readme_s_parse_glob_of_the_committed_results_exits_0():
    """README: `swiftbench parse results/h200/*/*`. The glob names the all-reduce benchmark folders too (allreduce.json,
    no log): said on stderr as not runs, not an exit 2."""
    folders = sorted(str(p) for p in RESULTS.glob("h200/*/*") if p.is_dir())
    bench = [f for f in folders if Path(f, "allreduce.json").is_file()]
    assert bench, "the committed tree has benchmark folders"
    p = _run("parse", *folders)
    assert p.returncode == 0, p.stderr[-500:]
    assert all(f"not a run: {Path(b).relative_to(REPO)}" in p.stderr for b in bench)
    assert "runs (--json" in p.stdout
    p = _run("parse", bench[0])  # one benchmark folder alone is still no run to parse
    assert p.returncode == 2 and p.stderr.count("\n") == 1


def test_help_descriptions_are_whole_and_every_option_says_what_it_does():
    """`swiftbench --help` ended mid-list ("..., tables, report,"); run-all's --results and --no-progress and quick's
    --json had no help. Every option of every subcommand has a help text now."""
    import argparse

    from analysis import cli

    p = _run("--help")
    assert "tables, report, import, plugin, wheelhouse)." in " ".join(p.stdout.split())
    sub = cli.build_parser()._subparsers._group_actions[0]
    missing = [f"{name} {'/'.join(a.option_strings)}" for name, parser in sub.choices.items() for a in parser._actions
               if a.option_strings and not isinstance(a, argparse._HelpAction) and not a.help]
    assert missing == [], missing


def test_make_tables_parse_claims_and_report_do_not_need_the_training_venv():
    """Without .venv (the 2.3 GB training venv: torch, ms-swift), `make tables` (parse, claims, report) builds a light
    venv of the package's own dependencies and the report extra and runs there; where .venv is set up it is used."""
    import shutil as sh

    if sh.which("make") is None:
        pytest.skip("no make")
    for target in ("tables", "parse", "claims", "report"):
        p = subprocess.run(["make", "-n", target, "VENV=/nonexistent-venv"], capture_output=True, text=True, cwd=REPO)
        assert p.returncode == 0, p.stderr
        assert "torch" not in p.stdout and "requirements-swift" not in p.stdout and "[run" not in p.stdout, p.stdout
        assert ".venv-light/bin/swiftbench " + target in p.stdout and "pip install -q -e '.[report]'\n" in p.stdout


def test_plugin_copy_makes_the_folder(tmp_path):
    """`swiftbench plugin --copy DIR` makes DIR (and its parents) when missing; a DIR it cannot make is one line,
    exit 2."""
    dest = tmp_path / "a" / "b"
    p = _run("plugin", "--copy", dest)
    assert p.returncode == 0, p.stderr
    copy = Path(p.stdout.strip())
    assert copy == (dest / "swift_plugin.py").resolve() and copy.read_bytes() == \
        (Path(__file__).resolve().parents[1] / "experiments" / "recipes" / "swift_plugin.py").read_bytes()
    (tmp_path / "file").write_text("")
    p = _run("plugin", "--copy", tmp_path / "file" / "sub")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "cannot make the folder" in p.stderr, p.stderr


def test_the_printed_plugin_argument_fails_loudly_without_swiftbench(tmp_path):
    """The copyable command's plugin argument: bash -n accepts it; with `swiftbench` on PATH it is the plugin's path,
    without it bash says so and ms-swift gets a name it refuses (not an empty argument)."""
    from experiments.recipes import recipes

    line = f"printf '%s\\n' --external_plugins {recipes.PLUGIN_SHELL}"
    assert subprocess.run(["bash", "-n", "-c", line]).returncode == 0
    bare = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    p = subprocess.run(["bash", "-c", line], capture_output=True, text=True, env=bare, cwd=tmp_path)
    assert p.stdout.splitlines()[1] == "swiftbench-not-installed" and "swiftbench" in p.stderr, (p.stdout, p.stderr)
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "swiftbench").write_text("#!/bin/sh\necho /x/swift_plugin.py\n")
    (fake / "swiftbench").chmod(0o755)
    p = subprocess.run(["bash", "-c", line], capture_output=True, text=True, cwd=tmp_path,
                       env={**bare, "PATH": f"{fake}:/usr/bin:/bin"})
    assert p.stdout.splitlines() == ["--external_plugins", "/x/swift_plugin.py"] and not p.stderr
