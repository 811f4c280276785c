"""Reading the suite's data files (YAML: recipes, seeds, hardware, planner constants, a user's price table; JSON
objects: env.json, run.json) the one way: an unreadable or invalid file is bad input that names the file and, for a
syntax error, the line. Reads are bounded (experiments.base.userfiles: regular files of a plausible size) and a YAML
document's aliases may not expand it past MAX_YAML_NODES (a "billion laughs" file is a few hundred bytes)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from experiments.base import userfiles
from experiments.base.errors import InputError

MAX_YAML_NODES = 1_000_000  # nodes of a YAML document with every alias expanded


def _expanded_size(root: yaml.Node, path: Path) -> int:
    """Nodes of ROOT with its aliases expanded (a shared node counts each time it is used); bad input for a node
    that contains itself."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    open_nodes: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        if done:
            open_nodes.discard(key)
            sizes[key] = min(1 + sum(sizes[id(c)] for c in children), MAX_YAML_NODES + 1)
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise InputError(path, "a YAML alias that contains itself")
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in sizes)
    return sizes[id(root)]


def read_yaml(path: str | Path, what: str = "") -> Any:
    """The parsed YAML document at PATH; InputError (file, line) when it cannot be read or parsed, or when its
    aliases expand it past MAX_YAML_NODES."""
    path = Path(path)
    try:
        text = userfiles.read_text(path, userfiles.DATA_FILE_BYTES)
    except InputError as exc:
        why = exc.message
        if why.startswith("cannot be read ("):
            why = why.removeprefix("cannot be read (").removesuffix(")")
        raise InputError(path, f"cannot read{' ' + what if what else ''}: {why}") from None
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node, path) > MAX_YAML_NODES:
            raise InputError(path, f"its aliases expand it past {MAX_YAML_NODES:,} values (a 'billion laughs' "
                                   "document?)")
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(path, f"not valid YAML: {getattr(exc, 'problem', None) or type(exc).__name__}",
                         mark.line + 1 if mark is not None else None) from None
    except RecursionError:
        raise InputError(path, "YAML nested too deeply") from None
    finally:
        loader.dispose()


def read_json_object(path: str | Path, limit: int = userfiles.DATA_FILE_BYTES) -> dict | None:
    """The JSON object in PATH (None when nothing is there); InputError (file, line) when it is broken, not a
    regular file (a FIFO, a folder, a symlink loop) or larger than LIMIT bytes."""
    path = Path(path)
    if not os.path.lexists(path):
        return None
    data = userfiles.read_json(path, limit)
    if not isinstance(data, dict):
        raise InputError(path, "not a JSON object")
    return data
