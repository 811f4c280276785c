"""One copy of what many run records repeat.

A tree's runs of one recipe have the same args.json values but for a few (paths, seeds), the same host's package list
in env.json and the same token schedule; 5,000 run folders held each of them 5,000 times (170 KB a record, 1.1 GB).
Within `sharing()` (a scan of a tree), equal values read from two folders become one object. A record never changes
what it holds once read, so the sharing is invisible to its readers; outside a scan nothing is shared.
"""
from __future__ import annotations

import contextlib
import hashlib
import sys
from collections.abc import Callable, Iterator
from typing import TypeVar

T = TypeVar("T")
_ACTIVE: list[dict] = []  # the memo of each open sharing(), innermost last


@contextlib.contextmanager
def sharing() -> Iterator[None]:
    """Equal values read inside share one object (until the outermost sharing() ends: nothing is kept after it)."""
    _ACTIVE.append(_ACTIVE[-1] if _ACTIVE else {})
    try:
        yield
    finally:
        _ACTIVE.pop()


def fields(obj: T) -> T:
    """OBJ (a JSON object) with each of its strings interned and each list or object value replaced by an equal one
    read before, where sharing() is on; OBJ itself otherwise."""
    if not _ACTIVE or obj.__class__ is not dict:
        return obj
    memo = _ACTIVE[-1]
    out = {}
    for key, value in obj.items():  # type: ignore[attr-defined]  # a dict: checked above
        cls = value.__class__
        if cls is str:
            value = sys.intern(value)
        elif (cls is dict or cls is list) and value:
            # repr tells 1, 1.0 and True apart as == does not, and is C code (a sorted JSON dump hashed took 3x)
            value = memo.setdefault(("value", repr(value)), value)
        out[sys.intern(key) if key.__class__ is str else key] = value
    return out  # type: ignore[return-value]  # a dict as OBJ was


def by_content(kind: str, blob: bytes, make: Callable[[], T]) -> T:
    """MAKE() of a file's bytes BLOB, or, where sharing() is on, the value made before from the same bytes (a token
    schedule that several runs of one recipe hold)."""
    if not _ACTIVE:
        return make()
    memo = _ACTIVE[-1]
    key = (kind, hashlib.sha1(blob, usedforsecurity=False).digest())
    if key not in memo:
        memo[key] = make()
    return memo[key]
