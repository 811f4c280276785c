"""The launcher's side files of a run folder: `tokens.jsonl` (tokens per optimizer step), `profile.json`,
`schedule.jsonl` (every step's tokens, known before training), `gpm.jsonl` (each step's GPU share from NVML's GPM
counters, experiments/record/gpm.py) and launch.json's quick-stop and allocator-cap records.

experiments/launch/launcher.py writes them beside ms-swift's log. A missing file is None (a run made without the
launcher);
an unreadable line is skipped, as a torn last line of a killed run would be.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonlines

from experiments.base import runfiles
from experiments.base.errors import InputError
from experiments.base.runfiles import GPM as GPM_FILE
from experiments.base.runfiles import GPM_METRICS
from experiments.base.runfiles import LAUNCH_JSON as LAUNCH_FILE
from experiments.base.runfiles import PROFILE_JSON as PROFILE_FILE
from experiments.base.runfiles import SCHEDULE as SCHEDULE_FILE
from experiments.base.runfiles import TOKENS as TOKENS_FILE


def _loads(text: str | bytes):
    """json.loads for jsonlines, with too deep a nesting (RecursionError) an invalid line like any other."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def jsonl(path: Path, errors: str = "replace") -> Iterator[tuple[int, Any]]:
    """(line number, value) of every line of a JSON Lines file, read with jsonlines; a line that is no JSON (the
    torn last line of a killed writer) is (line number, INVALID). Empty lines are skipped. OSError if unreadable."""
    count = [0]

    def lines():
        with open(path, encoding="utf-8-sig", errors=errors) as f:
            for line in f:
                count[0] += 1
                yield line

    reader = jsonlines.Reader(lines(), loads=_loads)
    while True:
        try:
            value = reader.read(allow_none=True)
        except EOFError:
            return
        except jsonlines.InvalidLineError as exc:
            if exc.line.strip():
                yield count[0], INVALID
            continue
        yield count[0], value


INVALID = object()  # jsonl()'s value for a line that is no JSON


def read_tokens(run_dir: str | Path) -> tuple[dict[int, int] | None, dict[int, int] | None]:
    """({step: real tokens}, {step: tokens with padding}) from tokens.jsonl; (None, None) without it."""
    path = Path(run_dir) / TOKENS_FILE
    real, padded = {}, {}
    try:
        for line_no, d in jsonl(path):
            if d is INVALID:  # a torn line of a killed run: skipped
                continue
            # a line that is JSON but no plausible count (a string step, 1e15 tokens in one step, a negative count)
            # is bad input: one such line made tokens/s 1.3e13 (issue 30)
            runfiles.check(path, d, line=line_no)
            step, tokens = int(d["step"]), int(d["tokens"])
            real[step] = tokens
            if d.get("padded_tokens") is not None:
                if d["padded_tokens"] < tokens:
                    raise InputError(path, f"padded_tokens {d['padded_tokens']} below tokens {tokens}", line_no)
                padded[step] = int(d["padded_tokens"])
    except OSError:
        return None, None
    return (real or None), (padded or None)


def read_profile(run_dir: str | Path) -> dict | None:
    """profile.json (None when missing or not JSON); a field of the wrong type or range is bad input."""
    path = Path(run_dir) / PROFILE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # unreadable, not UTF-8, not JSON, nested too deeply
        return None
    return runfiles.check(path, data) if isinstance(data, dict) else None


def read_schedule(run_dir: str | Path) -> list[dict] | None:
    """schedule.jsonl's steps in order ({"step", "micro_batches", "tokens", "padded_tokens", ...}); None without it,
    or when a step is missing or repeated (a schedule with a hole predicts nothing)."""
    steps = []
    try:
        for _, d in jsonl(Path(run_dir) / SCHEDULE_FILE, errors="strict"):
            if d is INVALID:
                return None
            steps.append({**d, "step": int(d["step"]), "tokens": int(d["tokens"]),
                          "padded_tokens": int(d["padded_tokens"]), "micro_batches": int(d["micro_batches"])})
    except (OSError, KeyError, TypeError, ValueError, OverflowError):  # ValueError: not UTF-8 too
        return None
    if not steps or [s["step"] for s in steps] != list(range(1, len(steps) + 1)):
        return None
    return steps


def read_gpm(run_dir: str | Path) -> dict[int, dict] | None:
    """{step: {"wall_s", "graphics_util", "sm_util", "tensor_util", "dram_bw_util"}} from gpm.jsonl (a secondary
    metric NVML did not give is None; a line without graphics_util, the one every figure uses, is skipped; a resumed
    run's repeated step: the later line wins); None without the file."""
    out: dict[int, dict] = {}
    try:
        lines = list(jsonl(Path(run_dir) / GPM_FILE))
    except OSError:
        return None
    for _, d in lines:
        try:
            wall = float(d["wall_s"])
            util = float(d["graphics_util"])
            if not (wall > 0 and 0 <= util <= 100.5):  # NaN, negative or impossible: a broken line, skipped
                continue
            row: dict[str, float | None] = {"wall_s": wall}
            for name in GPM_METRICS:
                v = d.get(name)
                row[name] = float(v) if v is not None else None
            out[int(d["step"])] = row
        except (KeyError, TypeError, ValueError, OverflowError):  # INVALID or a line without its fields
            continue
    return out or None


def read_quick(run_dir: str | Path) -> dict | None:
    """launch.json's record of a quick run's stop (experiments/launch/quick_stop.py); None for other runs."""
    try:
        data = json.loads((Path(run_dir) / LAUNCH_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    quick = data.get("quick") if isinstance(data, dict) else None
    return quick if isinstance(quick, dict) else None


def read_mem_cap(run_dir: str | Path) -> dict | None:
    """launch.json's record of the allocator cap (experiments/launch/launcher.py apply_memory_cap): `requested_gib`,
    `applied`, and where applied `cap_bytes`; None when the run had no cap or the record is not of that shape (a
    memory verdict must not rest on a cap it cannot read)."""
    try:
        data = json.loads((Path(run_dir) / LAUNCH_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    cap = data.get("mem_cap") if isinstance(data, dict) else None
    if not isinstance(cap, dict):
        return None
    requested, applied, cap_bytes = cap.get("requested_gib"), cap.get("applied"), cap.get("cap_bytes")
    if not isinstance(requested, (int, float)) or not _positive(requested) or not isinstance(applied, bool):
        return None
    out = {"requested_gib": float(requested), "applied": applied}
    if applied:
        if not _positive(cap_bytes) or not isinstance(cap_bytes, int):
            return None
        out["cap_bytes"] = cap_bytes
    return out


def _positive(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and 0 < x < float("inf")


def read(run_dir: str | Path) -> dict:
    """The RunRecord fields of the side files."""
    real, padded = read_tokens(run_dir)
    return {"tokens_by_step": real, "padded_by_step": padded, "profile": read_profile(run_dir),
            "schedule": read_schedule(run_dir), "quick": read_quick(run_dir), "gpm_by_step": read_gpm(run_dir),
            "mem_cap": read_mem_cap(run_dir)}
