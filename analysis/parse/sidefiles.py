"""The launcher's side files of a run folder: `tokens.jsonl` (tokens per optimizer step), `profile.json`,
`schedule.jsonl` (every step's tokens, known before training), `gpm.jsonl` (each step's GPU share from NVML's GPM
counters, experiments/record/gpm.py) and launch.json's quick-stop and allocator-cap records.

experiments/launch/launcher.py writes them beside ms-swift's log. A missing file is None (a run made without the
launcher); a torn line of a JSON Lines file is skipped, as a killed run leaves one. Something by a side file's name
that is no regular file (a FIFO would block the reader for ever), that cannot be read or is beyond its size cap, and a
JSON file cut short, are bad input: the folder is skipped and said, not read as a run without that file.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from analysis.parse import shared
from analysis.parse.runfile_rows import GpmRow, LauncherOptions, LaunchJson, ProfileJson, QuickStop, ScheduleStep
from analysis.parse.runfile_rows import MemCap as MemCapRow
from experiments.base import runfiles, runschema, userfiles
from experiments.base.errors import InputError
from experiments.base.runfiles import GPM as GPM_FILE
from experiments.base.runfiles import LAUNCH_JSON as LAUNCH_FILE
from experiments.base.runfiles import PROFILE_JSON as PROFILE_FILE
from experiments.base.runfiles import SCHEDULE as SCHEDULE_FILE
from experiments.base.runfiles import TOKENS as TOKENS_FILE
from experiments.base.runfolder import CompileCache, Gpm, Launch, MemCap, Tokens


def jsonl(path: Path, errors: str = "replace") -> Iterator[tuple[int, Any]]:
    """(line number, value) of every line of a JSON Lines file; a line that is no JSON (the torn last line of a killed
    writer, one nested too deeply) is (line number, INVALID). Empty lines are skipped, a BOM is no error. Only a
    regular file within its size cap is read (experiments.base.userfiles): anything else is InputError."""
    return _values(userfiles.lines(path, runfiles.max_bytes(path)), errors)


def _values(lines: Iterable[tuple[int, bytes]], errors: str = "replace") -> Iterator[tuple[int, Any]]:
    """jsonl() of numbered raw lines."""
    for n, raw in lines:
        if n == 1 and raw[:3] == b"\xef\xbb\xbf":
            raw = raw[3:]
        text = raw.decode("utf-8", errors)
        if not text.strip():
            continue
        try:
            yield n, json.loads(text)
        except (ValueError, RecursionError):
            yield n, INVALID


def _blob_lines(blob: bytes) -> Iterator[tuple[int, bytes]]:
    return enumerate(blob.splitlines(keepends=True), 1)


INVALID = object()  # jsonl()'s value for a line that is no JSON


def only_last_torn(path: Path, pairs: Iterable[tuple[int, Any]]) -> Iterator[tuple[int, Any]]:
    """PAIRS (jsonl()'s) without a line that is no JSON where it is the last (a killed writer's torn line); one
    before another line is bad input naming its line, never skipped unsaid (tokens.jsonl's counts make tokens/s)."""
    torn: int | None = None
    for line_no, d in pairs:
        if torn is not None:
            raise InputError(path, "not valid JSON (only a killed run's last line may be cut short)", torn)
        if d is INVALID:
            torn = line_no
            continue
        yield line_no, d


_COUNT_MAX = {Tokens.TOKENS: runschema.STEP_TOKENS, Tokens.PADDED_TOKENS: runschema.STEP_TOKENS,
              Tokens.LABEL_TOKENS: runschema.STEP_TOKENS, Tokens.MICRO_BATCHES: 10**8}


def _plain_tokens_line(d: Any) -> bool:
    """A tokens.jsonl line of whole numbers in range (what the launcher writes): the schema check can be skipped."""
    if d.__class__ is not dict or d.get(Tokens.TOKENS) is None:
        return False
    step = d.get(Tokens.STEP)
    if step.__class__ is not int or not 0 <= step <= runschema.STEPS:
        return False
    for key, most in _COUNT_MAX.items():
        v = d.get(key)
        if v is not None and (v.__class__ is not int or not 0 <= v <= most):
            return False
    return True


def read_tokens(run_dir: str | Path, resumed: bool = False, step_cap: tuple[int, str] | None = None,
                max_step: int | None = None) -> tuple[dict[int, int] | None, dict[int, int] | None]:
    """({step: real tokens}, {step: tokens with padding}) from tokens.jsonl; (None, None) without it.

    Bad input (InputError, the folder is skipped): a line of no plausible count (runschema.TOKENS_LINE), padding below
    the real tokens, more tokens in a step than it can hold (STEP_CAP: the most and why, record.step_token_cap), a
    step past the run's last (MAX_STEP), a step recorded again with other counts unless the run was RESUMED (then the
    resumed training's count, the later line, wins), a line that is no JSON before the last. A torn last line of a
    killed run is skipped."""
    path = Path(run_dir) / TOKENS_FILE
    if not userfiles.present(path):
        return None, None
    blob = userfiles.read_bytes(path, runfiles.max_bytes(path))
    return shared.by_content(f"tokens {resumed} {step_cap} {max_step}", blob,
                             lambda: _tokens(path, blob, resumed, step_cap, max_step))


def _tokens(path: Path, blob: bytes, resumed: bool, step_cap: tuple[int, str] | None,
            max_step: int | None) -> tuple[dict[int, int] | None, dict[int, int] | None]:
    """read_tokens of tokens.jsonl's bytes BLOB."""
    real: dict[int, int] = {}
    padded: dict[int, int] = {}
    for line_no, d in only_last_torn(path, _values(_blob_lines(blob))):
        if not _plain_tokens_line(d):  # a string step, 1e15 tokens in one step, a negative count: the schema says
            runfiles.check(path, d, line=line_no)
        step, tokens = int(d[Tokens.STEP]), int(d[Tokens.TOKENS])
        pad = d.get(Tokens.PADDED_TOKENS)
        if pad is not None and pad < tokens:
            raise InputError(path, f"padded_tokens {pad} below tokens {tokens}", line_no)
        most = int(pad) if pad is not None else tokens
        if step_cap is not None and most > step_cap[0]:
            raise InputError(path, f"{most:,} tokens in step {step}, more than its samples can hold "
                                   f"({step_cap[0]:,}: {step_cap[1]})", line_no)
        if max_step is not None and step > max_step:
            raise InputError(path, f"step {step}, past the run's last step {max_step}", line_no)
        if step in real and not resumed and (real[step], padded.get(step)) != (tokens, pad):
            raise InputError(path, f"step {step} recorded twice with different counts, and run.json records no "
                                   "resume", line_no)
        real[step] = tokens
        if pad is not None:
            padded[step] = int(pad)
    return (real or None), (padded or None)


def read_profile(run_dir: str | Path) -> ProfileJson | None:
    """profile.json (None when missing); a file cut short, not JSON, not a regular file or with a field of the wrong
    type or range is bad input."""
    path = Path(run_dir) / PROFILE_FILE
    if not userfiles.present(path):
        return None
    data = userfiles.read_json(path, runfiles.max_bytes(path))
    if not isinstance(data, dict):
        raise InputError(path, "not a JSON object")
    return shared.fields(runfiles.check(path, data))


def read_schedule(run_dir: str | Path) -> list[ScheduleStep] | None:
    """schedule.jsonl's steps in order ({"step", "micro_batches", "tokens", "padded_tokens", ...}); None without it,
    or when a step is missing or repeated (a schedule with a hole predicts nothing). One that is no regular file or
    beyond its size cap is bad input."""
    path = Path(run_dir) / SCHEDULE_FILE
    if not userfiles.present(path):
        return None
    blob = userfiles.read_bytes(path, runfiles.max_bytes(path))
    return shared.by_content("schedule", blob, lambda: _schedule(blob))


def _schedule(blob: bytes) -> list[ScheduleStep] | None:
    """read_schedule of schedule.jsonl's bytes BLOB."""
    steps: list[ScheduleStep] = []
    try:
        for _, d in _values(_blob_lines(blob), errors="strict"):
            if d is INVALID:
                return None
            steps.append({**d, Tokens.STEP: int(d[Tokens.STEP]), Tokens.TOKENS: int(d[Tokens.TOKENS]),
                          Tokens.PADDED_TOKENS: int(d[Tokens.PADDED_TOKENS]),
                          Tokens.MICRO_BATCHES: int(d[Tokens.MICRO_BATCHES])})
    except (KeyError, TypeError, ValueError, OverflowError):  # ValueError: not UTF-8 too
        return None
    if not steps or [s[Tokens.STEP] for s in steps] != list(range(1, len(steps) + 1)):
        return None
    return steps


def read_gpm(run_dir: str | Path, resumed: bool = False) -> dict[int, GpmRow] | None:
    """{step: {"wall_s", "graphics_util", "sm_util", "tensor_util", "dram_bw_util"}} from gpm.jsonl (a secondary
    metric NVML did not give is None; a line without graphics_util, the one every figure uses, is skipped; a RESUMED
    run's repeated step: the later line wins, another run's is bad input, as in tokens.jsonl); None without the file,
    bad input when it is no regular file."""
    path = Path(run_dir) / GPM_FILE
    if not userfiles.present(path):
        return None
    out: dict[int, GpmRow] = {}
    for line_no, d in jsonl(path):
        try:
            wall = float(d[Gpm.WALL_S])
            util = float(d[Gpm.GRAPHICS_UTIL])
            if not (wall > 0 and 0 <= util <= 100.5):  # NaN, negative or impossible: a broken line, skipped
                continue
            row: GpmRow = {Gpm.WALL_S: wall, Gpm.GRAPHICS_UTIL: util, Gpm.SM_UTIL: _metric(d, Gpm.SM_UTIL),
                           Gpm.TENSOR_UTIL: _metric(d, Gpm.TENSOR_UTIL),
                           Gpm.DRAM_BW_UTIL: _metric(d, Gpm.DRAM_BW_UTIL)}
            step = int(d[Gpm.STEP])
        except (KeyError, TypeError, ValueError, OverflowError):  # INVALID or a line without its fields
            continue
        if step in out and out[step] != row and not resumed:
            raise InputError(path, f"step {step} recorded twice with different values, and run.json records no "
                                   "resume", line_no)
        out[step] = row
    return out or None


def _metric(line: dict, name: str) -> float | None:
    v = line.get(name)
    return float(v) if v is not None else None


def read_launch(run_dir: str | Path) -> LaunchJson | None:
    """launch.json's object (the launcher's record of a run: options, quick stop, memory cap); None without the file
    or where it is not an object. One cut short, not JSON or not a regular file is bad input, as a broken
    profile.json is."""
    path = Path(run_dir) / LAUNCH_FILE
    if not userfiles.present(path):
        return None
    data = userfiles.read_json(path, runfiles.max_bytes(path))
    return cast("LaunchJson", data) if isinstance(data, dict) else None


def read_quick(run_dir: str | Path, launch: LaunchJson | None = None) -> QuickStop | None:
    """launch.json's record of a quick run's stop (experiments/launch/quick_stop.py); None for other runs and without
    the file. LAUNCH: the file's object where the caller has read it."""
    launch = read_launch(run_dir) if launch is None else launch
    quick = launch.get(Launch.QUICK) if launch else None
    return cast("QuickStop", quick) if isinstance(quick, dict) else None


def read_launch_options(run_dir: str | Path, launch: LaunchJson | None = None) -> LauncherOptions | None:
    """launch.json's `options` (the launcher's command line, parsed): for a run made by the launcher alone, without
    the runner's run.json key. None without the file. LAUNCH: the file's object where the caller has read it."""
    launch = read_launch(run_dir) if launch is None else launch
    options = launch.get(Launch.OPTIONS) if launch else None
    return cast("LauncherOptions", options) if isinstance(options, dict) else None


def read_mem_cap(run_dir: str | Path, launch: LaunchJson | None = None) -> MemCapRow | None:
    """launch.json's record of the allocator cap (experiments/launch/launcher.py apply_memory_cap): `requested_gib`,
    `applied`, and where applied `cap_bytes`; None when the run had no cap or the record is not of that shape (a
    memory verdict must not rest on a cap it cannot read). LAUNCH: the file's object where the caller has read it."""
    launch = read_launch(run_dir) if launch is None else launch
    cap = launch.get(Launch.MEM_CAP) if launch else None
    if not isinstance(cap, dict):
        return None
    requested, applied, cap_bytes = cap.get(MemCap.REQUESTED_GIB), cap.get(MemCap.APPLIED), cap.get(MemCap.CAP_BYTES)
    if not isinstance(requested, (int, float)) or not _positive(requested) or not isinstance(applied, bool):
        return None
    out: MemCapRow = {MemCap.REQUESTED_GIB: float(requested), MemCap.APPLIED: applied}
    if applied:
        if not _positive(cap_bytes) or not isinstance(cap_bytes, int):
            return None
        out[MemCap.CAP_BYTES] = cap_bytes
    return out


def read_compiled_code(launch: LaunchJson) -> str | None:
    """Where a compiled run's compiled code came from, in words for its labels (launch.json's `compile_cache`, the
    launcher's look before the run): a file loaded first (shipped or named), this host's cache of an earlier run, or
    none (the run compiled everything). None for a run that compiled nothing, or a record not of that shape."""
    cache = launch.get(Launch.COMPILE_CACHE)
    if not isinstance(cache, dict):
        return None
    artifacts, size = cache.get(CompileCache.ARTIFACTS), cache.get(CompileCache.ARTIFACTS_BYTES)
    value = cache.get(CompileCache.FILES_BEFORE)
    files = value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
    if isinstance(artifacts, str) and artifacts:
        mb = f", {float(size) / 1e6:.1f} MB" if size is not None and _positive(size) else ""
        over = f" over this host's cache of an earlier run ({files} files)" if files else ""
        return f"compiled code loaded from a saved file ({Path(artifacts).name}{mb}){over}"
    if files is None:
        return None
    if files:
        return f"compiled code from this host's cache of an earlier run ({files} files)"
    return "compiled in the run (empty cache)"


def _positive(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and 0 < x < float("inf")


@dataclass(frozen=True)
class SideFiles:
    """The RunRecord fields of the launcher's side files (None: the run has no such file)."""

    tokens_by_step: dict[int, int] | None
    padded_by_step: dict[int, int] | None
    profile: ProfileJson | None
    schedule: list[ScheduleStep] | None
    quick: QuickStop | None
    gpm_by_step: dict[int, GpmRow] | None
    mem_cap: MemCapRow | None
    harness: int | None  # launch.json's `harness` (runfiles.HARNESS_VERSION); None: made before it was recorded
    compiled_code: str | None  # read_compiled_code's words; None: the run compiled nothing


def read_harness(launch: LaunchJson) -> int | None:
    """launch.json's measuring-design version; None where absent or not a whole number >= 1."""
    value = launch.get(Launch.HARNESS)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def read(run_dir: str | Path, resumed: bool = False, step_cap: tuple[int, str] | None = None,
         max_step: int | None = None, launch: LaunchJson | None = None) -> SideFiles:
    """The side files of RUN_DIR (RESUMED, STEP_CAP, MAX_STEP: read_tokens'; LAUNCH: launch.json's object where the
    caller has read it)."""
    real, padded = read_tokens(run_dir, resumed, step_cap, max_step)
    launch = (read_launch(run_dir) if launch is None else launch) or {}  # read once for the records it holds
    return SideFiles(tokens_by_step=real, padded_by_step=padded, profile=read_profile(run_dir),
                     schedule=read_schedule(run_dir), quick=read_quick(run_dir, launch),
                     gpm_by_step=read_gpm(run_dir, resumed), mem_cap=read_mem_cap(run_dir, launch),
                     harness=read_harness(launch), compiled_code=read_compiled_code(launch))
