"""The folders under a root that hold a given file name, found the way a user lays a tree out: through symlinks
(`results/h200` a link to another disk, one run folder linked in from elsewhere), each real folder once, a link back
to a folder above it (a loop) said and not followed, and a folder that cannot be listed said, never passed over.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from experiments.base.userfiles import reason


@dataclass
class Found:
    """FOLDERS holding one of the names (sorted); SKIPPED: (folder, why) of folders that could not be listed, so
    whatever lies below them is left out; NOTES: links to a folder already read (a loop, or a second way to it)."""

    folders: list[Path] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _is_below(path: Path, above: Path) -> bool:
    return path != above and above in path.parents


def folders_with(root: str | Path, names: Iterable[str], skip_prefix: str = "checkpoint-") -> Found:
    """Every folder under ROOT (ROOT too) with an entry named one of NAMES, whatever that entry is (a FIFO or a folder
    named run.json is the reader's to refuse, not to pass over); folders whose name starts with SKIP_PREFIX (a
    training's checkpoints) are not entered."""
    wanted = frozenset(names)
    out = Found()
    seen: dict[tuple[int, int], Path] = {}
    stack = [Path(root)]
    while stack:
        folder = stack.pop()
        try:
            st = os.stat(folder)
        except OSError as exc:
            out.skipped.append((folder, f"cannot be read ({reason(exc)})"))
            continue
        key = (st.st_dev, st.st_ino)
        if key in seen:
            first = seen[key]
            what = "a symlink loop back to" if _is_below(folder, first) else "another way to"
            out.notes.append(f"{folder} is {what} {first}: read once")
            continue
        seen[key] = folder
        try:
            with os.scandir(folder) as it:
                entries = [(e.name, e) for e in it]
        except OSError as exc:
            out.skipped.append((folder, f"cannot be read ({reason(exc)}): nothing below it is read"))
            continue
        if any(name in wanted for name, _ in entries):
            out.folders.append(folder)
        for name, entry in sorted(entries, key=lambda x: x[0], reverse=True):
            if name in wanted or name.startswith(skip_prefix):
                continue
            try:
                is_dir = entry.is_dir()  # follows a symlink; a dangling or looping one is no folder
            except OSError:
                continue
            if is_dir:
                stack.append(folder / name)
    out.folders.sort()
    return out
