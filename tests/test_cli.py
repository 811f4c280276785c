"""`swiftbench parse` and `swiftbench tables` as a user runs them: output, exit codes, one-line errors."""
import json
import subprocess
import sys

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


@pytest.mark.parametrize("argv,needle", [(["parse"], "required: path"), (["tables", "x", "--format", "xml"], "invalid choice"),
                                         (["nope"], "invalid choice")])
def test_argument_errors_are_one_line(argv, needle):
    p = _run(*argv)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and needle in p.stderr


def test_yaml_errors_name_file_and_line(tmp_path):
    from analysis.core.datafiles import read_yaml
    from analysis.core.errors import InputError

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
            "print(sorted(m for m in ('torch', 'swift', 'transformers', 'experiments.runner', "
            "'experiments.wheelhouse', 'analysis.judge.cli') if m in sys.modules))")
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

