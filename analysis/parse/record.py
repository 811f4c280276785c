"""The typed run record: everything one run folder's raw files say, and nothing computed from it.

A run folder holds ms-swift's `logging.jsonl` (+ `args.json`), the runner's `env.json` and `run.json`, and the
launcher's `tokens.jsonl` and `profile.json`. `read_run(folder)` turns them into one `RunRecord`; every later stage
(measure, estimate, judge, present) reads records, never the files or nested dicts. Statistics over the record
(steady step time, tokens/s, speed-ups, MFU) are the measure stage's (analysis/measure/): a record holds facts.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.parse import sidefiles
from analysis.parse.logs import (
    LOG_NAME,
    RunLog,
    is_finite,
    parse_dataset_stats,
    parse_elapsed,
    parse_param_info,
    read_log,
    to_float,
)

Curve = list  # [[step, value], ...] as logged (JSON-friendly)


@dataclass
class RunRecord:
    """One run: identity, status and labels (runner), what ms-swift logged (log facts), launcher side files."""

    # identity (results/<hw>/<experiment>/<run>/) and status (run.json)
    path: str
    hw: str | None
    experiment: str | None
    run: str
    status: str = "ok"                      # ok | failed | running | ...
    failure: str | None = None
    labels: list[str] = field(default_factory=list)
    env: dict = field(default_factory=dict)          # env.json as written (GPU, host, packages)
    run_status: dict = field(default_factory=dict)   # run.json as written (key, command, notes, times)
    args: dict | None = None                         # args.json
    # log facts (None where the log does not say; all None when there is no log)
    has_log: bool = False
    log_path: str | None = None
    log_format: str | None = None
    swift_version: str | None = None
    complete: bool = False
    torn_last_line: bool = False
    duplicate_lines_dropped: int = 0
    diverged: bool = False
    first_bad_step: int | None = None
    global_steps: int | None = None
    max_steps: int | None = None
    per_device_batch: int | None = None
    grad_accum: int | None = None
    world_size: int | None = None
    max_length: int | None = None
    gradient_checkpointing: bool | None = None
    model: str | None = None
    samples_per_step: int | None = None
    peak_mem_gib: float | None = None
    train_loss: Curve = field(default_factory=list)
    memory_curve: Curve = field(default_factory=list)   # ms-swift's running max of reserved GiB per training line
    eval_loss: Curve = field(default_factory=list)
    token_acc: Curve = field(default_factory=list)
    eval_token_acc: Curve = field(default_factory=list)
    train_tokens_mean: float | None = None
    train_tokens_max: float | None = None
    train_samples: int | None = None
    val_samples: int | None = None
    trainable_params: int | None = None
    total_params: int | None = None
    trainable_pct: float | None = None
    train_runtime_s: float | None = None
    total_flos: float | None = None
    elapsed: list[tuple[int, float]] = field(default_factory=list)   # (step, s since training started), train lines
    eval_elapsed: dict[int, float] = field(default_factory=dict)     # eval step -> s since training started
    event_steps: frozenset[int] = frozenset()  # steps after which an eval or a checkpoint save ran
    warnings: list[str] = field(default_factory=list)
    # launcher side files
    tokens_by_step: dict[int, int] | None = None   # tokens.jsonl: real (unpadded) tokens per optimizer step
    padded_by_step: dict[int, int] | None = None   # tokens.jsonl: tokens including padding, where recorded
    profile: dict | None = None                     # profile.json (torch.profiler summary of a few steps)

    # ---------------------------------------------------------------- what run.json's key says about the run
    @property
    def key(self) -> dict:
        return self.run_status.get("key") or {}

    @property
    def overrides(self) -> dict:
        """swift flags the run set on top of its recipe (claims experiments, --set)."""
        return dict(self.key.get("overrides") or {})

    @property
    def launcher(self) -> dict:
        """experiments/launch.py options the run used ({} for a plain `swift sft`)."""
        return dict(self.key.get("launcher") or {})

    @property
    def cap_gib(self) -> float | None:
        return self.launcher.get("mem_cap_gib")

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def is_oom(self) -> bool:
        return self.status == "failed" and str(self.failure or "").startswith("OOM")

    @property
    def cut_short(self) -> bool:
        """Failed because time ran out (a deadline's interrupt, the per-run timeout), not because of the recipe."""
        return self.status != "ok" and str(self.failure or "").startswith(("interrupted", "timeout"))

    @property
    def dummy_weights(self) -> bool:
        return "dummy weights" in self.labels

    @property
    def is_cut_run(self) -> bool:
        return any(lab.startswith("cut run") for lab in self.labels)

    @property
    def last_train_step(self) -> int | None:
        steps = [s for s, _ in self.memory_curve]
        return int(max(steps)) if steps else self.global_steps

    @property
    def last_eval_step(self) -> int | None:
        return int(self.eval_loss[-1][0]) if self.eval_loss else None

    @property
    def profiled_steps(self) -> set[int]:
        return {int(s["step"]) for s in (self.profile or {}).get("steps", []) if "step" in s}

    @property
    def host_id(self) -> str | None:
        """The stable host id of env.json's host fingerprint (experiments/host.py); None for runs made before it."""
        return ((self.env.get("host") or {}).get("fingerprint") or {}).get("host_id")

    @property
    def host_probe(self) -> dict:
        """The host-speed probe's three figures (None where not measured): Python ns per loop iteration, eager CUDA
        op dispatch microseconds, LoRA-shaped forward+backward ms."""
        probe = (self.env.get("host") or {}).get("probe") or {}
        return {key: (probe.get(part) or {}).get("value") for key, part in
                (("python_ns", "python_loop"), ("dispatch_us", "dispatch"), ("lora_ms", "lora_step"))}

    @property
    def machine(self) -> str | None:
        """What env.json says of the machine's shape (CPU model and count, RAM): tells machines of different shapes
        apart, not two of one shape."""
        if not self.env.get("cpu_count"):
            return None
        return f"{self.env.get('cpu_model') or 'CPU'} x {self.env['cpu_count']}, {self.env.get('ram_gib')} GiB RAM"

    @property
    def host(self) -> str | None:
        """The host the run was made on, in words: its host id, else (runs made before host fingerprints) its
        machine's shape."""
        return f"host {self.host_id}" if self.host_id else self.machine

    @property
    def name(self) -> str:
        return f"{self.hw} · {self.experiment} · {self.run}"


# ---------------------------------------------------------------------------------------------- log facts


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
            if strategy in (None, "steps", "IntervalStrategy.STEPS") and every and every > 0:
                if every < 1:  # a ratio of the total steps, as Hugging Face allows
                    every = math.ceil(every * last_step)
                events.update(range(int(every), last_step + 1, int(every)))
    return frozenset(events)


def _curve(lines, key_options: tuple[str, ...]) -> Curve:
    out = []
    for ln in lines:
        if ln.step is None:
            continue
        for key in key_options:
            v = ln.get(key)
            if v is not None:
                out.append([ln.step, v])
                break
    return out


def _first_bad_step(run: RunLog) -> int | None:
    for ln in run.train:
        for key in ("loss", "grad_norm"):
            v = ln.get(key)
            if v is not None and not math.isfinite(v):
                return ln.step
    return None


def _cut(curve: Curve, bad_step: int | None) -> Curve:
    if bad_step is None:
        return curve
    return [p for p in curve if p[0] < bad_step and math.isfinite(p[1])]


def _samples_per_step_from_epoch(run: RunLog, train_stats: dict | None) -> int | None:
    """Samples per optimizer step from the log alone: Hugging Face's `epoch` advances by samples per step / training
    set size at every step, so (epoch_b - epoch_a) / (b - a) x size is it (rounded; None without both)."""
    if not train_stats or not train_stats.get("size"):
        return None
    points = [(ln.step, ln.get("epoch")) for ln in run.train if ln.step is not None and is_finite(ln.get("epoch"))]
    if len(points) < 2 or points[-1][0] <= points[0][0]:
        return None
    (a, ea), (b, eb) = points[0], points[-1]
    per_step = (eb - ea) / (b - a) * train_stats["size"]
    return round(per_step) if per_step >= 0.5 else None


def log_facts(run: RunLog) -> dict:
    """The RunRecord fields one parsed log (+ args.json) gives."""
    args = run.args or {}
    summary = run.summary.data if run.summary else {}
    last_step = max((ln.step for ln in run.lines if ln.step is not None), default=None)
    if _int_or_none(summary.get("global_step")) is not None:
        last_step = max(last_step or 0, int(summary["global_step"]))
    max_steps = next((ln.max_steps for ln in reversed(run.lines) if ln.max_steps), None)
    if max_steps is None:
        ms = _int_or_none(args.get("max_steps"))
        max_steps = ms if ms and ms > 0 else None

    per_device_batch = _int_or_none(args.get("per_device_train_batch_size"))
    grad_accum = _int_or_none(args.get("gradient_accumulation_steps"))
    world_size = _int_or_none(_arg(args, "global_world_size", "world_size"))
    if args and world_size is None:
        world_size = 1

    train_stats = parse_dataset_stats(summary.get("train_dataset"))
    val_stats = parse_dataset_stats(summary.get("val_dataset"))
    params = parse_param_info(summary.get("model_parameter_info") or summary.get("model_info"))

    warnings = list(run.warnings)
    samples_per_step = None
    if per_device_batch and grad_accum and world_size:
        samples_per_step = per_device_batch * grad_accum * world_size
    else:
        samples_per_step = _samples_per_step_from_epoch(run, train_stats)
        if samples_per_step is None:
            warnings.append("samples per step unknown (no args.json, and no epoch field with the training set's "
                            "size): samples/s, tokens/s and MFU are left out")

    mem_values = [v for v in (ln.get("memory(GiB)") for ln in run.lines) if is_finite(v)]
    summary_mem = to_float(summary.get("memory"))
    if is_finite(summary_mem):
        mem_values.append(summary_mem)

    bad_step = _first_bad_step(run)
    eval_loss = _curve(run.evals, ("eval_loss",))
    eval_acc = _curve(run.evals, ("eval_token_acc", "eval_acc"))
    if bad_step is not None:
        eval_loss, eval_acc = _cut(eval_loss, bad_step), _cut(eval_acc, bad_step)

    start = _start_step(args)
    elapsed = [(ln.step, e) for ln in run.train if (e := ln.elapsed(start)) is not None]
    eval_elapsed = {}
    for ln in run.evals:
        if ln.step is not None:
            e = ln.elapsed(start)
            if e is None:
                e = parse_elapsed(ln.data.get("elapsed_time"))
            if e is not None:
                eval_elapsed[ln.step] = e
    total = max_steps or (elapsed[-1][0] if elapsed else last_step or 0)
    gc = args.get("gradient_checkpointing")
    flos = run.train_end.get("total_flos") if run.train_end else None
    return {
        "has_log": True,
        "log": str(run.path),
        "log_format": run.log_format,
        "swift_version": args.get("swift_version"),
        "complete": run.summary is not None,
        "torn_last_line": run.torn_last_line,
        "duplicate_lines_dropped": run.duplicates_dropped,
        "diverged": bad_step is not None,
        "first_bad_step": bad_step,
        "global_steps": last_step,
        "max_steps": max_steps,
        "per_device_batch": per_device_batch,
        "grad_accum": grad_accum,
        "world_size": world_size,
        "max_length": _int_or_none(args.get("max_length")),
        "gradient_checkpointing": gc if isinstance(gc, bool) else None,
        "model": _arg(args, "model", "model_id_or_path", "model_type"),
        "samples_per_step": samples_per_step,
        "peak_mem_gib": round(max(mem_values), 2) if mem_values else None,
        "train_loss": _cut(_curve(run.train, ("loss",)), bad_step),
        "memory_curve": _curve(run.train, ("memory(GiB)",)),
        "eval_loss": eval_loss,
        "token_acc": _cut(_curve(run.train, ("token_acc", "acc")), bad_step),
        "eval_token_acc": eval_acc,
        "train_tokens_mean": train_stats["mean"] if train_stats else None,
        "train_tokens_max": train_stats["max"] if train_stats else None,
        "train_samples": train_stats["size"] if train_stats else None,
        "val_samples": val_stats["size"] if val_stats else None,
        "trainable_params": params["trainable_params"] if params else None,
        "total_params": params["total_params"] if params else None,
        "trainable_pct": params["trainable_pct"] if params else None,
        "train_runtime_s": run.train_end.get("train_runtime") if run.train_end else None,
        "total_flos": float(flos) if flos is not None and flos > 0 else None,
        "elapsed": elapsed,
        "eval_elapsed": eval_elapsed,
        "event_steps": _event_steps(run.args, run, total) if elapsed else frozenset(),
        "warnings": warnings,
        "args": run.args,
    }


def record_from_log(log: RunLog, **identity) -> RunRecord:
    """A record of a parsed log, with what the caller knows of its identity (path, hw, experiment, ...)."""
    run_dir = log.run_dir
    ident = {"path": str(run_dir), "hw": None, "experiment": None, "run": run_dir.name, **identity}
    facts = log_facts(log)
    facts["log_path"] = facts.pop("log")
    return RunRecord(**ident, **facts, **sidefiles.read(run_dir))


def read_log_record(path: str | Path, **identity) -> RunRecord:
    """The record of one logging.jsonl (or its folder), without the runner's env.json / run.json."""
    return record_from_log(read_log(path), **identity)


__all__ = ["RunRecord", "LOG_NAME", "log_facts", "record_from_log", "read_log_record"]
