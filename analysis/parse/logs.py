"""Read ms-swift run outputs (`logging.jsonl`, `args.json`) of any version into typed records.

ms-swift has written three shapes of log line over its life, and this module hides them:
- 4.x: `global_step/max_steps` "a/b", cumulative `train_speed(s/it)` (= elapsed / steps since start), no
  `percentage`, `token_acc`;
- 3.x: `global_step/max_steps`, `percentage`, cumulative `train_speed(iter/s)` (= steps / elapsed);
- 1.x/2.x: an integer `global_step`, `acc` instead of `token_acc` (or no accuracy at all), 2.x with
  `train_speed(iter/s)`, 1.x with no speed.
Every version ends a finished run with Hugging Face's end-of-training line (`train_runtime`, ...) and ms-swift's
summary line (`log_history`, `model_parameter_info`, ...). A killed run lacks both and may end in a torn line.

The reader never invents a number: what a line does not say stays None. It reads a log of any size in one pass, one
line at a time (about 12 us and 1 KB of memory a line); anything that is not a readable regular file is bad input said
as what it is. A run the runner resumed from a checkpoint has the resume in run.json (`resumes`): ms-swift appended
the resumed training's lines, which repeat the steps after the checkpoint; the later ones are kept.

Stays whole: it is the one reader of ms-swift's log format of every version; the line classes, the one-pass reader and
the resume rules change together. ms-swift's key names and the table of what differs between its versions are
analysis/parse/swiftkeys.py's.
"""
from __future__ import annotations

import bisect
import contextlib
import functools
import gc
import json
import math
import operator
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard, cast

from analysis.parse import megatron, shared, swiftkeys
from analysis.parse.swiftkeys import (
    SPEED_IT_PER_S,
    SPEED_S_PER_IT,
    SUMMARY_KEYS,
    TRAIN_CLOCK_KEYS,
    VOLATILE_KEYS,
)
from experiments.base import runfiles, runschema, treewalk, userfiles
from experiments.base.errors import InputError
from experiments.base.runfolder import Args, Resume, Run

LOG_NAME = runfiles.LOGGING
ARGS_NAME = runfiles.ARGS_JSON


_ELAPSED_RE = re.compile(r"^\s*(?:(\d+)d\s*)?(?:(\d+)h\s*)?(?:(\d+)m\s*)?(?:(\d+)s)?\s*$")
_DATASET_RE = re.compile(
    r"^\s*(?P<mean>[-+0-9.eE]+)\s*±\s*(?P<std>[-+0-9.eE]+)\s*,\s*min=(?P<min>[-+0-9.eE]+)\s*,"
    r"\s*max=(?P<max>[-+0-9.eE]+)\s*,\s*size=(?P<size>\d+)\s*$"
)
_PARAMS_RE = re.compile(
    r"(?P<total>[0-9.]+)M Params \((?P<trainable>[0-9.]+)M Trainable \[(?P<pct>[0-9.]+)%\]\)"
)


def parse_elapsed(text: Any) -> float | None:
    """Seconds from ms-swift's `format_time` strings: '7s', '3m 7s', '1h 2m 3s', '1d 0h 5m 2s'."""
    if not isinstance(text, str) or not text.strip():
        return None
    m = _ELAPSED_RE.match(text)
    if not m or not any(m.groups()):
        return None
    try:
        d, h, mi, s = (int(g) if g else 0 for g in m.groups())
        return float(((d * 24 + h) * 60 + mi) * 60 + s)
    except (ValueError, OverflowError):  # more digits than Python converts, or beyond a float
        return None


def to_float(value: Any) -> float | None:
    """A log value as float: numbers and numeric strings ('0.5', 'nan'); anything else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        return value
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:  # an integer of hundreds of digits: beyond any float, as 1e400 is
            return math.inf if value > 0 else -math.inf
    if isinstance(value, str):
        try:
            return float(value.strip().rstrip("%"))
        except ValueError:
            return None
    return None


@dataclass(frozen=True)
class DatasetStats:
    """ms-swift's token statistics of a dataset: tokens per sample (mean, std, min, max) and the samples."""

    mean: float
    std: float
    min: float
    max: float
    size: int


def parse_dataset_stats(text: Any) -> DatasetStats | None:
    """ms-swift's token statistics string 'mean±std, min=.., max=.., size=N'."""
    if not isinstance(text, str):
        return None
    m = _DATASET_RE.match(text)
    if not m:
        return None
    try:
        return DatasetStats(float(m["mean"]), float(m["std"]), float(m["min"]), float(m["max"]), int(m["size"]))
    except ValueError:  # '1e' or '--' match the pattern but are no numbers
        return None


@dataclass(frozen=True)
class ParamInfo:
    """The model's parameters and the trainable ones, as ms-swift's summary counts them."""

    total_params: int
    trainable_params: int
    trainable_pct: float


def parse_param_info(text: Any) -> ParamInfo | None:
    """'PeftModelForCausalLM: 7635.8016M Params (20.1851M Trainable [0.2643%]), ...' -> parameter counts."""
    if not isinstance(text, str):
        return None
    m = _PARAMS_RE.search(text)
    if not m:
        return None
    try:
        return ParamInfo(round(float(m["total"]) * 1e6), round(float(m["trainable"]) * 1e6), float(m["pct"]))
    except (ValueError, OverflowError):  # '1.2.3' matches the pattern; 1e400 is no finite count
        return None


class Row(Mapping):
    """A log line's object, stored compactly: the lines of a log share a few key orders, so a row keeps its values
    and a reference to its key order's index (as dicts, a 200 MB log's ~750,000 lines take ~1.3 KB each, their keys
    included). Reads like a dict."""

    __slots__ = ("_index", "_values")

    def __init__(self, index: dict[str, int], values: tuple):
        self._index, self._values = index, values

    def __getitem__(self, key):
        return self._values[self._index[key]]

    def get(self, key, default=None):
        i = self._index.get(key)
        return default if i is None else self._values[i]

    def __contains__(self, key) -> bool:
        return key in self._index

    def __iter__(self):
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Row({dict(self)!r})"


@dataclass(slots=True)
class Line:
    """One log line: its kind, its optimizer step and the raw object, with its 1-based line number. START: the step
    its training attempt began at, where run.json records a resume (None: the log says nothing of it)."""

    kind: str  # train | eval | train_end | summary | other
    step: int | None
    max_steps: int | None
    data: Mapping  # the line's object, or a Row of it (lines of one key order share an index)
    line_no: int
    start: int | None = None

    def get(self, key: str) -> float | None:
        value = self.data.get(key)
        return value if value.__class__ is float else to_float(value)

    def elapsed(self, start: int = 0) -> float | None:
        """Seconds since training (re)started at step `start`, from this line's cumulative speed.

        4.x: speed is s/it = elapsed / (step - start), so elapsed = speed x (step - start);
        1.x-3.x: speed is iter/s = (step - start) / elapsed, so elapsed = (step - start) / speed (swiftkeys.elapsed).
        """
        sp = self.speed
        if sp is None or self.step is None or self.step <= start:
            return None
        key, value = sp
        if not is_finite(value) or value <= 0:
            return None
        n = self.step - start
        return swiftkeys.elapsed(key, value, n)

    @property
    def speed(self) -> tuple[str, float] | None:
        for key in swiftkeys.SPEED_KEYS:
            value = self.get(key)
            if value is not None:
                return key, value
        return None


@dataclass
class RunLog:
    """Everything one `logging.jsonl` (+ `args.json`) says, grouped by line kind."""

    path: Path
    lines: list[Line]
    args: dict | None = None
    torn_last_line: bool = False
    duplicates_dropped: int = 0
    warnings: list[str] = field(default_factory=list)

    resumes: list[tuple[int, int]] = field(default_factory=list)  # (lines before, step) of each recorded resume

    @functools.cached_property
    def train(self) -> list[Line]:
        return [ln for ln in self.lines if ln.kind == "train"]

    @functools.cached_property
    def evals(self) -> list[Line]:
        return [ln for ln in self.lines if ln.kind == "eval"]

    @property
    def train_end(self) -> Line | None:
        return next((ln for ln in self.lines if ln.kind == "train_end"), None)

    @property
    def summary(self) -> Line | None:
        return next((ln for ln in self.lines if ln.kind == "summary"), None)

    @property
    def run_dir(self) -> Path:
        return self.path.parent

    @property
    def log_format(self) -> str:
        """'megatron' (Megatron-SWIFT's `iteration` lines), 'v4' when the speed is seconds per iteration (ms-swift
        4.x), else 'v3' (1.x to 3.x lines)."""
        if any(megatron.is_megatron_line(ln.data) for ln in self.lines):
            return megatron.FORMAT
        return swiftkeys.log_format(ln.data for ln in self.lines)


def _classify(obj: dict) -> str:
    if swiftkeys.TRAIN_RUNTIME in obj:
        return "train_end"
    if swiftkeys.LOSS not in obj and swiftkeys.EVAL_LOSS not in obj and not SUMMARY_KEYS.isdisjoint(obj):
        return "summary"
    if swiftkeys.LOSS in obj and swiftkeys.EVAL_LOSS not in obj:
        # a training line, even with an eval_-prefixed key: ms-swift 4.6.0 under torch_compile writes the metric
        # `eval_token_acc` on every training line after the first evaluation
        return "train"
    for k in obj:
        if k[:5] == swiftkeys.EVAL_PREFIX:
            return "eval"
    if swiftkeys.LOSS in obj:
        return "train"
    return "other"


def _int(value: Any) -> int | None:
    """A step counter as int: an integer, a float that is finite, or a string of digits; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:  # not digits, or more digits than Python converts
            return None
    return None


def _step_of(obj: dict, path: Path, line_no: int) -> tuple[int | None, int | None]:
    raw = obj.get(swiftkeys.STEP_OF_MAX)
    if raw is None and megatron.is_megatron_line(obj):  # Megatron-SWIFT: "iteration": "a/b"
        raw = megatron.normalise(obj)[swiftkeys.STEP_OF_MAX]
    if raw.__class__ is str and "/" in raw:
        a, _, b = raw.partition("/")
        step: int | None
        total: int | None
        try:
            step, total = int(a), _TOTALS.get(b)
            if total is None:
                total = int(b)
                if len(_TOTALS) < 1000:
                    _TOTALS[b] = total
        except ValueError:
            step = total = None
        if step is None or total is None:
            raise InputError(path, "'global_step/max_steps' is not 'a/b' integers", line_no)
        if step < 0:
            raise InputError(path, f"negative step {step}", line_no)
        return step, total  # a step past its max_steps is warned about and left out (_Reader.finish)
    for key in swiftkeys.STEP_KEYS:
        step = _int(obj.get(key))
        if step is not None:
            _check_step(step, path, line_no)
            return step, None
    return None, None


def _check_step(step: int, path: Path, line_no: int) -> None:
    """A step counter no run can have (negative, or beyond runschema.STEPS: a 401-digit integer) is bad input where
    the line says no max_steps to leave it out against."""
    if step < 0:
        raise InputError(path, f"negative step {step}", line_no)
    if step > runschema.STEPS:
        raise InputError(path, f"step {runschema.describe_value(step)} is beyond any run's {runschema.STEPS:g} steps",
                         line_no)


_TOTALS: dict[str, int] = {}  # max_steps text -> one int for all lines that say it (a line's own: 28 bytes each)


def _same_values(a: Mapping, b: Mapping) -> bool:
    """Two lines say the same but for what differs between the copies two node masters write (their speeds)."""
    def key(obj):
        return json.dumps({k: v for k, v in obj.items() if k not in VOLATILE_KEYS}, sort_keys=True, default=str)

    return key(a) == key(b)


def _volatile_differs(a: Mapping, b: Mapping) -> bool:
    """Two lines _same_values differ in a speed or a time (the clock strings a training row does not keep aside)."""
    return any(a.get(k) != b.get(k) for k in VOLATILE_KEYS - TRAIN_CLOCK_KEYS)


def _one_node(args: dict | None) -> bool:
    """args.json says the run had one node (its world size is its node's): each line is written once."""
    if not isinstance(args, dict):
        return False
    world, local = _int(args.get(Args.GLOBAL_WORLD_SIZE)), _int(args.get("local_world_size"))
    return bool(world and local and world > 0 and world == local)


def describe_path(path: Path) -> str | None:
    """None for a regular file or a folder; else what PATH is, in words (a symlink loop, a FIFO, a device, ...)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if exc.errno == 40:  # ELOOP
            return "a symlink loop"
        if isinstance(exc, FileNotFoundError):
            return f"a dangling symlink (to {os.readlink(path)})" if os.path.islink(path) else "no such file or folder"
        if isinstance(exc, PermissionError):
            return "cannot be read (permission denied)"
        return f"cannot be read ({exc.strerror or exc})"
    if stat.S_ISDIR(mode):
        try:
            with os.scandir(path):
                return None
        except OSError as exc:
            return f"cannot be read ({exc.strerror or exc})"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe), not a log file"
    if stat.S_ISCHR(mode):
        return "a character device (like /dev/null), not a log file"
    if stat.S_ISBLK(mode):
        return "a block device, not a log file"
    if stat.S_ISSOCK(mode):
        return "a socket, not a log file"
    return "not a regular file"


def find_log(path: str | Path) -> Path:
    """The `logging.jsonl` that PATH names, or that a run folder holds. Anything that is not a readable regular file
    (a FIFO, which would block the reader forever; /dev/null; a symlink loop) is bad input, said as what it is."""
    path = Path(path)
    what = describe_path(path)
    if what is not None:
        raise InputError(path, what)
    if path.is_dir():
        log = path / LOG_NAME
        what = describe_path(log)
        if what == "no such file or folder":
            raise InputError(path, f"no {LOG_NAME} in this folder")
        if what is not None:
            raise InputError(log, what)
        if log.is_dir():
            raise InputError(log, "a folder, not a log file")
        return log
    return path


def find_runs(path: str | Path, skipped: list[tuple[Path, str]] | None = None) -> list[Path]:
    """All run folders under PATH (a run folder, a parent of several, or a log file's folder), read through symlinks
    (experiments.base.treewalk); with SKIPPED (a list), folders below PATH that cannot be listed are appended there."""
    path = Path(path)
    what = describe_path(path)
    if what is not None:
        raise InputError(path, what)
    if path.is_file():
        return [path]
    if os.path.lexists(path / LOG_NAME):
        return [path]
    found = treewalk.folders_with(path, (LOG_NAME,))
    if skipped is not None:
        skipped += found.skipped
    elif found.skipped:
        folder, why = found.skipped[0]
        raise InputError(folder, why)
    if not found.folders and not found.skipped:
        raise InputError(path, f"no {LOG_NAME} in this folder or below it")
    return found.folders


def _load_json_file(p: Path) -> Any:
    """A JSON file's value; anything unreadable, malformed or beyond its size cap is bad input naming the file."""
    what = describe_path(p)
    if what is not None:
        raise InputError(p, what)
    return userfiles.read_json(p, runfiles.max_bytes(p))


def read_args(run_dir: Path) -> dict | None:
    """`args.json` beside the log (`sft_args.json` in 1.x), or None; a broken one is bad input."""
    for name in (ARGS_NAME, runfiles.ARGS_JSON_1X):
        p = run_dir / name
        if os.path.lexists(p):
            data = _load_json_file(p)
            if not isinstance(data, dict):
                raise InputError(p, "args file is not a JSON object")
            return shared.fields(runfiles.check(p, data))
    return None


def resume_points(run_dir: Path) -> list[tuple[int, int]]:
    """(log lines before, checkpoint step) of every resume the runner recorded in run.json (`resumes`): the lines
    after that count were written by a training that went on from that step. [] without run.json or resumes (a
    broken run.json is the results reader's to report)."""
    p = Path(run_dir) / runfiles.RUN_JSON
    try:
        data = userfiles.read_json(p, runfiles.max_bytes(p)) if userfiles.present(p) else None
    except InputError:
        return []
    return resumes_of(data)


def resumes_of(status: Any) -> list[tuple[int, int]]:
    """resume_points of a run.json already read (STATUS)."""
    out = []
    for r in (status.get(Run.RESUMES) if isinstance(status, dict) else None) or []:
        if isinstance(r, dict):
            lines, step = _int(r.get(Resume.LOG_LINES_BEFORE)), _int(r.get(Resume.FROM_STEP))
            if lines is not None and step is not None and lines >= 0 and step >= 0:
                out.append((lines, step))
    return sorted(out)


class _Reader:
    """One pass over the log's lines: parse, classify, drop node-duplicates, check the step counters, apply resumes.

    Kept lines of a kind are in step order, so a duplicate of an earlier line is found by binary search among the
    lines of its step (the reader stays linear in the log and holds no per-line keys)."""

    def __init__(self, path: Path, run: RunLog, resumes: list[tuple[int, int]], args_max: int | None,
                 one_node: bool = False):
        self.path, self.run, self.resumes, self.args_max = path, run, list(resumes), args_max
        self.one_node = one_node  # args.json says one node: no node master's copies
        self.node_copies: list[int] = []  # lines dropped as another node master's copy (their own speeds or times)
        self.start = 0 if resumes else None  # the step the current attempt began at (recorded resumes only)
        self.by_kind: dict[str, tuple[list[int], list[Line]]] = {"train": ([], []), "eval": ([], [])}
        self.stepless: set[str] = set()
        self.shapes: dict[tuple, tuple] = {}  # key order -> (kind, index shared by the rows of that order)
        self.beyond: list[tuple[int, int, int]] = []  # (line, step, max) of lines past their max_steps

    def resume(self, step: int, line_no: int) -> None:
        """The lines from LINE_NO on come from a training that resumed at STEP: what the interrupted attempt logged
        after STEP is replaced by what the resumed one logs (the later values)."""
        lines = self.run.lines
        def after(ln: Line) -> bool:
            return ln.kind in ("train", "eval") and ln.step is not None and ln.step > step

        dropped = [ln for ln in lines if after(ln)]
        if dropped:
            lines[:] = [ln for ln in lines if not after(ln)]
            dropped_steps = [ln.step for ln in dropped if ln.step is not None]  # all of them (the filter above)
            self.run.warnings.append(
                f"line {line_no}: resumed from the checkpoint of step {step} (run.json): {len(dropped)} lines of "
                f"steps {min(dropped_steps)}-{max(dropped_steps)} logged before the "
                f"interrupt are replaced by the resumed training's")
        for kind in self.by_kind:
            kept = [ln for ln in lines if ln.kind == kind and ln.step is not None]
            self.by_kind[kind] = ([cast(int, ln.step) for ln in kept], kept)  # not None: the filter above
        self.stepless.clear()
        self.start = step

    def _drop_repeat(self, kind: str, step: int, obj: dict, line_no: int) -> None:
        """Counts a line repeating a logged step as a dropped copy, or refuses it as bad input."""
        steps, kept_lines = self.by_kind[kind]
        # One rule for a repeated step of either kind: node masters' copies follow the line they copy
        # (the latest step), so a step logged again after a later one is a resume, read only where
        # run.json records it (resume() then dropped what it repeats); a copy with its own speed or
        # times is a node master's only where args.json does not say the run had one node.
        what = "step" if kind == "train" else "the eval of step"
        i = bisect.bisect_left(steps, step)
        if step < steps[-1]:
            if i < len(steps) and steps[i] == step:
                raise InputError(self.path, f"{what} {step} logged again after step {steps[-1]}, and "
                                            f"run.json records no resume that explains it", line_no)
            raise InputError(self.path, f"step counter goes backwards ({steps[-1]} -> {step})", line_no)
        while i < len(steps) and steps[i] == step:
            if _same_values(kept_lines[i].data, obj):
                own = _volatile_differs(kept_lines[i].data, obj)
                if own and self.one_node:
                    break
                self.run.duplicates_dropped += 1
                if own:
                    self.node_copies.append(line_no)
                return
            i += 1
        # identical repeats were dropped above: these values differ (an eval's too: the later copy
        # would be read as the run's final eval loss)
        raise InputError(self.path, f"{what} {step} logged twice with different values", line_no)

    def add(self, obj: Any, line_no: int) -> None:
        if obj.__class__ is not dict:
            what = "null" if obj is None else type(obj).__name__
            raise InputError(self.path, f"a JSON {what}, not an object", line_no)
        while self.resumes and line_no > self.resumes[0][0]:
            self.resume(self.resumes.pop(0)[1], line_no)
        keys = tuple(obj)
        shape = self.shapes.get(keys)  # a line's kind depends on its keys alone: classified once per key order
        if shape is None:
            kind = _classify(obj)
            index = pick = None
            if kind in ("train", "eval"):
                kept = [i for i, k in enumerate(keys) if not (kind == "train" and k in TRAIN_CLOCK_KEYS)]
                index = {keys[i]: j for j, i in enumerate(kept)}
                if len(kept) < len(keys):
                    pick = operator.itemgetter(*kept) if len(kept) > 1 else (lambda v, i=kept: tuple(v[j] for j in i))
            shape = (kind, index, pick)
            if len(self.shapes) < 10_000:  # a log of ever new key orders keeps its dicts
                self.shapes[keys] = shape
        kind, index, pick = shape
        step, max_steps = _step_of(obj, self.path, line_no)
        data: Mapping
        if index is None:
            data = obj
        else:
            values = tuple(obj.values())
            data = Row(index, values if pick is None else pick(values))
        line = Line(kind, step, max_steps, data, line_no, self.start)
        if index is not None or kind == "train" or kind == "eval":
            if step is None:
                key = json.dumps({k: v for k, v in obj.items() if k not in VOLATILE_KEYS}, sort_keys=True,
                                 default=str)
                if key in self.stepless:
                    self.run.duplicates_dropped += 1
                    return
                self.stepless.add(key)
            else:
                limit = max_steps if max_steps is not None else self.args_max
                if limit is not None and step > limit:
                    self.beyond.append((line_no, step, limit))
                    return
                steps, kept_lines = self.by_kind[kind]
                if steps and step <= steps[-1]:
                    self._drop_repeat(kind, step, obj, line_no)  # raises unless the line is a copy to drop
                    return
                steps.append(step)
                kept_lines.append(line)
            if kind == "train":
                speed = obj.get(SPEED_S_PER_IT)
                key = SPEED_S_PER_IT
                if speed is None:
                    speed, key = obj.get(SPEED_IT_PER_S), SPEED_IT_PER_S
                if speed.__class__ is not float:
                    speed = to_float(speed)
                if speed is not None and speed <= 0:
                    raise InputError(self.path, f"{key} is {'zero' if speed == 0 else 'negative'}", line_no)
                if speed is not None and speed > runschema.LOG_SPEED.hi:  # 1e308 s/it: no step, no speed is that
                    raise InputError(self.path, f"{key} is {speed:g}, beyond any plausible speed "
                                                f"(at most {runschema.LOG_SPEED.hi:g})", line_no)
        self.run.lines.append(line)

    def finish(self) -> None:
        if self.node_copies:
            self.run.warnings.append(
                f"{len(self.node_copies)} line(s) repeating the step before them with other speeds or times dropped "
                f"as another node master's copies, the first line's values kept (first: line {self.node_copies[0]})")
        if self.beyond:
            line_no, step, limit = self.beyond[0]
            self.run.warnings.append(
                f"{len(self.beyond)} line(s) with a step beyond max_steps ignored (first: line {line_no}, step "
                f"{step} > {limit})")


def read_log(path: str | Path, args: dict | None = None, resumes: list[tuple[int, int]] | None = None) -> RunLog:
    """Parse one `logging.jsonl` (PATH is the file or its run folder), one line at a time (a log of any size is read
    in one pass, without holding its text). RESUMES: (lines before, step) of each resume (default: run.json's).

    Raises InputError for bad input; a killed run (torn last line) and a diverged run are data, not errors.
    """
    log_path = find_log(path)
    run = RunLog(path=log_path, lines=[])
    run.args = args if args is not None else read_args(log_path.parent)
    run.resumes = resume_points(log_path.parent) if resumes is None else sorted(resumes)
    args_max = _int((run.args or {}).get(Args.MAX_STEPS))
    reader = _Reader(log_path, run, run.resumes, args_max if args_max and args_max > 0 else None,
                     _one_node(run.args))
    any_text = False
    f = userfiles.open_regular(log_path, runfiles.max_bytes(log_path))
    with f, gc_paused():
        line_no = 0
        try:
            for raw in iter(lambda: f.readline(runfiles.LOG_LINE_BYTES + 1), b""):
                line_no += 1
                if len(raw) > runfiles.LOG_LINE_BYTES:  # one line is held whole: bounded, as the file is
                    raise InputError(log_path, f"a line of more than {userfiles.size_text(runfiles.LOG_LINE_BYTES)}",
                                     line_no)
                if line_no == 1 and raw[:3] == b"\xef\xbb\xbf":  # a BOM (a Windows editor's save) is no error
                    raw = raw[3:]
                torn = not raw.endswith(b"\n")  # only a last line lacks its newline
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    if torn and run.lines:
                        _torn(run, line_no)
                        break
                    raise InputError(log_path, f"not UTF-8 text ({exc.reason})", line_no) from None
                if not text or text.isspace():
                    continue
                any_text = True
                try:
                    obj = _loads(text)
                except ValueError:
                    if torn and run.lines:
                        _torn(run, line_no)
                        break
                    # what the line holds is not quoted: a log may be a link to a file the user did not mean to show
                    what = "a JSON null, not an object" if text.strip() == "null" else "not valid JSON"
                    raise InputError(log_path, what, line_no) from None
                except RecursionError:
                    raise InputError(log_path, "JSON nested too deeply", line_no) from None
                try:
                    reader.add(obj, line_no)
                except RecursionError:
                    raise InputError(log_path, "JSON nested too deeply", line_no) from None
        except OSError as exc:
            raise InputError(log_path, f"cannot be read ({exc.strerror or exc})", line_no or None) from None
    if not any_text:
        raise InputError(log_path, "empty log file")
    reader.finish()
    if not run.lines:
        raise InputError(log_path, "no log lines")
    check_resumes(run, line_no)
    return run


def check_resumes(run: RunLog, n_lines: int) -> None:
    """A resume that run.json records, or args.json's resume_from_checkpoint, against the log: the resumed training's
    first training line logs the first logging step after the checkpoint's. A resume the log contradicts would put
    every step time 29-38 % off (the speed counted from the wrong step): bad input, naming the file."""
    every = _int((run.args or {}).get(Args.LOGGING_STEPS))

    def contradicted(step: int, after_line: int) -> str | None:
        first = next((ln.step for ln in run.train if ln.line_no > after_line and ln.step is not None), None)
        if first is None:
            return None
        if first <= step or (every and every > 0 and first > step + every):
            return (f"resumed from the checkpoint of step {step}, but the first training line after it logs step "
                    f"{first}")
        return None

    status = run.run_dir / runfiles.RUN_JSON
    for lines, step in run.resumes:
        if lines > n_lines:
            raise InputError(status, f"a resume after line {lines} of {LOG_NAME}, which has {n_lines} lines")
        why = contradicted(step, lines)
        if why:
            raise InputError(status, f"{why} ({LOG_NAME} line {lines + 1} on)")
    resume = (run.args or {}).get(Args.RESUME_FROM_CHECKPOINT)
    m = re.search(r"checkpoint-(\d+)", resume) if isinstance(resume, str) and not run.resumes else None
    why = contradicted(int(m.group(1)), 0) if m else None
    if why:
        args = next((p for p in (run.run_dir / ARGS_NAME, run.run_dir / runfiles.ARGS_JSON_1X) if p.is_file()), None)
        raise InputError(args, f"resume_from_checkpoint: {why} of {LOG_NAME}")


@contextlib.contextmanager
def gc_paused():
    """The cyclic garbage collector paused: parsing makes several containers per log line, none of them in a cycle
    (refcounting frees them), and the collector's passes over a long log's objects cost ~40 % of its parse time."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # set in __init__; typeshed lacks it


def _loads(text: str) -> Any:
    """json.loads of one line, without its wrapper's per-call work when the line is one value from its first
    character (ms-swift's lines are); anything else goes through json.loads (its exact error)."""
    try:
        obj, end = _SCAN(text, 0)
    except (StopIteration, ValueError):
        return json.loads(text)
    if end != len(text) and text[end:].strip():
        return json.loads(text)
    return obj


def _torn(run: RunLog, line_no: int) -> None:
    run.torn_last_line = True
    run.warnings.append(f"line {line_no}: torn last line ignored (run killed while writing)")


def transpose(lines: list[Line]) -> tuple[dict[str, int], list[tuple]] | None:
    """(key -> position, each line's tuple of values) when every line is a row of one key order (ms-swift writes its
    training lines alike), else None: a column is then one C pass (operator.itemgetter) over the tuples, made only
    for the keys asked for (all columns at once took ~75 MB more of a 200 MB log's peak)."""
    if not lines or lines[0].data.__class__ is not Row:
        return None
    index = lines[0].data._index
    if not all((d := ln.data).__class__ is Row and d._index is index for ln in lines):
        return None
    return index, [cast(Row, ln.data)._values for ln in lines]  # Rows: checked just above


def as_floats(values) -> list[float | None]:
    """Values as floats (None where not a number), floats kept as they are."""
    return [v if v is None or v.__class__ is float else to_float(v) for v in values]


def column(lines: list[Line], key: str) -> list[float | None]:
    """KEY's value of each line as float (None where absent or not a number): Line.get for many lines at once, reading
    the rows that share the first line's key order by position (a long log's hot path)."""
    if not lines:
        return []
    first = lines[0].data
    if first.__class__ is Row:
        index = first._index
        i = index.get(key, -1)
        if i >= 0:
            raw = [d._values[i] if (d := ln.data).__class__ is Row and d._index is index else d.get(key)
                   for ln in lines]
        else:
            raw = [None if (d := ln.data).__class__ is Row and d._index is index else d.get(key) for ln in lines]
    else:
        raw = [ln.data.get(key) for ln in lines]
    return [v if v is None or v.__class__ is float else to_float(v) for v in raw]


def is_finite(value: float | None) -> TypeGuard[float]:
    return value is not None and math.isfinite(value)
