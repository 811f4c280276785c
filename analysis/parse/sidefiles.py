"""The launcher's side files of a run folder: `tokens.jsonl` (tokens per optimizer step) and `profile.json`.

experiments/launch.py writes them beside ms-swift's log. A missing file is None (a run made without the launcher);
an unreadable line is skipped, as a torn last line of a killed run would be.
"""
from __future__ import annotations

import json
from pathlib import Path

TOKENS_FILE = "tokens.jsonl"
PROFILE_FILE = "profile.json"


def read_tokens(run_dir: str | Path) -> tuple[dict[int, int] | None, dict[int, int] | None]:
    """({step: real tokens}, {step: tokens with padding}) from tokens.jsonl; (None, None) without it."""
    try:
        text = (Path(run_dir) / TOKENS_FILE).read_text(encoding="utf-8")
    except OSError:
        return None, None
    real, padded = {}, {}
    for raw in text.splitlines():
        try:
            d = json.loads(raw)
            step = int(d["step"])
            real[step] = int(d["tokens"])
            if d.get("padded_tokens") is not None:
                padded[step] = int(d["padded_tokens"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            continue
    return (real or None), (padded or None)


def read_profile(run_dir: str | Path) -> dict | None:
    try:
        data = json.loads((Path(run_dir) / PROFILE_FILE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def read(run_dir: str | Path) -> dict:
    """The RunRecord fields of the side files."""
    real, padded = read_tokens(run_dir)
    return {"tokens_by_step": real, "padded_by_step": padded, "profile": read_profile(run_dir)}
