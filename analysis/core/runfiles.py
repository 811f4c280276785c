"""What makes two run folders the same run: the bytes of the files a run writes once and keeps.

Result trees from several machines are merged (`swiftbench tables results other`, `make fleet-collect`); a run that
reached two of them by copying must count once, while runs from two hosts (different env.json, hence different
host ids) stay two. Both the merge of analysis/parse/results.py and the copier of experiments/fleet.py use this one
digest, so they agree on what a duplicate is.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

IDENTITY_FILES = ("run.json", "env.json", "logging.jsonl")  # the runner's record, what ran where, ms-swift's log


def digest(run_dir: str | Path) -> str | None:
    """sha256 over the names and bytes of the IDENTITY_FILES a folder has; None when it has none of them."""
    h = hashlib.sha256()
    found = False
    for name in IDENTITY_FILES:
        path = Path(run_dir) / name
        if path.is_file():
            found = True
            h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest() if found else None


def read_env(run_dir: str | Path) -> dict:
    """A run folder's env.json as a dict ({} when missing or unreadable: runs from before it, a damaged file)."""
    import json

    try:
        data = json.loads((Path(run_dir) / "env.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def host_id(env: dict) -> str | None:
    """The stable host id in env.json's host fingerprint (experiments/host.py); None for runs made before it. The one
    reader of that field: the parser, the benchmark readers and the runner's "made on this host" test use it."""
    host = env.get("host") if isinstance(env, dict) else None
    fingerprint = host.get("fingerprint") if isinstance(host, dict) else None
    return fingerprint.get("host_id") if isinstance(fingerprint, dict) else None
