"""The typed run record: everything one run folder's raw files say, and nothing computed from it.

A run folder holds ms-swift's `logging.jsonl` (+ `args.json`), the runner's `env.json` and `run.json`, and the
launcher's `tokens.jsonl`, `profile.json`, `schedule.jsonl` and `gpm.jsonl`. `read_run(folder)` turns them into one
`RunRecord`; every later stage
(measure, estimate, judge, present) reads records, never the files or nested dicts. Statistics over the record
(steady step time, tokens/s, speed-ups, MFU) are the measure stage's (analysis/measure/): a record holds facts.

What a log says is analysis.parse.logfacts'; the side files analysis.parse.sidefiles'.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.parse import sidefiles
from analysis.parse.logfacts import Curve, log_facts
from analysis.parse.logs import LOG_NAME, RunLog, gc_paused, read_log
from analysis.parse.runfile_rows import (
    EnvJson,
    GpmRow,
    LauncherOptions,
    MemCap,
    ProfileJson,
    QuickStop,
    RunJson,
    RunKey,
    ScheduleStep,
)
from experiments.base import runfiles
from experiments.base.runfolder import Args, Env, Host, Launcher, Probe, Profile, ProfileWindow, Run
from experiments.base.runfolder import RunKey as Key


@dataclass(frozen=True)
class HostProbe:
    """env.json's host-speed probe (experiments/record/host.py): Python ns per loop iteration, eager CUDA op dispatch
    microseconds, LoRA-shaped forward+backward ms (None where not measured)."""

    python_ns: float | None
    dispatch_us: float | None
    lora_ms: float | None

    def measured(self) -> bool:
        return any(v is not None for v in vars(self).values())


@dataclass(frozen=True, eq=False)
class RunRecord:
    """One run: identity, status and labels (runner), what ms-swift logged (log facts), launcher side files.
    Frozen, and equal only to itself: the measures of a run are computed once per record (analysis.measure.steps)."""

    # identity (results/<hw>/<experiment>/<run>/) and status (run.json)
    path: str
    hw: str | None
    experiment: str | None
    run: str
    status: str = "ok"                      # ok | failed | running | ...
    failure: str | None = None
    labels: list[str] = field(default_factory=list)
    env: EnvJson = field(default_factory=EnvJson)        # env.json as written (GPU, host, packages)
    run_status: RunJson = field(default_factory=RunJson)  # run.json as written (key, command, notes, times)
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
    profile: ProfileJson | None = None              # profile.json (torch.profiler summary of a few steps)
    schedule: list[ScheduleStep] | None = None      # schedule.jsonl: every step's token counts, known before training
    quick: QuickStop | None = None                  # launch.json's quick stop (a quick run: where and why it stopped)
    gpm_by_step: dict[int, GpmRow] | None = None    # gpm.jsonl (experiments/record/gpm.py): each step's wall, GPM use
    mem_cap: MemCap | None = None                   # launch.json's allocator cap: requested_gib, applied, cap_bytes
    harness: int | None = None                      # launch.json's measuring-design version (runfiles.HARNESS_VERSION)
    compiled_code: str | None = None                # launch.json's compile cache, in words (also one of the labels)

    # ---------------------------------------------------------------- what run.json's key says about the run
    @property
    def key(self) -> RunKey:
        return self.run_status.get(Run.KEY) or {}

    @property
    def overrides(self) -> dict[str, Any]:
        """swift flags the run set on top of its recipe (claims experiments, --set): flag -> value."""
        return dict(self.key.get(Key.OVERRIDES) or {})

    @property
    def launcher(self) -> LauncherOptions:
        """experiments/launch/launcher.py options the run used ({} for a plain `swift sft`)."""
        return (self.key.get(Key.LAUNCHER) or LauncherOptions()).copy()

    @property
    def gpus(self) -> int:
        """GPUs the job ran on: args.json's world size (what ms-swift saw), else run.json's, else 1."""
        if self.world_size:
            return int(self.world_size)
        return int(self.key.get(Key.GPUS) or self.run_status.get(Run.GPUS) or 1)

    @property
    def parallel(self) -> str:
        """How the GPUs shared the work: ddp, or zero2/zero3 from args.json's DeepSpeed config (or run.json's key)."""
        ds = (self.args or {}).get(Args.DEEPSPEED)
        if isinstance(ds, dict):
            stage = (ds.get("zero_optimization") or {}).get("stage")
            if stage in (1, 2, 3):
                return f"zero{stage}"
        if isinstance(ds, str) and ds.startswith("zero"):
            return ds.split(".")[0].split("_")[0]
        return str(self.key.get(Key.PARALLEL) or "ddp")

    @property
    def layout(self) -> str:
        """'1gpu' / '2gpu' / '2gpu-zero3': the tables' grouping beside hardware, experiment and host."""
        return f"{self.gpus}gpu" + ("" if self.parallel == "ddp" else f"-{self.parallel}")

    @property
    def cap_gib(self) -> float | None:
        return self.launcher.get(Launcher.MEM_CAP_GIB)

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
        return {int(s[ProfileWindow.STEP]) for s in (self.profile or {}).get(Profile.STEPS, [])
                if ProfileWindow.STEP in s}

    @property
    def host_id(self) -> str | None:
        """The stable host id of env.json's host fingerprint (experiments/record/host.py); None for runs made before
        it."""
        return runfiles.host_id(self.env)

    @property
    def host_probe(self) -> HostProbe:
        """The host-speed probe's three figures (None where not measured)."""
        probe = (self.env.get(Env.HOST) or {}).get(Host.PROBE) or {}
        return HostProbe(*((probe.get(part) or {}).get(Probe.VALUE) for part in Probe.PARTS))

    @property
    def machine(self) -> str | None:
        """What env.json says of the machine's shape (CPU model and count, RAM): tells machines of different shapes
        apart, not two of one shape."""
        if not self.env.get(Env.CPU_COUNT):
            return None
        return (f"{self.env.get(Env.CPU_MODEL) or 'CPU'} x {self.env[Env.CPU_COUNT]}, {self.env.get(Env.RAM_GIB)} GiB"
                " RAM")

    @property
    def host(self) -> str | None:
        """The host the run was made on, in words: its host id, else (runs made before host fingerprints) its
        machine's shape."""
        return f"host {self.host_id}" if self.host_id else self.machine

    @property
    def name(self) -> str:
        return f"{self.hw} · {self.experiment} · {self.run}"


def record_from_log(log: RunLog, **identity) -> RunRecord:
    """A record of a parsed log, with what the caller knows of its identity (path, hw, experiment, ...)."""
    run_dir = log.run_dir
    ident = {**dict(path=str(run_dir), hw=None, experiment=None, run=run_dir.name), **identity}  # RunRecord fields
    with gc_paused():
        facts = log_facts(log)
    key = (ident.get("run_status") or {}).get(Run.KEY) or {}
    launch = sidefiles.read_launch(run_dir)  # read once: its options and the side files' records
    launch_options = sidefiles.read_launch_options(run_dir, launch)  # a run made by the launcher alone: no run.json key
    launcher = key.get(Key.LAUNCHER) if isinstance(key.get(Key.LAUNCHER), dict) else launch_options or {}
    args = facts.args or {}
    bucket = None
    if isinstance(args.get("callbacks"), list) and "pad_buckets" in args["callbacks"]:
        env: dict = key[Key.ENV] if isinstance(key.get(Key.ENV), dict) else {}
        accum = args.get(Args.GRADIENT_ACCUMULATION_STEPS)
        micro = accum if isinstance(accum, int) and not isinstance(accum, bool) and accum > 0 else 1
        bucket = (micro, env.get("SWIFTBENCH_PAD_MULTIPLE") or PAD_BUCKET_DEFAULT)
    cap = step_token_cap(facts.samples_per_step, facts.max_length, facts.train_tokens_max, bool(args.get("packing")),
                         launcher.get(Launcher.PAD_TO) if isinstance(launcher, dict) else None, bucket)
    sides = sidefiles.read(run_dir, resumed=bool(log.resumes), step_cap=cap, max_step=facts.max_steps,
                           launch=launch)
    if sides.compiled_code:  # how the compiled code was obtained goes on every row of the run, as its weights do
        ident["labels"] = [*(ident.get("labels") or []), sides.compiled_code]
    return RunRecord(**ident, **vars(facts), **vars(sides))


PAD_BUCKET_DEFAULT = 1024  # experiments/recipes/swift_plugin.py's bucket when SWIFTBENCH_PAD_MULTIPLE is unset


def step_token_cap(samples: int | None, length: int | None, longest: float | None, packing: bool,
                   pad_to: object = None, bucket: tuple[int, int | str] | None = None) -> tuple[int, str] | None:
    """The most tokens one optimizer step can hold, padding included, and why: SAMPLES per step x the longest a
    sample can be (max_length; the log's LONGEST training sample where its summary counts one and samples are not
    PACKING), or the launcher's PAD_TO where it pads further (run.json's key, else launch.json's options); the
    plugin's pad_buckets adds at most one BUCKET per micro-batch ((micro-batches, tokens)). None where the log does
    not say enough."""
    if not samples or not length or length < 0:
        return None
    per_sample, what = int(length), "max_length"
    if longest and longest < per_sample and not packing:
        per_sample, what = math.ceil(longest), "the longest training sample the log counts"
    if isinstance(pad_to, int) and not isinstance(pad_to, bool) and pad_to > per_sample:
        per_sample, what = pad_to, "the launcher's pad_to"
    cap, why = int(samples) * per_sample, f"{samples} samples x {per_sample:,} tokens, {what}"
    if bucket is not None:
        micro, multiple = bucket
        try:
            cap += micro * int(multiple)  # run.json's env: a number or its text
        except (TypeError, ValueError):
            return None
        why += f", + {micro} x {int(multiple):,}-token bucket padding (pad_buckets)"
    return cap, why


def read_log_record(path: str | Path, **identity) -> RunRecord:
    """The record of one logging.jsonl (or its folder), without the runner's env.json / run.json."""
    return record_from_log(read_log(path), **identity)


__all__ = ["RunRecord", "LOG_NAME", "record_from_log", "read_log_record"]
