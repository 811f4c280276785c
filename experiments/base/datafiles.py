"""Reading the suite's data files (YAML: recipes, seeds, hardware, planner constants; JSON objects: env.json, run.json)
the one way: an unreadable or invalid file is bad input that names the file and, for a syntax error, the line."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from experiments.base.errors import InputError


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


def read_json_object(path: str | Path) -> dict | None:
    """The JSON object in PATH (None when the file does not exist); InputError (file, line) when it is broken."""
    import json

    path = Path(path)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))  # a BOM (a Windows editor's save) is no error
    except json.JSONDecodeError as exc:
        raise InputError(path, f"not valid JSON: {exc.msg}", exc.lineno) from None
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not UTF-8 text ({exc.reason})") from None
    except RecursionError:
        raise InputError(path, "JSON nested too deeply") from None
    except OSError as exc:  # unreadable (permissions), or a folder in its place
        raise InputError(path, f"cannot be read ({exc.strerror or exc})") from None
    if not isinstance(data, dict):
        raise InputError(path, "not a JSON object")
    return data
