"""What one parsed ms-swift log (+ args.json) says, as the RunRecord fields it fills (LogFacts): the steps reached,
the batch, the dataset and parameter counts of its summary, the loss, accuracy and memory curves, each training and
eval line's seconds since training began, and the steps after which an eval or a save ran. A column several facts read
is read once (_Columns)."""
from __future__ import annotations

import bisect
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from analysis.parse import swiftkeys as sk
from analysis.parse.logs import (
    DatasetStats,
    RunLog,
    as_floats,
    column,
    is_finite,
    parse_dataset_stats,
    parse_elapsed,
    parse_param_info,
    to_float,
    transpose,
)
from experiments.base import runschema
from experiments.base.errors import InputError
from experiments.base.runfolder import Args

Curve = list  # [[step, value], ...] as logged (JSON-friendly)


def _arg(args: dict | None, *names: str) -> Any:
    if not args:
        return None
    for name in names:
        if args.get(name) is not None:
            return args[name]
    return None


def _int_or_none(value: Any) -> int | None:
    v = to_float(value)
    return None if v is None or not math.isfinite(v) else int(v)


def _start_step(args: dict | None) -> int:
    """ms-swift measures speed from the step training (re)started at: a resumed run starts at its checkpoint."""
    resume = _arg(args, "resume_from_checkpoint")
    if isinstance(resume, str):
        m = re.search(r"checkpoint-(\d+)", resume)
        if m:
            return int(m.group(1))
    return 0


def _event_steps(args: dict | None, run: RunLog, last_step: int) -> frozenset[int]:
    """Steps after whose training-log line an eval or a checkpoint save ran (they slow the next interval)."""
    events = {ln.step for ln in run.evals if ln.step is not None}
    if args:
        for every_key, strategy_keys in (("eval_steps", ("eval_strategy", "evaluation_strategy")),
                                         ("save_steps", ("save_strategy",))):
            every = to_float(args.get(every_key))
            strategy = _arg(args, *strategy_keys)
            if strategy in (None, "steps", "IntervalStrategy.STEPS") and is_finite(every) and every > 0:
                if every < 1:  # a ratio of the total steps, as Hugging Face allows
                    every = math.ceil(every * last_step)
                events.update(range(int(every), last_step + 1, int(every)))
    return frozenset(events)


class _Columns:
    """The columns of one list of log lines, each read once: several facts read the same ones (loss, speed, epoch),
    and where the lines are rows of one key order they are transposed once and a column is one C pass."""

    def __init__(self, lines: list) -> None:
        self.lines = lines
        self._table: tuple | None = None
        self._transposed = False
        self._cols: dict[str, list] = {}

    def __call__(self, key: str) -> list:
        if key not in self._cols:
            if not self._transposed:
                self._table, self._transposed = transpose(self.lines), True
            if self._table is None:
                self._cols[key] = column(self.lines, key)
            else:
                i = self._table[0].get(key)
                self._cols[key] = ([None] * len(self.lines) if i is None
                                   else as_floats(map(itemgetter(i), self._table[1])))
        return self._cols[key]


def _curve(cols: _Columns, key_options: tuple[str, ...]) -> Curve:
    """[step, value] of each line with a step, the value of the first of KEY_OPTIONS the line has as a number."""
    lines = cols.lines
    first = cols(key_options[0])
    if len(key_options) == 1 or all(v is not None for v in first):
        return [[ln.step, v] for ln, v in zip(lines, first) if v is not None and ln.step is not None]
    rest = [cols(key) for key in key_options[1:]]
    out = []
    for i, (ln, v) in enumerate(zip(lines, first)):
        if ln.step is None:
            continue
        if v is None:
            v = next((col[i] for col in rest if col[i] is not None), None)
        if v is not None:
            out.append([ln.step, v])
    return out


def _first_bad_step(train: _Columns) -> int | None:
    for ln, loss, grad in zip(train.lines, train(sk.LOSS), train(sk.GRAD_NORM)):
        if (loss is not None and not math.isfinite(loss)) or (grad is not None and not math.isfinite(grad)):
            return ln.step
    return None


def _cut(curve: Curve, bad_step: int | None) -> Curve:
    if bad_step is None:
        return curve
    return [p for p in curve if p[0] < bad_step and math.isfinite(p[1])]


def _samples_per_step_from_epoch(train: _Columns, train_stats: DatasetStats | None) -> int | None:
    """Samples per optimizer step from the log alone: Hugging Face's `epoch` advances by samples per step / training
    set size at every step, so (epoch_b - epoch_a) / (b - a) x size is it (rounded; None without both)."""
    if not train_stats or not train_stats.size:
        return None
    points = [(ln.step, e) for ln, e in zip(train.lines, train(sk.EPOCH)) if ln.step is not None
              and is_finite(e)]
    if len(points) < 2 or points[-1][0] <= points[0][0]:
        return None
    (a, ea), (b, eb) = points[0], points[-1]
    per_step = (eb - ea) / (b - a) * train_stats.size
    return round(per_step) if math.isfinite(per_step) and per_step >= 0.5 else None


def _timeline(train: _Columns, eval_lines: _Columns, args: dict,
              warnings: list[str]) -> tuple[list[tuple[int, float]], dict[int, float]]:
    """(step, seconds of training) of the training lines, and {eval step: seconds} of the eval lines.

    A line's seconds come from its own cumulative speed since its attempt began: for a resume recorded in run.json,
    the checkpoint's step, on top of the seconds the attempts before had trained up to there (the restart itself is
    not training time, and the interval across it holds an event, so it is not steady); otherwise args.json's
    resume_from_checkpoint, or 0. A time that does not grow with the step is left out, with a warning: no interval
    of the log has a negative or zero time."""
    default_start = _start_step(args)
    points: list[tuple[int, float]] = []
    steps: list[int] = []
    evals: dict[int, float] = {}
    backwards = []

    def offset(ln) -> float:  # a resumed attempt's clock goes on from the time trained up to its checkpoint
        if ln.start is None or not steps:
            return 0.0
        i = bisect.bisect_right(steps, ln.start)
        return points[i - 1][1] if i else 0.0

    def seconds(ln, s_per_it, it_per_s) -> float | None:  # as Line.elapsed: s/it x steps (4.x), steps / (iter/s)
        n = ln.step - (default_start if ln.start is None else ln.start)
        if n <= 0:
            return None
        if s_per_it is not None:
            return s_per_it * n if 0 < s_per_it < math.inf else None
        return n / it_per_s if it_per_s is not None and 0 < it_per_s < math.inf else None

    for ln, s_per_it, it_per_s in zip(train.lines, train(sk.SPEED_S_PER_IT), train(sk.SPEED_IT_PER_S)):
        if ln.step is None or (e := seconds(ln, s_per_it, it_per_s)) is None:
            continue
        t = e + offset(ln)
        points.append((ln.step, t))
        steps.append(ln.step)
    if any(b[1] <= a[1] for a, b in zip(points, points[1:])):
        kept = _rising(points)
        backwards = [p[0] for p in points if p not in kept]
        points = [p for p in points if p in kept]
    for ln, s_per_it, it_per_s in zip(eval_lines.lines, eval_lines(sk.SPEED_S_PER_IT),
                                         eval_lines(sk.SPEED_IT_PER_S)):
        if ln.step is None:
            continue
        e = seconds(ln, s_per_it, it_per_s)
        if e is None:
            e = parse_elapsed(ln.data.get(sk.ELAPSED_TIME))
        if e is not None:
            evals[ln.step] = e + offset(ln)
    if backwards:
        warnings.append(f"{len(backwards)} training line(s) whose time since the start does not grow with the step "
                        f"as the lines around them do left out of the step times (first: step {backwards[0]})")
    return points, evals


def _rising(points: list[tuple[int, float]]) -> set[tuple[int, float]]:
    """The longest run of POINTS whose times rise with the step (patience sorting, n log n). A cumulative speed
    that is wrong on one line (its s/it x10) puts that line's time past the next lines'; dropping the lines after it
    would keep one interval ten times its length (and a tokens/s a fifteenth of the run's): the longest rising run
    drops the one line that does not fit instead."""
    tails: list[float] = []   # tails[k]: the smallest last time of a rising run of length k + 1
    tail_at: list[int] = []   # its index in POINTS
    before = [-1] * len(points)
    for i, (_, t) in enumerate(points):
        k = bisect.bisect_left(tails, t)
        if k == len(tails):
            tails.append(t)
            tail_at.append(i)
        else:
            tails[k], tail_at[k] = t, i
        before[i] = tail_at[k - 1] if k else -1
    out, i = set(), tail_at[-1] if tail_at else -1
    while i >= 0:
        out.add(points[i])
        i = before[i]
    return out


@dataclass(frozen=True)
class LogFacts:
    """The RunRecord fields one parsed log (+ args.json) gives (log_facts)."""

    has_log: bool
    log_path: str
    log_format: str
    swift_version: str | None
    complete: bool
    torn_last_line: bool
    duplicate_lines_dropped: int
    diverged: bool
    first_bad_step: int | None
    global_steps: int | None
    max_steps: int | None
    per_device_batch: int | None
    grad_accum: int | None
    world_size: int | None
    max_length: int | None
    gradient_checkpointing: bool | None
    model: str | None
    samples_per_step: int | None
    peak_mem_gib: float | None
    train_loss: Curve
    memory_curve: Curve
    eval_loss: Curve
    token_acc: Curve
    eval_token_acc: Curve
    train_tokens_mean: float | None
    train_tokens_max: float | None
    train_samples: int | None
    val_samples: int | None
    trainable_params: int | None
    total_params: int | None
    trainable_pct: float | None
    train_runtime_s: float | None
    total_flos: float | None
    elapsed: list[tuple[int, float]]
    eval_elapsed: dict[int, float]
    event_steps: frozenset[int]
    warnings: list[str]
    args: dict | None


def _steps(run: RunLog, args: dict, summary: Mapping) -> tuple[int | None, int | None]:
    """The last step the log reached (its summary's global_step too) and its max_steps (a line's, else args.json's)."""
    last_step = max((ln.step for ln in run.lines if ln.step is not None), default=None)
    if (summary_step := _int_or_none(summary.get(sk.GLOBAL_STEP))) is not None:
        last_step = max(last_step or 0, summary_step)
    max_steps = next((ln.max_steps for ln in reversed(run.lines) if ln.max_steps), None)
    if max_steps is None:
        ms = _int_or_none(args.get(Args.MAX_STEPS))
        max_steps = ms if ms and ms > 0 else None
    return last_step, max_steps


def _datasets(run: RunLog, summary: Mapping) -> tuple[DatasetStats | None, DatasetStats | None]:
    """The summary's training and validation set statistics; a token count out of range is bad input (a negative one
    made a negative tokens/s)."""
    train_stats = parse_dataset_stats(summary.get(sk.TRAIN_DATASET))
    val_stats = parse_dataset_stats(summary.get(sk.VAL_DATASET))
    for name, stats in ((sk.TRAIN_DATASET, train_stats), (sk.VAL_DATASET, val_stats)):
        for stat, value in (vars(stats) if stats else {}).items():
            if not runschema.DATASET_STAT.lo <= value <= runschema.DATASET_STAT.hi:
                raise InputError(run.path, f"{name}'s {stat} is {value:g}: no token count is that",
                                 run.summary.line_no if run.summary is not None else None)
    return train_stats, val_stats


def _peak_mem(run: RunLog, train: _Columns, summary: Mapping, warnings: list[str]) -> float | None:
    """The largest memory(GiB) any line or the summary logged (negative values ignored, with a warning)."""
    rest = [ln for ln in run.lines if ln.kind != "train"]
    train_mem, rest_mem = train(sk.MEMORY), column(rest, sk.MEMORY)
    mem_values = [v for col in (train_mem, rest_mem) for v in col if v is not None and 0 <= v < math.inf]
    negative = sorted(ln.line_no for lines, col in ((run.train, train_mem), (rest, rest_mem))
                      for ln, v in zip(lines, col) if v is not None and v < 0)
    if negative:
        warnings.append(f"{len(negative)} negative memory(GiB) value(s) ignored (first: line {negative[0]})")
    summary_mem = to_float(summary.get(sk.SUMMARY_MEMORY))
    if is_finite(summary_mem) and summary_mem >= 0:
        mem_values.append(summary_mem)
    return round(max(mem_values), 2) if mem_values else None


def log_facts(run: RunLog) -> LogFacts:
    """The RunRecord fields one parsed log (+ args.json) gives."""
    args = run.args or {}
    train, evals = _Columns(run.train), _Columns(run.evals)
    summary = run.summary.data if run.summary else {}
    last_step, max_steps = _steps(run, args, summary)
    per_device_batch = _int_or_none(args.get(Args.PER_DEVICE_TRAIN_BATCH_SIZE))
    grad_accum = _int_or_none(args.get(Args.GRADIENT_ACCUMULATION_STEPS))
    world_size = _int_or_none(_arg(args, Args.GLOBAL_WORLD_SIZE, Args.WORLD_SIZE))
    if args and world_size is None:
        world_size = 1
    train_stats, val_stats = _datasets(run, summary)
    params = parse_param_info(summary.get(sk.MODEL_PARAMETER_INFO) or summary.get(sk.MODEL_INFO))

    warnings = list(run.warnings)
    if per_device_batch and grad_accum and world_size:
        samples_per_step: int | None = per_device_batch * grad_accum * world_size
    else:
        samples_per_step = _samples_per_step_from_epoch(train, train_stats)
        if samples_per_step is None:
            warnings.append("samples per step unknown (no args.json, and no epoch field with the training set's "
                            "size): samples/s, tokens/s and MFU are left out")
    peak = _peak_mem(run, train, summary, warnings)

    bad_step = _first_bad_step(train)
    eval_loss, eval_acc = _curve(evals, (sk.EVAL_LOSS,)), _curve(evals, sk.EVAL_ACC)
    if bad_step is not None:
        eval_loss, eval_acc = _cut(eval_loss, bad_step), _cut(eval_acc, bad_step)

    elapsed, eval_elapsed = _timeline(train, evals, args, warnings)
    total = max_steps or (elapsed[-1][0] if elapsed else last_step or 0)
    gc = args.get("gradient_checkpointing")
    flos = run.train_end.get(sk.TOTAL_FLOS) if run.train_end else None
    runtime = run.train_end.get(sk.TRAIN_RUNTIME) if run.train_end else None
    events = _event_steps(run.args, run, total) | {step for _, step in run.resumes} if elapsed else frozenset()
    return LogFacts(
        has_log=True, log_path=str(run.path), log_format=run.log_format, swift_version=args.get(Args.SWIFT_VERSION),
        complete=run.summary is not None, torn_last_line=run.torn_last_line,
        duplicate_lines_dropped=run.duplicates_dropped, diverged=bad_step is not None, first_bad_step=bad_step,
        global_steps=last_step, max_steps=max_steps, per_device_batch=per_device_batch, grad_accum=grad_accum,
        world_size=world_size, max_length=_int_or_none(args.get("max_length")),
        gradient_checkpointing=gc if isinstance(gc, bool) else None,
        model=_arg(args, "model", "model_id_or_path", "model_type"), samples_per_step=samples_per_step,
        peak_mem_gib=peak, train_loss=_cut(_curve(train, (sk.LOSS,)), bad_step),
        memory_curve=[p for p in _curve(train, (sk.MEMORY,)) if not p[1] < 0], eval_loss=eval_loss,
        token_acc=_cut(_curve(train, sk.ACC), bad_step), eval_token_acc=eval_acc,
        train_tokens_mean=train_stats.mean if train_stats else None,
        train_tokens_max=train_stats.max if train_stats else None,
        train_samples=train_stats.size if train_stats else None,
        val_samples=val_stats.size if val_stats else None,
        trainable_params=params.trainable_params if params else None,
        total_params=params.total_params if params else None,
        trainable_pct=params.trainable_pct if params else None,
        train_runtime_s=runtime if is_finite(runtime) and runtime >= 0 else None,
        total_flos=float(flos) if flos is not None and flos > 0 else None,
        elapsed=elapsed, eval_elapsed=eval_elapsed, event_steps=frozenset(events), warnings=warnings,
        args=run.args)
