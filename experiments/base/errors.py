"""The one error the suite raises for bad input: the CLI turns it into one line and exit code 2."""
from __future__ import annotations

from pathlib import Path

# Exit code of a command that finished but left input out (a bad run folder of a tree, a folder outside the results
# layout): its output is complete for what it read, and stderr says what it skipped, one line each. 2 stays for bad
# input that stops everything.
SKIPPED_EXIT = 3


class InputError(Exception):
    """Bad input: names the file and, where it applies, the 1-based line number."""

    def __init__(self, path: str | Path | None, message: str, line: int | None = None):
        self.path = None if path is None else str(path)
        self.line = line
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.path or "<input>"
        if self.line is not None:
            where = f"{where}:{self.line}"
        return f"{where}: {self.message}"
