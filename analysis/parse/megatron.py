"""Megatron-SWIFT's logging.jsonl (`megatron sft`, swift/megatron/callbacks/print.py) in the trainer's terms.

Its lines carry `"iteration": "a/b"` where `swift sft` writes `"global_step/max_steps": "a/b"`; the rest (loss,
grad_norm, learning_rate, memory(GiB), train_speed(s/it), elapsed_time, eval_* lines) has the same names. A line is
translated once, as it is read, so every later stage sees one format and says which one the log had.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

from analysis.parse.swiftkeys import ITERATION, STEP_OF_MAX

FORMAT = "megatron"
_ITER = re.compile(r"^\s*\d+\s*/\s*\d+\s*$")


def is_megatron_line(line: Mapping) -> bool:
    it = line.get(ITERATION)
    return STEP_OF_MAX not in line and isinstance(it, str) and bool(_ITER.match(it))


def normalise(line: dict) -> dict:
    """LINE with `global_step/max_steps` from its `iteration` (unchanged when it is not a Megatron-SWIFT line)."""
    if not is_megatron_line(line):
        return line
    return {**line, STEP_OF_MAX: line[ITERATION].replace(" ", "")}
