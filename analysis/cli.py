"""`swiftbench`: one program, one subcommand per stage (parse, tables, plan, ...).

Each stage module registers its own subcommand through `register(subparsers)`, so the CLI stays a thin
dispatcher. Bad input raises `InputError`, printed here as one line with exit code 2.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from analysis.errors import InputError

# Modules that contribute a subcommand, in help order.
SUBCOMMAND_MODULES = ["analysis.parse_cmd", "analysis.tables", "analysis.planner", "analysis.report"]


class OneLineParser(argparse.ArgumentParser):
    """argparse prints usage plus the error; bad input here is one line and exit code 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="swiftbench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    for name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:  # a stage not built yet must not break the others
            if exc.name != name:
                raise
            continue
        module.register(sub)
    return parser



def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"swiftbench: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
