"""Interleaved repeats (run-all --repeats N): the order of a set's runs, and a host-speed probe after each run.

A host drifts: one H200 host ran the fast recipe's epoch in 55.1, 50.6 and 37.8 s within 30 minutes, GPU clock
unchanged. A ratio between two recipes is only as good as the drift between their runs, so a set runs its items round
by round, each round in a rotated order (A B C, then B C A, then C A B): a linear drift then falls on every item alike,
and each round holds one run of every item, close together in time, for a paired ratio. An item with a plain twin
(--plain) runs beside it, launcher first in odd rounds and plain first in even ones (ABBA over two rounds), so that
the harness's overhead comes from pairs too. Every run records the host probe before it (env.json, as any run) and
after it (run.json `probe_after`), so that a slow run can be told from a slow recipe.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from experiments.base.errors import InputError

PROBE_BUDGET_S = 10.0  # the probe after a run (experiments/record/host.py); the one before it is env.json's


@dataclass(frozen=True)
class Item:
    """One run of a round: an experiment, cut at STEPS where set, as the printed command alone where PLAIN."""

    experiment: str
    steps: int | None = None
    plain: bool = False

    @property
    def label(self) -> str:
        return self.experiment + (f"@{self.steps}" if self.steps else "") + (" (plain)" if self.plain else "")


def parse_item(text: str) -> tuple[str, int | None]:
    """NAME or NAME@STEPS (a cut run of STEPS optimizer steps) -> (name, steps)."""
    name, sep, steps = text.strip().partition("@")
    if not name:
        raise InputError(None, f"--experiments: empty name in {text!r}")
    if not sep:
        return name, None
    if not steps.isdigit() or int(steps) < 1:
        raise InputError(None, f"--experiments {text!r}: NAME@STEPS wants a whole number of steps >= 1")
    return name, int(steps)


def rounds(items: list[tuple[str, int | None]], repeats: int, plain: set[str],
           plain_rounds: int | None = None) -> list[list[Item]]:
    """The runs of REPEATS rounds of ITEMS ((name, steps)), each round rotated by its number; an item named in PLAIN
    gets its plain twin right beside it, after it in odd rounds (1, 3, ...) and before it in even ones, in the first
    PLAIN_ROUNDS rounds (default: all)."""
    if repeats < 1:
        raise InputError(None, f"--repeats wants a whole number >= 1, got {repeats}")
    if plain_rounds is not None and not 1 <= plain_rounds <= repeats:
        raise InputError(None, f"--plain-rounds wants 1 to --repeats ({repeats}), got {plain_rounds}")
    unknown = plain - {name for name, _ in items}
    if unknown:
        raise InputError(None, f"--plain {', '.join(sorted(unknown))}: not among --experiments")
    out = []
    for r in range(repeats):
        k = r % len(items) if items else 0
        order = items[k:] + items[:k]
        runs: list[Item] = []
        for name, steps in order:
            pair = [Item(name, steps)]
            if name in plain and (plain_rounds is None or r < plain_rounds):
                twin = Item(name, steps, plain=True)
                pair = pair + [twin] if r % 2 == 0 else [twin] + pair
            runs += pair
        out.append(runs)
    return out


def set_id(host_id: str | None) -> str:
    """A set's name: its start time and host (one set, one host)."""
    return dt.datetime.now().strftime("%Y%m%d-%H%M%S") + (f"-{host_id}" if host_id else "")


def place(set_name: str, r: int, of: int, slot: int, item: Item) -> dict:
    """run.json `round`: which set, round (1-based) and slot (1-based) the run had, of how many rounds."""
    return {"set": set_name, "round": r + 1, "of": of, "slot": slot + 1, "item": item.label}
