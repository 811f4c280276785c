"""`swiftbench`: one program, one subcommand per stage (run-all, claims, plan, quick, parse, profile, tables, report,
import, plugin, wheelhouse).

Each stage module registers its own subcommand through `register(subparsers)`, so the CLI stays a thin
dispatcher. Only the module of the subcommand asked for is imported (`swiftbench tables` loads no torch and no
ms-swift); `swiftbench --help` and `--version` import none. Bad input raises `InputError`; it and any other error a
command's input causes (a full disk, a name too long, a number too large) are one line here, exit code 2
(experiments.base.boundary). A command that read a tree but left a run folder out (parse, tables, report) says which
and why on stderr and exits with 3 (experiments.base.errors.SKIPPED_EXIT).
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from experiments.base import boundary
from experiments.base.argparsing import OneLineParser, first_paragraph

# Subcommand -> the module whose register(subparsers) adds it, in help order.
SUBCOMMAND_MODULES = {
    "run-all": "experiments.run.runner",
    "claims": "analysis.judge.cli",
    "plan": "analysis.estimate.cli",
    "quick": "analysis.estimate.quick_check",
    "parse": "analysis.present.parse_view",
    "profile": "analysis.present.profile_view",
    "tables": "analysis.present.tables",
    "report": "analysis.present.report.build",
    "import": "experiments.run.importer",
    "plugin": "experiments.recipes.plugin_command",
    "wheelhouse": "experiments.setup.wheelhouse",
}
# One line each for `swiftbench --help`, which imports no subcommand module.
SUBCOMMAND_HELP = {
    "run-all": "run every experiment of the matrix (or the claims audit's, --claims) for one hardware class",
    "claims": "the claims audit: verdicts, and the resolved recipes of its combinations",
    "plan": "will a fine-tune fit on each GPU class, how long, what cost",
    "quick": "quick runs' estimates of the full run, beside the full runs made after them",
    "parse": "parse ms-swift run folders or logging.jsonl files into metrics",
    "profile": "where a run's step time goes: GPU busy, top kernels, host stacks",
    "tables": "speedup and convergence tables of one or more results trees (merged)",
    "report": "executed report notebook -> OUT/index.html",
    "import": "copy plain `swift sft` output folders into a results tree, labelled imported",
    "plugin": "the path of the ms-swift plugin a copied recipe passes with --external_plugins",
    "wheelhouse": "wheels for an air-gapped GPU host: download and check, or install offline",
}
def version() -> str:
    """The installed swiftbench distribution's version, else pyproject.toml's (a checkout that is not installed)."""
    import importlib.metadata as md

    try:
        return md.version("swiftbench")
    except md.PackageNotFoundError:
        pass
    try:
        import tomllib
    except ImportError:  # Python 3.10
        return "unknown"
    try:
        with open(Path(__file__).resolve().parents[1] / "pyproject.toml", "rb") as f:
            return str(tomllib.load(f)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"


def _command_of(argv: list[str]) -> str | None:
    """The subcommand ARGV asks for (its first argument that is not an option), if it is one of ours."""
    for arg in argv:
        if arg == "--":
            return None
        if not arg.startswith("-"):
            return arg if arg in SUBCOMMAND_MODULES else None
    return None


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser for ARGV: when it names a subcommand, only that subcommand's module is imported and registered;
    otherwise (help, --version, a wrong name) every subcommand is listed from SUBCOMMAND_HELP without importing any.
    Without ARGV every module is imported and registered (the whole parser)."""
    parser = OneLineParser(prog="swiftbench", description=first_paragraph(__doc__))
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=OneLineParser)
    wanted = _command_of(argv) if argv is not None else None
    if argv is not None and wanted is None:
        for command, text in SUBCOMMAND_HELP.items():
            sub.add_parser(command, help=text)
        return parser
    for command in ([wanted] if wanted else SUBCOMMAND_MODULES):
        importlib.import_module(SUBCOMMAND_MODULES[command]).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    return boundary.guarded("swiftbench", lambda: args.func(args), boundary.inputs_of(args))


if __name__ == "__main__":
    sys.exit(main())
