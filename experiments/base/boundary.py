"""The error boundary of every command: whatever a command's input made go wrong is one line on stderr, exit 2.

Bad input the readers recognise is an InputError that names the file and the line. Anything else that escapes a
command (a file system error such as a full disk or a name too long, a number no float holds, a division by a zero
that came from a file, memory exhausted by a huge input) is said here in words, with the file where the error knows
it and the command's inputs where it does not, and never with the contents of a file (an exception's own text may
quote them). SWIFTBENCH_TRACEBACK=1 re-raises it, for a developer.
"""
from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable

from experiments.base import paths
from experiments.base.errors import InputError
from experiments.base.userfiles import reason, shown

INPUT_ARGS = ("path", "results_dir", "src", "from_args", "model", "prices", "results", "seeds", "out")


def inputs_of(args: object) -> list[str]:
    """The file and folder arguments of a parsed command line (ARGS), in words, for an error that knows no file (the
    suite's own data files, such as the default price table, are no user's input)."""
    out: list[str] = []
    for name in INPUT_ARGS:
        value = getattr(args, name, None)
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(v, (str, os.PathLike)) and str(v) and str(v) not in out \
                    and os.path.dirname(os.path.abspath(v)) != str(paths.DATA):
                out.append(str(v))
    return out


def as_input_error(exc: BaseException, inputs: Iterable[str] = ()) -> InputError:
    """EXC as bad input: the file it names, else the command's INPUTS; the cause in words, not the exception's text."""
    where = ", ".join(inputs) or None
    if isinstance(exc, InputError):
        return exc
    if isinstance(exc, OSError):
        name = exc.filename if exc.filename is not None else where
        other = f" and {exc.filename2}" if exc.filename2 is not None else ""
        return InputError(f"{name}{other}" if name is not None else None, reason(exc))
    if isinstance(exc, json.JSONDecodeError):
        return InputError(where, f"not valid JSON ({exc.msg})", exc.lineno)
    if isinstance(exc, UnicodeError):
        return InputError(where, "not UTF-8 text")
    if isinstance(exc, MemoryError):
        return InputError(where, "too large to hold in memory")
    if isinstance(exc, RecursionError):
        return InputError(where, "nested too deeply")
    if isinstance(exc, OverflowError):
        return InputError(where, "a number too large for a float")
    if isinstance(exc, ZeroDivisionError):
        return InputError(where, "a zero where a size or a count must be positive")
    if type(exc).__module__.split(".")[0] == "yaml":
        return InputError(where, "not valid YAML")
    return InputError(where, f"a value of the wrong type or out of range ({type(exc).__name__})")


def print_error(prog: str, exc: InputError) -> int:
    """One line, control characters escaped (a file name with a newline or an ANSI sequence stays one line)."""
    print(shown(f"{prog}: error: {exc}"), file=sys.stderr)
    return 2


def guarded(prog: str, command: Callable[[], int | None], inputs: Iterable[str] = ()) -> int:
    """COMMAND's exit code; any error it raises is one line and exit 2 (a closed pipe: 0)."""
    try:
        return int(command() or 0)
    except BrokenPipeError:
        return 0
    except InputError as exc:
        return print_error(prog, exc)
    except Exception as exc:  # noqa: BLE001 - the boundary: any error a command's input causes is one line
        if os.environ.get("SWIFTBENCH_TRACEBACK"):
            raise
        return print_error(prog, as_input_error(exc, inputs))
