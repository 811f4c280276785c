"""Read ms-swift run outputs (`logging.jsonl`, `args.json`) of any version into typed records.

ms-swift has written three shapes of log line over its life, and this module hides them:
- 4.x: `global_step/max_steps` "a/b", cumulative `train_speed(s/it)` (= elapsed / steps since start), no
  `percentage`, `token_acc`;
- 3.x: `global_step/max_steps`, `percentage`, cumulative `train_speed(iter/s)` (= steps / elapsed);
- 1.x/2.x: an integer `global_step`, `acc` instead of `token_acc` (or no accuracy at all), 2.x with
  `train_speed(iter/s)`, 1.x with no speed.
Every version ends a finished run with Hugging Face's end-of-training line (`train_runtime`, ...) and ms-swift's
summary line (`log_history`, `model_parameter_info`, ...). A killed run lacks both and may end in a torn line.

The reader never invents a number: what a line does not say stays None.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonlines

from analysis.core.errors import InputError

LOG_NAME = "logging.jsonl"
ARGS_NAME = "args.json"

SPEED_S_PER_IT = "train_speed(s/it)"
SPEED_IT_PER_S = "train_speed(iter/s)"
SUMMARY_KEYS = {"log_history", "model_parameter_info", "last_model_checkpoint", "train_dataset", "memory"}
# Keys that differ between the duplicated lines of multi-node runs (each node master writes its own speed).
VOLATILE_KEYS = {SPEED_S_PER_IT, SPEED_IT_PER_S, "elapsed_time", "remaining_time", "percentage"}

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
    d, h, mi, s = (int(g) if g else 0 for g in m.groups())
    return float(((d * 24 + h) * 60 + mi) * 60 + s)


def to_float(value: Any) -> float | None:
    """A log value as float: numbers and numeric strings ('0.5', 'nan'); anything else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip().rstrip("%"))
        except ValueError:
            return None
    return None


def parse_dataset_stats(text: Any) -> dict | None:
    """ms-swift's token statistics string 'mean±std, min=.., max=.., size=N' as a dict."""
    if not isinstance(text, str):
        return None
    m = _DATASET_RE.match(text)
    if not m:
        return None
    return {
        "mean": float(m["mean"]),
        "std": float(m["std"]),
        "min": float(m["min"]),
        "max": float(m["max"]),
        "size": int(m["size"]),
    }


def parse_param_info(text: Any) -> dict | None:
    """'PeftModelForCausalLM: 7635.8016M Params (20.1851M Trainable [0.2643%]), ...' -> parameter counts."""
    if not isinstance(text, str):
        return None
    m = _PARAMS_RE.search(text)
    if not m:
        return None
    return {
        "total_params": round(float(m["total"]) * 1e6),
        "trainable_params": round(float(m["trainable"]) * 1e6),
        "trainable_pct": float(m["pct"]),
    }


@dataclass
class Line:
    """One log line: its kind, its optimizer step and the raw object, with its 1-based line number."""

    kind: str  # train | eval | train_end | summary | other
    step: int | None
    max_steps: int | None
    data: dict
    line_no: int

    def get(self, key: str) -> float | None:
        return to_float(self.data.get(key))

    def elapsed(self, start: int = 0) -> float | None:
        """Seconds since training (re)started at step `start`, from this line's cumulative speed.

        4.x: speed is s/it = elapsed / (step - start), so elapsed = speed x (step - start);
        1.x-3.x: speed is iter/s = (step - start) / elapsed, so elapsed = (step - start) / speed.
        """
        sp = self.speed
        if sp is None or self.step is None or self.step <= start:
            return None
        key, value = sp
        if not is_finite(value) or value <= 0:
            return None
        n = self.step - start
        return value * n if key == SPEED_S_PER_IT else n / value

    @property
    def speed(self) -> tuple[str, float] | None:
        for key in (SPEED_S_PER_IT, SPEED_IT_PER_S):
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

    @property
    def train(self) -> list[Line]:
        return [ln for ln in self.lines if ln.kind == "train"]

    @property
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
        """'v4' when the speed is seconds per iteration (ms-swift 4.x), else 'v3' (1.x to 3.x lines)."""
        if any(SPEED_S_PER_IT in ln.data for ln in self.lines):
            return "v4"
        return "v3"


def _classify(obj: dict) -> str:
    if "train_runtime" in obj:
        return "train_end"
    if SUMMARY_KEYS & obj.keys() and "loss" not in obj and "eval_loss" not in obj:
        return "summary"
    if any(k.startswith("eval_") for k in obj):
        return "eval"
    if "loss" in obj:
        return "train"
    return "other"


def _step_of(obj: dict, path: Path, line_no: int) -> tuple[int | None, int | None]:
    raw = obj.get("global_step/max_steps")
    if isinstance(raw, str) and "/" in raw:
        a, _, b = raw.partition("/")
        try:
            return int(a), int(b)
        except ValueError:
            raise InputError(path, f"'global_step/max_steps' is not 'a/b' integers: {raw!r}", line_no) from None
    for key in ("global_step", "step"):
        value = obj.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return int(value), None
        if isinstance(value, str) and value.strip().isdigit():
            return int(value), None
    return None, None


def _dedupe_key(obj: dict) -> str:
    return json.dumps({k: v for k, v in obj.items() if k not in VOLATILE_KEYS}, sort_keys=True, default=str)


def find_log(path: str | Path) -> Path:
    """The `logging.jsonl` that PATH names, or that a run folder holds."""
    path = Path(path)
    if path.is_dir():
        log = path / LOG_NAME
        if not log.is_file():
            raise InputError(path, f"no {LOG_NAME} in this folder")
        return log
    if not path.exists():
        raise InputError(path, "no such file or folder")
    return path


def find_runs(path: str | Path) -> list[Path]:
    """All run folders under PATH (a run folder, a parent of several, or a log file's folder)."""
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.exists():
        raise InputError(path, "no such file or folder")
    if (path / LOG_NAME).is_file():
        return [path]
    runs = sorted(p.parent for p in path.rglob(LOG_NAME) if "checkpoint-" not in str(p.parent.name))
    if not runs:
        raise InputError(path, f"no {LOG_NAME} in this folder or below it")
    return runs


def read_args(run_dir: Path) -> dict | None:
    """`args.json` beside the log (`sft_args.json` in 1.x), or None; a broken one is bad input."""
    for name in (ARGS_NAME, "sft_args.json"):
        p = run_dir / name
        if p.is_file():
            try:
                data = json.loads(p.read_text(encoding="utf-8"))
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise InputError(p, f"not valid JSON: {exc}", getattr(exc, "lineno", None)) from None
            if not isinstance(data, dict):
                raise InputError(p, "args file is not a JSON object")
            return data
    return None


def read_log(path: str | Path, args: dict | None = None) -> RunLog:
    """Parse one `logging.jsonl` (PATH is the file or its run folder).

    Raises InputError for bad input; a killed run (torn last line) and a diverged run are data, not errors.
    """
    log_path = find_log(path)
    try:
        text = log_path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(log_path, f"not UTF-8 text ({exc.reason})") from None
    if not text.strip():
        raise InputError(log_path, "empty log file")
    raw_lines = text.split("\n")
    ends_with_newline = text.endswith("\n")
    if ends_with_newline:
        raw_lines = raw_lines[:-1]
    last_index = len(raw_lines) - 1

    lines: list[Line] = []
    seen: set[str] = set()
    run = RunLog(path=log_path, lines=lines)
    prev_step: dict[str, int] = {}
    current = [0]  # the 1-based number of the line the reader consumed last

    def numbered():
        for number, raw in enumerate(raw_lines, 1):
            current[0] = number
            yield raw

    reader = jsonlines.Reader(numbered(), loads=json.loads)
    while True:
        try:
            obj = reader.read(skip_empty=True)
        except EOFError:
            break
        except jsonlines.InvalidLineError as exc:
            line_no = exc.lineno
            is_last = line_no - 1 == last_index
            if is_last and not ends_with_newline and lines:
                run.torn_last_line = True
                run.warnings.append(f"line {line_no}: torn last line ignored (run killed while writing)")
                break
            what = "a JSON null, not an object" if "null value" in str(exc) else "not valid JSON"
            raise InputError(log_path, f"{what}: {str(exc.line)[:60]!r}", line_no) from None
        line_no = current[0]
        if not isinstance(obj, dict):
            raise InputError(log_path, f"a JSON {type(obj).__name__}, not an object", line_no)
        kind = _classify(obj)
        step, max_steps = _step_of(obj, log_path, line_no)
        key = _dedupe_key(obj)
        if key in seen and kind in ("train", "eval"):
            run.duplicates_dropped += 1
            continue
        seen.add(key)
        if kind in ("train", "eval") and step is not None:
            before = prev_step.get(kind)
            if before is not None and step < before:
                raise InputError(log_path, f"step counter goes backwards ({before} -> {step})", line_no)
            if kind == "train" and before == step:  # identical repeats were dropped above: these values differ
                raise InputError(log_path, f"step {step} logged twice with different values", line_no)
            prev_step[kind] = step
        line = Line(kind=kind, step=step, max_steps=max_steps, data=obj, line_no=line_no)
        if kind == "train" and line.speed is not None and line.speed[1] == 0:
            raise InputError(log_path, f"{line.speed[0]} is zero", line_no)
        lines.append(line)
    if not lines:
        raise InputError(log_path, "no log lines")
    run.args = args if args is not None else read_args(log_path.parent)
    return run


def is_finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)
