"""Reading the suite's YAML data files (recipes, seeds, hardware, planner constants, price tables) the one way:
an unreadable or invalid file is bad input that names the file and, for a syntax error, the line."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from analysis.errors import InputError


def read_yaml(path: str | Path, what: str = "") -> Any:
    """The parsed YAML document at PATH; InputError (file, line) when it cannot be read or parsed."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = (exc.strerror or exc) if isinstance(exc, OSError) else exc
        raise InputError(path, f"cannot read{' ' + what if what else ''}: {reason}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(path, f"not valid YAML: {getattr(exc, 'problem', None) or exc}",
                         mark.line + 1 if mark is not None else None) from None
