"""argparse for the suite's command lines: bad usage is one line on stderr and exit code 2, like InputError."""
from __future__ import annotations

import argparse


class OneLineParser(argparse.ArgumentParser):
    """argparse prints usage plus the error; bad input here is one line and exit code 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def first_paragraph(doc: str | None) -> str:
    """A module docstring's first paragraph as one line: a --help description is the whole sentence, never its first
    line cut mid-list."""
    return " ".join((doc or "").strip().split("\n\n")[0].split())
