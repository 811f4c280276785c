"""The run folder's JSON objects as typed dicts: env.json, run.json (with its key and the launcher's options),
profile.json and its windows, a schedule.jsonl or gpm.jsonl line, launch.json's quick-stop and allocator-cap records.

The files are the runner's, the launcher's and ms-swift's, written by other versions of them too: a reader gets the
object as written (unknown keys pass, experiments/base/runschema.py checked the types of those it names), and mypy
checks every key the suite reads of it. Every key may be absent (total=False) unless its writer always writes it.
The readers index these with experiments/base/runfolder.py's constants (the writers' too), and each TypedDict of a
run-folder object names only keys of its class there (tests/test_runfolder_contract.py).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict


class GpuCheck(TypedDict, total=False):
    gpu_name: str
    matched_hw: str
    forced: bool


class HostJson(TypedDict, total=False):
    """env.json's host: its fingerprint (host_id, gpu_count_host) and speed probe (experiments/record/host.py)."""

    fingerprint: dict[str, Any]
    probe: dict[str, Any]


class EnvJson(TypedDict, total=False):
    """env.json: what ran where (experiments/record/env.py); `hw` filled from the folder's path where it lacks one."""

    hw: str
    gpu_name: str
    gpu_count: int
    gpu_memory_mib: int
    gpus: list[dict[str, Any]]
    driver: str
    cuda_driver: str
    cuda_torch: str
    topology: str
    nvlinks: list[Any]
    cpu_model: str
    cpu_count: int
    ram_gib: float
    python: str
    platform: str
    packages: dict[str, str]
    suite_commit: str
    host: HostJson
    gpu_check: GpuCheck
    dummy_weights: bool


class LauncherOptions(TypedDict, total=False):
    """experiments/launch/launcher.py's options of a run (run.json's key, else launch.json's `options`)."""

    mem_cap_gib: float | None
    stop_after: int | None
    profile_steps: int
    profile_skip: int
    profile_warmup: int
    profile_activities: str
    profile_host_stacks: bool
    longest_first: bool
    pad_to: int | None
    sdpa_padding_free: bool
    env: Any
    quick: dict[str, Any]
    liger_config: Any
    sdp_backends: list[str]


class RunKey(TypedDict, total=False):
    """run.json's key: what makes two runs the same job (experiments/run/run_spec.py)."""

    experiment: str
    recipe: str
    model: str
    data: str
    parallel: str
    max_steps: int | None
    gpus: int
    overrides: dict[str, Any]
    env: dict[str, str]
    launcher: LauncherOptions


class ResumeEntry(TypedDict):
    log_lines_before: int
    from_step: int


class RoundPlace(TypedDict, total=False):
    """run.json `round`: the set (start time and host), round (1-based) of how many, slot in the round, and the item
    (experiment, @steps of a cut run, "(plain)")."""

    set: str
    round: int
    of: int
    slot: int
    item: str


class RunJson(TypedDict, total=False):
    """run.json: the runner's status of a run (experiments/run/run_folders.py)."""

    status: str
    hw: str
    experiment: str
    reason: str | None
    key: RunKey
    max_steps: int | None
    gpus: int
    parallel: str
    dummy_weights: bool
    offline_data: bool
    forced_hw: bool
    imported: bool | dict[str, Any]
    resumes: list[ResumeEntry]
    wall_s: float
    command: list[str]
    notes: list[str]
    swift_version: str
    started: str
    finished: str
    round: RoundPlace        # an interleaved set's run (experiments/run/rounds.py)
    probe_after: dict[str, Any]  # the host probe right after the run (experiments/record/host.py's probe())
    harness: str             # "plain": the printed command alone, no launcher


class GpmRow(TypedDict):
    """GPM's figures of a window (a gpm.jsonl line, profile.json's window `gpm`): wall seconds and % use (a secondary
    metric NVML did not give is None)."""

    wall_s: float
    graphics_util: float
    sm_util: float | None
    tensor_util: float | None
    dram_bw_util: float | None


class GpuOpRow(TypedDict):
    op: str
    gpu_ms: float
    calls: int


class ShareRow(TypedDict):
    """A frame or package of a thread's host stacks and its share of the step."""

    frame: str
    share: float


class ThreadRow(TypedDict, total=False):
    """One Python thread of a window's host stacks (experiments/launch/hoststacks.py)."""

    thread: str
    busy_share: float
    idle_share: float
    cpu_share: float
    owner: list[ShareRow]
    package: list[ShareRow]
    leaf: list[ShareRow]


class CpuRow(TypedDict):
    """One OS thread's CPU time share of a window."""

    task: str
    cpu_share: float


class HostStacks(TypedDict, total=False):
    interval_s: float
    rounds: int
    wall_s: float
    rate_hz: float
    threads: list[ThreadRow]
    cpu: list[CpuRow]


class GcRow(TypedDict):
    collections: int
    seconds: float


class ProfileWindow(TypedDict, total=False):
    """One profiled step of profile.json (experiments/launch/profiler.py). A figure the launcher could not take is
    absent or null: readers ask with .get() before they index."""

    step: int
    wall_s: float
    gpu_busy_s: float
    gpu_busy_frac: float
    gpu_comm_s: float
    gpu_events: int
    host_events: int
    processing_s: float
    top_gpu_ops: list[GpuOpRow]
    warmup: bool
    gc: GcRow
    gpm: GpmRow
    host_stacks: HostStacks


class ProfiledStep(ProfileWindow, total=False):
    """A measured profiled window with a GPU busy time, and the host's part of its wall (wall - GPU busy)."""

    host_s: float


class ProfileJson(TypedDict, total=False):
    """profile.json: the launcher's torch.profiler windows of a run."""

    device: str
    profile_steps: int
    profile_skip: int
    profile_warmup: int
    host_stacks: bool
    activities: list[str]
    activities_note: str
    window: str
    steps: list[ProfileWindow]
    median_wall_s: float
    median_gpu_busy_frac: float


class ScheduleStep(TypedDict, total=False):
    """A schedule.jsonl line: one optimizer step's token counts, known before training (experiments/launch/
    schedule.py)."""

    step: int
    micro_batches: int
    tokens: int
    padded_tokens: int
    label_tokens: int
    samples: int


class LaunchJson(TypedDict, total=False):
    """launch.json as the suite reads it (experiments/launch/launcher.py writes more): the launcher's options, a quick
    run's stop, the allocator cap and the measuring design's version, each checked where it is read
    (analysis/parse/sidefiles.py), as launch.json is written by other versions of the launcher too."""

    options: object
    quick: object
    mem_cap: object
    harness: object
    compile_cache: object


class QuickStop(TypedDict, total=False):
    """launch.json's record of a quick run's stop (experiments/launch/quick_stop.py)."""

    budget_s: float
    max_steps: int
    reserve_s: float
    stopped: bool
    decided_at: int | None
    event_steps: list[int]
    elapsed_at_decision_s: float | None
    why: str
    at_step: int
    max_steps_of_schedule: int
    elapsed_s: float


class MemCap(TypedDict, total=False):
    """launch.json's allocator cap as the suite reads it: requested GiB, whether it was applied and, where it was,
    the cap in bytes."""

    requested_gib: float
    applied: bool
    cap_bytes: int


class ResumeCheck(TypedDict):
    """One resume_check.json as analysis.parse.resume.resume_checks reads it (its docstring says each key)."""

    path: Path
    hw: str
    experiment: str
    run: str
    host_id: str | None
    signal: str | None
    killed_after_step: int | None
    from_step: int | None
    restart_to_first_step_s: float | None
    trainer_to_first_step_s: float | None
    left_behind: int
    weights_in_results: int
    finished: bool
    repeated: list[tuple[int, float | None, float | None]]
