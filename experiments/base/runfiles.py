"""The run-folder contract: the name of every file a run folder holds, and what makes two folders the same run.

`results/<hw>/<experiment>/<run>/` is written by the runner and the launcher (experiments/) and read by every
analysis stage; both import the names from here, so a file is spelled once (tests/test_layers.py checks that no
other module spells one). The schema of each JSON file's fields (type and plausible range,
experiments/base/runschema.py) is here too:
`check(path, data)` is what every reader calls before it uses a field (analysis/parse/).

Result trees from several machines are merged (`swiftbench tables results other`, `make fleet-collect`); a run that
reached two of them by copying must count once, while runs from two hosts (different env.json, hence different
host ids) stay two. Both the merge of analysis/parse/results.py and the copier of experiments/cloud/fleet.py use
this one digest, so they agree on what a duplicate is.
"""
from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from experiments.base import runschema, userfiles
from experiments.base.errors import InputError
from experiments.base.runfolder import Env, Fingerprint, Host

# --- the files of a run folder
RUN_JSON = "run.json"              # the runner's record: status, key, command, labels, resumes, processes
ENV_JSON = "env.json"              # what it ran on: GPU, driver, packages, host fingerprint, dummy weights
LOGGING = "logging.jsonl"          # ms-swift's log: one JSON object per logging step, then the summary
ARGS_JSON = "args.json"            # ms-swift's parsed arguments
TOKENS = "tokens.jsonl"            # the launcher's real and padded tokens of every optimizer step
PROFILE_JSON = "profile.json"      # the launcher's profiler window: GPU busy, kernels, host stacks
LAUNCH_JSON = "launch.json"        # the launcher's options and what it measured around the run
SCHEDULE = "schedule.jsonl"        # the run's token schedule, known before it trains
GPM = "gpm.jsonl"                  # the GPU's busy share of every optimizer step (NVML GPM)
NVML_CSV = "nvml.csv"              # the runner's NVML samples (nvml.N.csv: an attempt before a resume)
STDOUT = "stdout.log"              # the training's console output
COMMAND_SH = "command.sh"          # the rendered command line
MODEL_CONFIG = "model_config.json"  # the model's config.json (shapes for MFU and memory)
NOTEBOOK = "sft.ipynb"             # the executed experiment notebook
RUNALL_LOG = "runall.log"          # the console output of the run-all that made it (device calls)
RESUME_CHECK = "resume_check.json"  # experiments/run/resume_check.py's record
ALLREDUCE_JSON = "allreduce.json"  # an interconnect benchmark's record (results/<hw>/allreduce/<run>/)
NCCL_LOG = "nccl.log"              # NCCL's log of that benchmark
# launch.json `harness`: the launcher's measuring design. 2 (2026-12-04): no profiler unless a run asks for one, no
# host-GPU sync and no file write per step (token counts and GPM lines batched); runs without it (1) were profiled at
# steps 10-12 and waited for the GPU at every step, which made the fast recipe's epoch 34 % longer than the pasted
# command's (results/findings/harness_h200_2026-12-04.md).
HARNESS_VERSION = 2
TRAINER_STATE = "trainer_state.json"  # inside a checkpoint: written last, so its presence means complete
PARTIAL = ".partial"               # suffix of a run folder `swiftbench import` is filling (.<run id>.partial)

GPM_METRICS = ("graphics_util", "sm_util", "tensor_util", "dram_bw_util")  # gpm.jsonl's per-step shares


ARGS_JSON_1X = "sft_args.json"     # ms-swift 1.x's name of args.json

# --- the most bytes each file can plausibly hold: a reader refuses more (a link to /dev/zero is refused as no regular
# file; a file this large is a runaway writer or no file of the run). Generous: a 100,000-step run logs ~400 MB.
_MIB = 2 ** 20
MAX_BYTES = {RUN_JSON: 16 * _MIB, ENV_JSON: 16 * _MIB, ARGS_JSON: 16 * _MIB, ARGS_JSON_1X: 16 * _MIB,
             LAUNCH_JSON: 16 * _MIB, MODEL_CONFIG: 16 * _MIB, RESUME_CHECK: 16 * _MIB, ALLREDUCE_JSON: 16 * _MIB,
             PROFILE_JSON: 256 * _MIB, LOGGING: 4096 * _MIB, TOKENS: 256 * _MIB, SCHEDULE: 256 * _MIB,
             GPM: 256 * _MIB, NCCL_LOG: 256 * _MIB, COMMAND_SH: 16 * _MIB}


LOG_LINE_BYTES = 256 * _MIB  # one line of logging.jsonl (the summary repeats the log history: ~half a long log)


def max_bytes(path: str | Path) -> int:
    """The size cap of a run-folder file by its name (MAX_BYTES; 16 MiB for a name the contract does not list)."""
    return MAX_BYTES.get(Path(path).name, 16 * _MIB)

# --- the schema of each file (tokens.jsonl: of each line)
SCHEMAS = {RUN_JSON: runschema.RUN_JSON, ENV_JSON: runschema.ENV_JSON, ARGS_JSON: runschema.ARGS_JSON,
           ARGS_JSON_1X: runschema.ARGS_JSON, PROFILE_JSON: runschema.PROFILE_JSON, TOKENS: runschema.TOKENS_LINE}


def check(path: str | Path, data: Any, schema: Any = None, line: int | None = None) -> Any:
    """DATA (read from PATH) against SCHEMA (default: the schema of PATH's file name); InputError naming the file,
    LINE and field when it does not hold: one line, and the folder is skipped. Returns DATA."""
    schema = SCHEMAS[Path(path).name] if schema is None else schema
    try:
        schema.check(data, "")
    except runschema.Invalid as exc:
        where = f"field {exc.where!r} is " if exc.where else ""
        raise InputError(path, f"{where}{exc.message}", line) from None
    return data


IDENTITY_FILES = (RUN_JSON, ENV_JSON, LOGGING)  # the runner's record, what ran where, ms-swift's log


def digest(run_dir: str | Path) -> str | None:
    """sha256 over the names and bytes of the IDENTITY_FILES a folder has; None when it has none of them. Read in
    blocks; one that is no regular file or beyond its size cap is bad input (InputError)."""
    h = hashlib.sha256()
    found = False
    for name in IDENTITY_FILES:
        path = Path(run_dir) / name
        if userfiles.present(path):
            found = True
            h.update(name.encode() + b"\0")
            with userfiles.open_regular(path, max_bytes(path)) as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            h.update(b"\0")
    return h.hexdigest() if found else None


def read_env_raw(run_dir: str | Path) -> dict:
    """A run folder's env.json as it is, unchecked ({} when missing or unreadable: runs from before it, a damaged
    file): for a look at one field (the host id). The parser's analysis.parse.results.read_env checks it instead."""
    path = Path(run_dir) / ENV_JSON
    try:
        data = userfiles.read_json(path, max_bytes(path))
    except InputError:
        return {}
    return data if isinstance(data, dict) else {}


def host_id(env: Mapping[str, Any]) -> str | None:
    """The stable host id in env.json's host fingerprint (experiments/record/host.py); None for runs made before it. The
    one reader of that field: the parser, the benchmark readers and the runner's "made on this host" test use it."""
    host = env.get(Env.HOST) if isinstance(env, dict) else None
    fingerprint = host.get(Host.FINGERPRINT) if isinstance(host, dict) else None
    return fingerprint.get(Fingerprint.HOST_ID) if isinstance(fingerprint, dict) else None
