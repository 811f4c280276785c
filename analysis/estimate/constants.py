"""A constants file read: data/planner.yaml (the memory model and the roofline) and data/time_model.yaml (the time
model), each a tree of sections whose leaves are constants that say their value and kind (and why, or their source).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.base.datafiles import read_yaml
from experiments.base.errors import InputError


@dataclass(frozen=True, eq=False)
class Constants:
    """A constants file: every constant's value and kind under its dotted name (its sections joined by dots, as the
    file spells them: the names are the file's data, so both tables are keyed by them). `c["memory.x"]` is the value.
    """

    path: Path
    values: dict[str, Any]  # dotted name -> value
    kinds: dict[str, str]   # dotted name -> kind (physical, calibrated, measured, published, assumption)

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def __contains__(self, name: object) -> bool:
        return name in self.values

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(name, default)


def read_constants(path: str | Path, problem: Callable[[str, dict], str | None]) -> Constants:
    """PATH's constants; PROBLEM(name, entry) says what is wrong with an entry (bad input naming it), None if nothing.
    A leaf that is no constant is bad input too."""
    path = Path(path)
    values: dict[str, Any] = {}
    kinds: dict[str, str] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict) and "value" in node:
            why = problem(prefix, node)
            if why:
                raise InputError(path, why)
            values[prefix] = node["value"]
            kinds[prefix] = node["kind"]
        elif isinstance(node, dict):
            for key, child in node.items():
                walk(child, f"{prefix}.{key}" if prefix else str(key))
        else:
            raise InputError(path, f"{prefix!r} is neither a section nor a constant")

    walk(read_yaml(path), "")
    return Constants(path, values, kinds)
