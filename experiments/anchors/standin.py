"""Inputs of the anchor workloads (issue 44): the stand-in tokenizer, the local data, the workload definitions.

No Llama weights or tokenizer exist on the machines this suite runs on. Speed and memory depend on shapes and token
counts, not on weight values, so the anchor runs use random weights of Llama-3.1-8B's exact shapes (torchtune builds
them on the GPU, see experiments/anchors/tt_run.py) and a stand-in tokenizer with Llama 3's vocabulary size: Llama 3's
tokenizer.model is a tiktoken BPE file of 128,000 ranks (cl100k_base's 100k plus 28k), to which torchtune's
Llama3Tokenizer adds 256 special tokens (ids 128,000-128,255). The stand-in file holds the first 128,000 ranks of
Qwen's qwen.tiktoken (also cl100k-derived; shipped in the dashscope wheel), read by torchtune's own Llama3Tokenizer with
its own cl100k pre-tokenizer regex. Token counts come out close to Llama 3's on English text, not equal to them.

    python -m experiments.anchors.standin tokenizer --out .cache/anchor44/data/tokenizer.model
    python -m experiments.anchors.standin data --out .cache/anchor44/data   (copies ../shared/data/alpaca-gpt4-en.json)
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from experiments.base import paths
from experiments.base.errors import InputError

LLAMA3_BPE_RANKS = 128_000
LLAMA3_SPECIAL_TOKENS = 256
LLAMA3_VOCAB = LLAMA3_BPE_RANKS + LLAMA3_SPECIAL_TOKENS  # 128,256: Llama-3.1-8B's vocab_size
WORKLOADS_YAML = Path(__file__).with_name("workloads.yaml")
DATA_FILE = "alpaca-gpt4-en.json"
LABEL = "dummy weights, stand-in tokenizer"


def write_standin_tokenizer(out: str | Path, tiktoken_file: str | Path | None = None,
                            ranks: int = LLAMA3_BPE_RANKS) -> Path:
    """Write the first ``ranks`` lines ("base64-token rank") of qwen.tiktoken as a Llama-3-style tokenizer.model."""
    if tiktoken_file is None:
        from experiments.offline.dummy import qwen_tiktoken_path

        tiktoken_file = qwen_tiktoken_path()
    src = Path(tiktoken_file)
    try:
        lines = src.read_text(encoding="ascii").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(src, f"cannot read the tiktoken file: {e}") from None
    if len(lines) < ranks:
        raise InputError(src, f"{len(lines)} ranks, fewer than the {ranks} wanted")
    kept = lines[:ranks]
    for i, line in enumerate(kept):
        parts = line.split()
        if len(parts) != 2 or int(parts[1]) != i:
            raise InputError(src, f"line {i + 1} is not '<base64> {i}'", i + 1)
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(kept) + "\n", encoding="ascii")
    return path


def copy_data(out_dir: str | Path, src_dir: str | Path | None = None) -> Path:
    """Copy the local alpaca-gpt4-en sample (999 rows, {instruction, input, output}) into an ignored data folder."""
    src = Path(src_dir) if src_dir is not None else paths.ROOT.parent / "shared" / "data"
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if not (src / DATA_FILE).is_file():
        raise InputError(src / DATA_FILE, "not found (../shared/data/SOURCES.md says where it comes from)")
    shutil.copyfile(src / DATA_FILE, out / DATA_FILE)
    return out / DATA_FILE


def read_rows(path: str | Path) -> list[dict[str, str]]:
    """The alpaca rows of a JSON list file (keys instruction, input, output)."""
    p = Path(path)
    try:
        rows = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(p, f"cannot read the alpaca rows: {e}") from None
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) and "instruction" in r for r in rows):
        raise InputError(p, "expected a non-empty JSON list of {instruction, input, output} rows")
    return [{k: str(r.get(k) or "") for k in ("instruction", "input", "output")} for r in rows]


def workloads(path: str | Path = WORKLOADS_YAML) -> dict[str, dict[str, Any]]:
    import yaml

    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as e:
        raise InputError(p, f"cannot read the workloads: {e}") from None
    if not isinstance(data, dict):
        raise InputError(p, "not a mapping of workload name to definition")
    return data


def workload(name: str, path: str | Path = WORKLOADS_YAML) -> dict[str, Any]:
    data = workloads(path)
    if name not in data:
        raise InputError(Path(path), f"no workload {name!r} (there: {', '.join(sorted(data))})")
    entry = data[name]
    for key in ("recipe", "base_config", "overrides", "warmup_steps", "steady_steps"):
        if key not in entry:
            raise InputError(Path(path), f"{name}: no {key}")
    return entry


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.anchors.standin", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    t = sub.add_parser("tokenizer", help="write the stand-in Llama 3 tokenizer.model")
    t.add_argument("--out", required=True)
    t.add_argument("--tiktoken", default=None, help="qwen.tiktoken (default: the installed dashscope's)")
    d = sub.add_parser("data", help="copy the alpaca-gpt4-en sample into a data folder")
    d.add_argument("--out", required=True)
    d.add_argument("--src", default=None, help="default ../shared/data")
    a = p.parse_args(argv)
    try:
        print(write_standin_tokenizer(a.out, a.tiktoken) if a.what == "tokenizer" else copy_data(a.out, a.src))
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
