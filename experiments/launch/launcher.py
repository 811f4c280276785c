"""Run ms-swift's `swift sft` in this process, with what measuring a run needs around it (token counts, profiler, caps).

    python -m experiments.launch [--mem-cap-gib N] [--profile-steps K [--profile-skip S] [--profile-out DIR]]
                                 [--longest-first] [--pad-to N] [--no-fast-exit] -- <swift sft args...>

`swift sft ARGS` (swift/cli/main.py) starts `python swift/cli/sft.py ARGS`, which runs
try_use_single_device_mode(), try_init_unsloth(), try_init_ray() and then swift.pipelines.sft_main(); this module
does the same in-process, after what follows. Several GPUs: `torchrun --nproc_per_node N -m experiments.launch ...`
(what `NPROC_PER_NODE=N swift sft` does with sft.py); rank 0 writes the files below, token counts summed over ranks.

--mem-cap-gib N   torch.cuda.set_per_process_memory_fraction(N GiB / the device's total memory): PyTorch's caching
                  allocator of THIS process may hold at most N GiB, as on a smaller card (the CUDA context, ~0.5 GiB,
                  is outside the cap). Nothing about the GPU itself is changed. Skipped, with a message, without CUDA.
--profile-steps K torch.profiler over K optimizer steps after the first S (--profile-skip, default 1). Each window
                  runs from the end of the step before to the end of the step (so it includes fetching the step's
                  batches); per step it records the wall time and the GPU busy time (union of the device's kernel and
                  copy intervals) into DIR/profile.json (DIR: --profile-out, default the run's --output_dir).
                  --profile-activities cuda records GPU activity alone: the host-side operator recording of the
                  default (all) slowed the seed recipe's profiled steps by about 40 % (8.5-9.0 s against a 6.3 s
                  median).
                  `cuda` still traces every CUDA runtime call (cudaLaunchKernel): on slow H200 hosts the seed recipe's
                  ~177,000 launches made its profiled steps 16-18 % longer than its steady ones. `kernels` records the
                  GPU's kernels, copies and memsets alone (torch's per-type activity filter, where the installed torch
                  has it; else as `cuda`, said in profile.json): the GPU hosts' torch 2.11 has no such filter, so
                  their runs are `cuda` runs. experiments.probes.cupti_kernels (CUPTI's kernel records alone, through
                  ctypes) was measured as the way around it and added as much per launch (profiler_overhead).
--longest-first   The first training batch is made of the longest samples of the epoch (the rest keeps ms-swift's
                  order), so the memory peak comes at step 1. ms-swift 4.6.0 has no sort-by-length flag;
                  --group_by_length only puts the single longest sample into the first batch.
--pad-to N        Pad every batch to N tokens (ms-swift's collator `padding_to`): activations as for N-token inputs.
--stop-after N    End training after optimizer step N (with an evaluation there) while the schedule stays the full
                  run's: the cut run is an exact prefix of the full one (same learning rate at every step, same data
                  order), so its eval loss at step N can be set beside the full runs' eval at step N. (--max_steps
                  instead shrinks the warm-up and cosine decay to N steps.)
--sdpa-padding-free  Let --padding_free run with SDPA attention. ms-swift 4.6.0 refuses padding_free unless
                  attn_impl is a flash-attention one (SftArguments._check_padding_free), but transformers >= 4.54 builds
                  a block-diagonal causal mask from the packed rows' position_ids for SDPA/eager
                  (masking_utils.find_packed_sequence_indices), so each sample attends only to itself, as when padded.
                  Applied only when that function exists; recorded in launch.json.
--no-fast-exit    By default the process ends with os._exit once sft returned and its files are written, skipping
                  the interpreter teardown (about 40 s after every H200 run so far, with the model still resident).

Always: the real (attention-mask) and padded token count of every micro-batch, summed per optimizer step, goes to
<output_dir>/tokens.jsonl, so tokens/s is measured rather than inferred from the data's mean length (a
length-grouped order makes some steps long and others short). And, unless --no-schedule, the same counts for
every step of the full schedule, computed from ms-swift's dataset and sampler before training starts, go to
<output_dir>/schedule.jsonl (experiments/recipes/schedule_core.py): what a quick run's estimate of the full run rests
on.
--quick-budget-s S / --quick-max-steps N: a quick run (experiments/launch/quick_stop.py): stop within S seconds of this
process (model load included) or after step N, with two evaluations and saves at the end.

Everything it did is written to <output_dir>/launch.json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import traceback
from pathlib import Path

from experiments.base import runfiles

GIB = 2**30
# torch.backends.cuda's switch for each SDPA backend (--sdp-backends)
SDP_BACKENDS = {"cudnn": "enable_cudnn_sdp", "flash": "enable_flash_sdp", "efficient": "enable_mem_efficient_sdp",
                "math": "enable_math_sdp"}
LAUNCH_FILE = runfiles.LAUNCH_JSON
PROFILE_FILE = runfiles.PROFILE_JSON
TOKENS_FILE = runfiles.TOKENS


# ------------------------------------------------------------------------------------------- arguments


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m experiments.launch", description=__doc__.splitlines()[0],
                                usage="%(prog)s [options] -- <swift sft args...>")
    p.add_argument("--mem-cap-gib", type=float, default=None, help="cap PyTorch's allocator in this process (GiB)")
    p.add_argument("--profile-steps", type=int, default=0, help="profile K optimizer steps")
    p.add_argument("--profile-skip", type=int, default=1, help="steps before the first profiled one (default 1)")
    p.add_argument("--profile-out", default=None, help="folder for profile.json (default: --output_dir)")
    p.add_argument("--profile-warmup", type=int, default=0,
                   help="profile this many steps right before the measured ones, unmeasured (first-window costs)")
    p.add_argument("--profile-activities", choices=["all", "cuda", "kernels"], default="all",
                   help="all: host operators and GPU activity (names the top operators; slows a host-bound step); "
                        "cuda: GPU activity and CUDA runtime calls (CUPTI); kernels: GPU kernels, copies and memsets "
                        "alone (no runtime-call tracing; torch's per-type filter, else as cuda)")
    p.add_argument("--profile-host-stacks", action="store_true",
                   help="sample every Python thread's stack during the measured profiled steps (experiments/"
                        "hoststacks.py): where the host time of a host-bound step goes")
    p.add_argument("--longest-first", action="store_true", help="first batch = the longest samples")
    p.add_argument("--pad-to", type=int, default=None, help="pad every batch to N tokens")
    p.add_argument("--stop-after", type=int, default=None, help="end training after optimizer step N")
    p.add_argument("--sdpa-padding-free", action="store_true",
                   help="allow --padding_free with SDPA, eager or flex attention")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="set an environment variable in this process before anything is imported (repeatable)")
    p.add_argument("--sdp-backends", default=None, metavar="LIST",
                   help="the SDPA backends torch may pick, comma-separated from " + ", ".join(SDP_BACKENDS) +
                        " (the others are switched off in this process; e.g. flash,efficient,math: no cuDNN)")
    p.add_argument("--liger-config", default=None, metavar="JSON",
                   help="which Liger kernels --use_liger_kernel applies (transformers' liger_kernel_config)")
    p.add_argument("--no-fast-exit", action="store_true", help="let the interpreter tear down normally")
    p.add_argument("--no-schedule", action="store_true",
                   help="write no schedule.jsonl (every step's tokens, before training: "
                        "experiments/recipes/schedule_core.py)")
    p.add_argument("--quick-budget-s", type=float, default=None,
                   help="a quick run: stop cleanly within this many seconds of the process "
                        "(experiments/launch/quick_stop.py)")
    p.add_argument("--quick-max-steps", type=int, default=None, help="a quick run: stop by this step at the latest")
    return p


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """Launcher options before `--`, swift sft arguments after it (a leading `swift sft` / `sft` is dropped)."""
    parser = build_parser()
    if "--" not in argv:
        parser.error("put the swift sft arguments after `--`")
    i = argv.index("--")
    opts = parser.parse_args(argv[:i])
    swift_args = list(argv[i + 1:])
    if swift_args[:2] == ["swift", "sft"]:
        swift_args = swift_args[2:]
    elif swift_args[:1] == ["sft"]:
        swift_args = swift_args[1:]
    if not swift_args:
        parser.error("no swift sft arguments after `--`")
    if opts.mem_cap_gib is not None and opts.mem_cap_gib <= 0:
        parser.error("--mem-cap-gib must be > 0")
    if opts.profile_steps < 0 or opts.profile_skip < 0 or opts.profile_warmup < 0:
        parser.error("--profile-steps, --profile-skip and --profile-warmup must be >= 0")
    if opts.pad_to is not None and opts.pad_to <= 0:
        parser.error("--pad-to must be > 0")
    if opts.stop_after is not None and opts.stop_after <= 0:
        parser.error("--stop-after must be > 0")
    for item in opts.env:
        name, eq, _ = item.partition("=")
        if not eq or not name or not name.replace("_", "").isalnum():
            parser.error(f"--env wants NAME=VALUE, got {item!r}")
    if opts.sdp_backends is not None:
        names = [n for n in opts.sdp_backends.split(",") if n]
        bad = [n for n in names if n not in SDP_BACKENDS]
        if bad or not names:
            parser.error(f"--sdp-backends wants a comma-separated list from {', '.join(SDP_BACKENDS)}, got "
                         f"{opts.sdp_backends!r}")
        opts.sdp_backends = names
    if opts.liger_config is not None:
        try:
            cfg = json.loads(opts.liger_config)
        except ValueError as exc:
            parser.error(f"--liger-config is not JSON: {exc}")
        if not isinstance(cfg, dict) or not all(isinstance(v, bool) for v in cfg.values()):
            parser.error("--liger-config wants a JSON object of booleans, e.g. "
                         '{"fused_linear_cross_entropy": false, "cross_entropy": true}')
        opts.liger_config = cfg
    return opts, swift_args


def option_argv(launcher: dict) -> list[str]:
    """Launcher options of a claims experiment (experiments/recipes/claims/ `launcher`) as command-line arguments."""
    out: list[str] = []
    if launcher.get("mem_cap_gib") is not None:
        out += ["--mem-cap-gib", f"{launcher['mem_cap_gib']:g}"]
    if launcher.get("profile_steps"):
        out += ["--profile-steps", str(int(launcher["profile_steps"]))]
        if launcher.get("profile_skip") is not None:
            out += ["--profile-skip", str(int(launcher["profile_skip"]))]
        if launcher.get("profile_activities"):
            out += ["--profile-activities", str(launcher["profile_activities"])]
        if launcher.get("profile_warmup"):
            out += ["--profile-warmup", str(int(launcher["profile_warmup"]))]
        if launcher.get("profile_host_stacks"):
            out.append("--profile-host-stacks")
    if launcher.get("longest_first"):
        out.append("--longest-first")
    if launcher.get("pad_to"):
        out += ["--pad-to", str(int(launcher["pad_to"]))]
    if launcher.get("stop_after"):
        out += ["--stop-after", str(int(launcher["stop_after"]))]
    if launcher.get("sdpa_padding_free"):
        out.append("--sdpa-padding-free")
    for name, value in sorted((launcher.get("env") or {}).items()):
        out += ["--env", f"{name}={value}"]
    if launcher.get("sdp_backends"):
        out += ["--sdp-backends", ",".join(launcher["sdp_backends"])]
    if launcher.get("liger_config"):
        out += ["--liger-config", json.dumps(launcher["liger_config"], sort_keys=True)]
    if launcher.get("fast_exit") is False:
        out.append("--no-fast-exit")
    if launcher.get("schedule") is False:
        out.append("--no-schedule")
    if launcher.get("quick"):  # experiments/launch/quick_stop.py
        out += ["--quick-budget-s", f"{launcher['quick']['budget_s']:g}",
                "--quick-max-steps", str(int(launcher["quick"]["max_steps"]))]
    return out


def swift_flag(swift_args: list[str], name: str) -> str | None:
    """The value of --NAME in a swift argument list (last one wins, as in argparse)."""
    value = None
    for i, a in enumerate(swift_args):
        if a == f"--{name}" and i + 1 < len(swift_args):
            value = swift_args[i + 1]
        elif a.startswith(f"--{name}="):
            value = a.split("=", 1)[1]
    return value


# ------------------------------------------------------------------------------------------- memory cap


def memory_fraction(cap_gib: float, total_bytes: int) -> float:
    """Fraction of the device's memory that is CAP_GIB (what set_per_process_memory_fraction takes)."""
    if cap_gib <= 0:
        raise ValueError("the cap must be > 0 GiB")
    if total_bytes <= 0:
        raise ValueError("the device's total memory must be > 0")
    return min(1.0, cap_gib * GIB / total_bytes)


def apply_memory_cap(cap_gib: float, torch_mod=None, device: int | None = None) -> dict:
    """Cap this process's CUDA caching allocator at CAP_GIB; without CUDA, say so and do nothing."""
    if torch_mod is None:
        import torch as torch_mod
    info: dict = {"requested_gib": cap_gib, "applied": False}
    if not torch_mod.cuda.is_available():
        info["reason"] = "no CUDA device in this process"
        print(f"launch: no CUDA device: --mem-cap-gib {cap_gib:g} is not applied", flush=True)
        return info
    if device is None:
        device = int(os.environ.get("LOCAL_RANK", "0") or 0)
    total = int(torch_mod.cuda.get_device_properties(device).total_memory)
    fraction = memory_fraction(cap_gib, total)
    if cap_gib * GIB >= total:
        print(f"launch: --mem-cap-gib {cap_gib:g} is not below the device's {total / GIB:.2f} GiB: no cap", flush=True)
        info.update(total_bytes=total, fraction=1.0, reason="cap at or above the device's memory")
        return info
    torch_mod.cuda.set_per_process_memory_fraction(fraction, device)
    info.update(applied=True, device=device, total_bytes=total, total_gib=round(total / GIB, 3),
                fraction=fraction, cap_bytes=int(fraction * total),
                device_name=torch_mod.cuda.get_device_name(device))
    print(f"launch: allocator capped at {cap_gib:g} GiB = {fraction:.6f} of {total / GIB:.2f} GiB "
          f"({info['device_name']}, device {device}; this process only)", flush=True)
    return info


# ------------------------------------------------------------------------------------------- profiler


def union_ns(intervals: list[tuple[int, int]]) -> int:
    """Total length covered by [start, end) intervals (overlaps counted once)."""
    total, cur_s = 0, 0  # cur_s is read only once cur_e is set
    cur_e: int | None = None
    for s, e in sorted(intervals):
        if e <= s:
            continue
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def rank() -> int:
    """This process's rank under torchrun (0 alone): only rank 0 writes the run's files."""
    return int(os.environ.get("RANK", "0") or 0)


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1") or 1)


def is_comm_kernel(name: str) -> bool:
    """NCCL's kernels (all-reduce, reduce-scatter, all-gather, ...): a step's communication on the GPU."""
    return "nccl" in name.lower()


def _device_intervals(prof) -> tuple[list[tuple[int, int]], int, list[tuple[int, int]], dict[str, list]]:
    """(GPU activity intervals in ns, number of host-side events, the intervals of NCCL kernels, {GPU activity name:
    [ns, count]}) of a stopped torch.profiler.profile, in one pass over its events."""
    from torch.autograd import DeviceType

    results = prof.profiler.kineto_results
    by_name: dict[str, list] = {}
    gpu, host, comm = [], 0, []
    for e in results.events():
        if e.device_type() == DeviceType.CUDA:
            # gpu_user_annotation ranges span kernels rather than being GPU work themselves
            if getattr(e, "is_user_annotation", lambda: False)():
                continue
            start, dur = e.start_ns(), e.duration_ns()
            span = (start, start + dur)
            gpu.append(span)
            name = e.name()
            acc = by_name.get(name)
            if acc is None:
                by_name[name] = [dur, 1]
            else:
                acc[0] += dur
                acc[1] += 1
            if is_comm_kernel(name):
                comm.append(span)
        else:
            host += 1
    return gpu, host, comm, by_name


def top_gpu_ops(by_name: dict[str, list], n: int = 15) -> list[dict]:
    """The N GPU kernels and copies with the most GPU time (where a step's GPU time goes), from _device_intervals'
    totals by name. Not prof.key_averages(): it builds the whole operator tree, 20-28 s per profiled step of the seed
    recipe's ~380,000 events on the H200 hosts (profile.json `processing_s`), charged to the step after the window."""
    rows = [{"op": k, "gpu_ms": round(ns / 1e6, 3), "calls": c} for k, (ns, c) in by_name.items() if ns]
    rows.sort(key=lambda r: -r["gpu_ms"])
    return rows[:n]


GPU_ONLY_KINDS = ("CONCURRENT_KERNEL", "GPU_MEMCPY", "GPU_MEMSET")  # CUPTI kinds of `--profile-activities kernels`


def profiler_activities(torch, which: str, cuda: bool) -> tuple[list, list[str], str | None]:
    """(activities for torch.profiler.profile, their names for profile.json, a note or None) for WHICH ('all', 'cuda',
    'kernels'). 'kernels' is CUDA with torch's per-type filter (GPU_ONLY_KINDS: no runtime-API tracing), where the
    installed torch has that filter (torch.profiler.profiler._parse_activities); else plain CUDA, with a note."""
    act = torch.profiler.ProfilerActivity
    if not cuda:
        return [act.CPU], ["CPU"], None
    if which == "all":
        return [act.CPU, act.CUDA], ["CPU", "CUDA"], None
    if which == "kernels":
        if hasattr(torch.profiler.profiler, "_parse_activities"):
            return [{act.CUDA: list(GPU_ONLY_KINDS)}], [f"CUDA:{k}" for k in GPU_ONLY_KINDS], None
        return [act.CUDA], ["CUDA"], (f"torch {torch.__version__} has no per-type activity filter: "
                                      "CUDA activity with runtime calls (as --profile-activities cuda)")
    return [act.CUDA], ["CUDA"], None


class GcTimer:
    """Python's garbage collections inside a window, by generation, and the seconds they took (gc.callbacks): a
    full collection over a heap of hundreds of thousands of profiler events is one suspect for a profiled step
    running longer than its unprofiled neighbours (issue 12)."""

    def __init__(self):
        self.counts = {0: 0, 1: 0, 2: 0}
        self.seconds = 0.0
        self._t = None

    def __call__(self, phase, info):
        if phase == "start":
            self._t = time.perf_counter()
        elif self._t is not None:
            self.seconds += time.perf_counter() - self._t
            self.counts[info.get("generation", 0)] = self.counts.get(info.get("generation", 0), 0) + 1
            self._t = None

    def __enter__(self):
        import gc

        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc):
        import gc

        if self in gc.callbacks:
            gc.callbacks.remove(self)
        return False

    def summary(self) -> dict:
        return {"collections": {str(k): v for k, v in self.counts.items()}, "seconds": round(self.seconds, 4)}


def make_profiler_callback(steps: int, skip: int, out_file: Path, record: dict, which: str = "all", warmup: int = 0,
                           host_stacks: bool = False):
    """A transformers TrainerCallback that profiles optimizer steps skip+1 .. skip+steps. WHICH: 'all' records host
    operators and GPU activity, 'cuda' GPU activity alone (on a machine without CUDA, host operators anyway).
    WARMUP: that many steps right before (skip-warmup+1 .. skip) run under the profiler too, unmeasured (profile.json
    lists them with `warmup: true` and only their wall time): the first profiled step of a run came out 1.18-1.26x
    the seed recipe's steady step on five of eight runs, the second ~1.0 (a one-time cost of the first window).
    HOST_STACKS: each measured step also samples every Python thread's stack (experiments/launch/hoststacks.py), stored
    as the step's `host_stacks`."""
    warmup = max(0, min(int(warmup), skip))
    import torch
    from transformers import TrainerCallback

    cuda = torch.cuda.is_available()
    activities, names, note = profiler_activities(torch, which, cuda)

    class StepProfiler(TrainerCallback):
        def __init__(self):
            self.prof = None
            self.t0 = None
            self.step = None
            self.sampler = None
            self.gc = None
            self.gpm = None  # GPM over exactly this window (experiments/record/gpm.py), False where there is none
            self.start_error = None
            self.data = {"device": "cuda" if cuda else "cpu", "profile_steps": steps, "profile_skip": skip,
                         "profile_warmup": warmup, "host_stacks": bool(host_stacks),
                         "activities": names, **({"activities_note": note} if note else {}),
                         "window": "end of the previous optimizer step -> end of this one (includes fetching its "
                                   "batches)", "steps": []}
            record["profile"] = {"file": str(out_file), "steps": steps, "skip": skip, "device": self.data["device"]}

        def _sync(self):
            if cuda:
                torch.cuda.synchronize()

        def _start(self, step: int):
            self._sync()
            try:
                self.prof = torch.profiler.profile(activities=activities, record_shapes=False, with_stack=False)
                self.prof.start()
            except Exception as exc:  # noqa: BLE001 - no profile for this step, training goes on
                self.prof = None
                self.data["steps"].append({"step": step, "error": f"{type(exc).__name__}: {exc}"})
                self._write()
                return
            self.step = step
            try:  # neither may cost the training run: a window without them says why
                if host_stacks and step > skip:
                    from experiments.launch.hoststacks import StackSampler

                    self.sampler = StackSampler().start()
                self.gc = GcTimer().__enter__()
            except Exception as exc:  # noqa: BLE001
                self.start_error = f"{type(exc).__name__}: {exc}"
            self._gpm_mark()
            self.t0 = time.perf_counter()

        def _gpm_mark(self) -> dict | None:
            """GPM's counters since the previous mark (the window's start), or None; never raises."""
            if not cuda or self.gpm is False:
                return None
            try:
                if self.gpm is None:
                    from experiments.record.gpm import Gpm

                    self.gpm = Gpm.open()[0] or False  # open() takes the first mark
                    return None
                return self.gpm.mark()
            except Exception:  # noqa: BLE001 - no GPM reading for this window
                self.gpm = False
                return None

        def _finish(self):
            self._sync()
            wall = time.perf_counter() - self.t0
            entry = {"step": self.step, "wall_s": round(wall, 6), "gpu_busy_s": None, "gpu_busy_frac": None}
            m = self._gpm_mark()
            if m is not None:  # GPM over this window: the profiler's kernel union against the GPU's active time
                entry["gpm"] = m
            try:
                if self.gc is not None:
                    self.gc.__exit__(None, None, None)
                    entry["gc"] = self.gc.summary()
                if self.sampler is not None:
                    entry["host_stacks"] = self.sampler.stop()
            except Exception as exc:  # noqa: BLE001 - as the profiler's own errors below
                entry["host_error"] = f"{type(exc).__name__}: {exc}"
            self.gc = self.sampler = None
            if self.start_error:
                entry["host_error"] = self.start_error
                self.start_error = None
            if self.step <= skip:  # a warm-up window: recorded in full, left out of every figure
                entry["warmup"] = True
            try:  # a profiler problem must never cost the training run
                self.prof.stop()
                t_proc = time.perf_counter()
                gpu, host, comm, by_name = _device_intervals(self.prof)
                busy = union_ns(gpu) / 1e9 if cuda else None
                entry.update({"gpu_busy_s": None if busy is None else round(busy, 6),
                              # NCCL kernels' time (overlapping compute or not): the step's communication on GPU 0
                              "gpu_comm_s": None if busy is None else round(union_ns(comm) / 1e9, 6),
                              "gpu_busy_frac": None if busy is None or wall <= 0 else round(busy / wall, 4),
                              "gpu_events": len(gpu), "host_events": host,
                              "top_gpu_ops": top_gpu_ops(by_name) if cuda else [],
                              "processing_s": round(time.perf_counter() - t_proc, 3)})
            except Exception as exc:  # noqa: BLE001
                entry["error"] = f"{type(exc).__name__}: {exc}"
            self.data["steps"].append(entry)
            self.prof, self.step = None, None
            self._write()

        def _write(self):
            measured = [s for s in self.data["steps"] if not s.get("warmup")]
            fr = [s["gpu_busy_frac"] for s in measured if s.get("gpu_busy_frac") is not None]
            walls = [s["wall_s"] for s in measured if s.get("wall_s") is not None]
            self.data["median_wall_s"] = statistics.median(walls) if walls else None
            self.data["median_gpu_busy_frac"] = statistics.median(fr) if fr else None
            out_file.parent.mkdir(parents=True, exist_ok=True)
            out_file.write_text(json.dumps(self.data, indent=2))

        def on_train_begin(self, args, state, control, **kwargs):
            if skip - warmup == 0 and steps > 0:
                self._start(state.global_step + 1)

        def on_step_end(self, args, state, control, **kwargs):
            g = state.global_step  # the optimizer step that just ended
            if self.prof is not None:
                self._finish()
            if skip - warmup <= g < skip + steps:
                self._start(g + 1)

        def on_train_end(self, args, state, control, **kwargs):
            if self.prof is not None:  # training ended inside a window: drop it
                self.prof.stop()
                self.prof = None
            if self.sampler is not None:
                self.sampler.stop()
                self.sampler = None
            if self.gc is not None:
                self.gc.__exit__(None, None, None)
                self.gc = None
            if self.gpm:  # the window's GPM samples
                self.gpm.close()
                self.gpm = False
            self._write()

    return StepProfiler()


# ------------------------------------------------------------------------------------------- stop after N


def make_stop_callback(stop_after: int, record: dict):
    """End training after optimizer step STOP_AFTER as transformers ends it at max_steps: evaluate and save there."""
    from transformers import TrainerCallback
    from transformers.trainer_utils import IntervalStrategy

    record["stop_after"] = {"step": stop_after, "stopped": False}

    class StopAfter(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step >= stop_after and not control.should_training_stop:
                control.should_training_stop = True
                control.should_log = True
                if args.eval_strategy == IntervalStrategy.STEPS:
                    control.should_evaluate = True
                record["stop_after"].update(stopped=True, at_step=state.global_step, max_steps=state.max_steps)
            return control

    return StopAfter()


# ------------------------------------------------------------------------------------------- token counts


def batch_token_counts(batches: list) -> dict:
    """Real (attention mask), padded (input_ids size) and label tokens of the micro-batches of one optimizer step."""
    import torch

    real, padded, labels = [], [], []
    for b in batches:
        ids = b.get("input_ids") if hasattr(b, "get") else None
        if ids is None:
            continue
        mask = b.get("attention_mask")
        padded.append(ids.numel())
        real.append(mask.sum() if mask is not None else torch.tensor(ids.numel(), device=ids.device))
        lab = b.get("labels")
        labels.append((lab != -100).sum() if lab is not None else torch.tensor(0, device=ids.device))
    if not padded:
        return {"micro_batches": 0, "tokens": 0, "padded_tokens": 0, "label_tokens": 0}
    n = len(padded)
    device = real[0].device
    stacked = torch.stack([torch.as_tensor(x).to(device) for x in real + labels])
    totals = torch.stack([stacked[:n].sum(), torch.tensor(sum(padded), device=device), stacked[n:].sum(),
                          torch.tensor(n, device=device)]).to(torch.int64)
    if world_size() > 1 and torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.all_reduce(totals)  # the whole job's step: every rank's micro-batches
    # one transfer for the whole step (logging every step already synchronises once per step)
    tokens, padded_total, label_tokens, micro = totals.tolist()
    return {"micro_batches": int(micro), "tokens": int(tokens), "padded_tokens": int(padded_total),
            "label_tokens": int(label_tokens)}


def install_token_counter(out_file: Path, record: dict) -> None:
    """Wrap transformers' Trainer.get_batch_samples (it gathers one optimizer step's micro-batches) to append the
    step's token counts to OUT_FILE (one JSON line per optimizer step)."""
    from transformers import Trainer

    orig = Trainer.get_batch_samples
    record["tokens"] = {"file": str(out_file)}
    out_file.parent.mkdir(parents=True, exist_ok=True)

    def get_batch_samples(self, epoch_iterator, num_batches, *args, **kwargs):
        batches, num_items = orig(self, epoch_iterator, num_batches, *args, **kwargs)
        # only the training loop calls this (evaluation iterates on its own); the model may still be in eval mode
        # right after an evaluation, so that is no test (runs of 2026-11-30 lack the step after each eval)
        if batches:
            try:
                counts = batch_token_counts(batches)  # every rank calls it: the sum over ranks is collective
                line = {"step": int(self.state.global_step) + 1, **counts}
                if world_size() > 1:
                    line["ranks"] = world_size()
                if rank() == 0:
                    with out_file.open("a") as fh:
                        fh.write(json.dumps(line) + "\n")
            except Exception as exc:  # noqa: BLE001 - counting must never cost the training run
                record["tokens"]["error"] = f"{type(exc).__name__}: {exc}"
        return batches, num_items

    Trainer.get_batch_samples = get_batch_samples  # type: ignore[method-assign]  # patching the library on purpose


# ------------------------------------------------------------------------------------------- ms-swift patches


def longest_first_order(batches: list[list[int]], lengths, batch_size: int) -> list[list[int]]:
    """The same samples, the BATCH_SIZE longest first, the rest in their order, re-cut into batches.

    The number of batches and the size of every batch stay as they were (the last one may stay short)."""
    flat = [i for b in batches for i in b]
    if not flat:
        return batches
    top = sorted(flat, key=lambda i: (-lengths[i], i))[:batch_size]
    chosen = set(top)
    rest = [i for i in flat if i not in chosen]
    sizes = [len(b) for b in batches]
    out, pos = [top], 0
    for size in sizes[1:]:
        out.append(rest[pos:pos + size])
        pos += size
    return out


def install_patches(opts: argparse.Namespace, record: dict, callbacks: list) -> None:
    """Hook into ms-swift 4.6.0: extra trainer callbacks, longest-first first batch, padding to N tokens."""
    from functools import partial

    from swift.dataloader import BatchSamplerShard
    from swift.trainers.mixin import DataLoaderMixin, SwiftMixin

    if callbacks:
        orig_callbacks = SwiftMixin._get_callbacks

        def _get_callbacks(self, args):
            return orig_callbacks(self, args) + list(callbacks)

        SwiftMixin._get_callbacks = _get_callbacks

    if opts.longest_first:
        orig_loader = DataLoaderMixin.get_train_dataloader
        orig_iter = BatchSamplerShard.__iter__
        record["longest_first"] = {"applied": False}

        def get_train_dataloader(self, *args, **kwargs):
            loader = orig_loader(self, *args, **kwargs)
            sampler = getattr(loader, "batch_sampler", None)
            sampler = getattr(sampler, "batch_sampler", sampler)  # accelerate's SkipBatchSampler wraps it
            dataset = self.train_dataset
            if isinstance(sampler, BatchSamplerShard) and hasattr(dataset, "__len__"):
                lengths = [max(x) if isinstance(x, list) else x for x in dataset["lengths"]]
                sampler._swiftbench_lengths = lengths
            else:
                record["longest_first"]["reason"] = f"not applied: sampler {type(sampler).__name__}"
            return loader

        def __iter__(self):
            lengths = getattr(self, "_swiftbench_lengths", None)
            if lengths is None or getattr(self, "_swiftbench_done", False):
                yield from orig_iter(self)
                return
            self._swiftbench_done = True  # the first pass (epoch) only
            batches = longest_first_order(list(orig_iter(self)), lengths, self.batch_size)
            if batches:
                record["longest_first"].update(
                    applied=True, first_batch=batches[0], first_batch_lengths=[lengths[i] for i in batches[0]],
                    longest_in_data=max(lengths), batches=len(batches))
            yield from batches

        DataLoaderMixin.get_train_dataloader = get_train_dataloader
        BatchSamplerShard.__iter__ = __iter__

    if getattr(opts, "sdpa_padding_free", False):
        record["sdpa_padding_free"] = allow_sdpa_padding_free()

    if getattr(opts, "liger_config", None):
        record["liger_config"] = set_liger_config(opts.liger_config)

    if opts.pad_to:
        def _get_data_collator(self, args, template):
            return partial(template.data_collator, padding_to=opts.pad_to)

        SwiftMixin._get_data_collator = _get_data_collator
        record["pad_to"] = opts.pad_to


def allow_sdpa_padding_free() -> dict:
    """Patch SftArguments._check_padding_free to accept SDPA/eager when transformers makes packed-sequence masks."""
    from swift.arguments import SftArguments
    from transformers import masking_utils

    if not hasattr(masking_utils, "find_packed_sequence_indices"):
        return {"applied": False, "reason": "this transformers has no packed-sequence masks for SDPA"}
    orig = SftArguments._check_padding_free

    def _check_padding_free(self):
        if (self.padding_free or self.packing) and self.attn_impl in (None, "sdpa", "eager", "flex_attention"):
            if self.packing:
                self.padding_free = True
            return
        return orig(self)

    SftArguments._check_padding_free = _check_padding_free
    import transformers

    return {"applied": True, "transformers": transformers.__version__,
            "why": "masking_utils.find_packed_sequence_indices: block-diagonal causal mask from position_ids"}


def set_liger_config(config: dict) -> dict:
    """Make transformers' Trainer apply Liger with CONFIG (its `liger_kernel_config`, e.g. the fused linear cross
    entropy off), which ms-swift's command line cannot pass (a dict). Only where --use_liger_kernel is on."""
    from transformers import trainer

    orig = trainer.apply_liger_kernel

    def apply_liger_kernel(model, kernel_config=None):
        return orig(model, {**(kernel_config or {}), **config})

    trainer.apply_liger_kernel = apply_liger_kernel
    return {"applied": True, "config": config}


def apply_env(items: list[str], record: dict) -> None:
    """--env NAME=VALUE: set before ms-swift, transformers and accelerate are imported (they read some at import)."""
    if not items:
        return
    env = dict(item.split("=", 1) for item in items)
    os.environ.update(env)
    record["env"] = env


def apply_sdp_backends(names: list[str] | None, record: dict) -> None:
    """--sdp-backends: switch off the SDPA backends not named, process-wide (torch.compile reads the same switches
    when it traces attention). cuDNN's attention builds an execution graph per new shape, and a packed row's length
    changes every step (experiments/probes/sdpa_shapes.py measures what that costs the host)."""
    if not names:
        return
    import torch

    for name, fn in SDP_BACKENDS.items():
        getattr(torch.backends.cuda, fn)(name in names)
    # each switch's reading back: enable_X_sdp -> X_sdp_enabled
    state = {name: getattr(torch.backends.cuda, fn.removeprefix("enable_") + "_enabled")()
             for name, fn in SDP_BACKENDS.items()}
    record["sdp_backends"] = {"allowed": names, "torch": state}


def run_sft(swift_args: list[str]):
    """What swift/cli/sft.py does, in this process."""
    from swift.cli.sft import try_init_unsloth
    from swift.cli.utils import try_use_single_device_mode

    sys.argv = [sys.argv[0], *swift_args]  # the helpers below read sys.argv, as in `python swift/cli/sft.py ...`
    try_use_single_device_mode()
    try_init_unsloth()
    from swift.ray_utils import try_init_ray

    try_init_ray()
    from swift.pipelines import sft_main

    return sft_main(swift_args)


def _write_record(record: dict, output_dir: str | None) -> None:
    if not output_dir or rank() != 0:
        return
    path = Path(output_dir)
    path.mkdir(parents=True, exist_ok=True)
    (path / LAUNCH_FILE).write_text(json.dumps(record, indent=2, default=str))


def resume_step(swift_args: list[str]) -> int | None:
    """The checkpoint step of --resume_from_checkpoint .../checkpoint-N (None when not resuming)."""
    import re

    m = re.search(r"checkpoint-(\d+)/?$", swift_flag(swift_args, "resume_from_checkpoint") or "")
    return int(m.group(1)) if m else None


def _earlier_records(output_dir: str | None) -> list:
    try:
        old = json.loads((Path(output_dir or ".") / LAUNCH_FILE).read_text())
    except (OSError, ValueError):
        return []
    return [*(old.pop("earlier", None) or []), old] if isinstance(old, dict) else []


def main(argv: list[str] | None = None) -> int:
    opts, swift_args = parse(list(sys.argv[1:] if argv is None else argv))
    if (os.environ.get("NPROC_PER_NODE") or os.environ.get("NNODES")) and "WORLD_SIZE" not in os.environ:
        print("launch: NPROC_PER_NODE/NNODES set, but this launcher starts no processes: run it under "
              "`torchrun --nproc_per_node N -m experiments.launch ...`", file=sys.stderr)
        return 2
    output_dir = swift_flag(swift_args, "output_dir")
    record: dict = {"argv": sys.argv[1:] if argv is None else argv, "swift_args": swift_args, "pid": os.getpid(),
                    "started": time.time(), "options": vars(opts)}
    t0 = time.monotonic()
    apply_env(opts.env, record)
    apply_sdp_backends(opts.sdp_backends, record)
    if opts.mem_cap_gib is not None:
        record["mem_cap"] = apply_memory_cap(opts.mem_cap_gib)
    callbacks = []
    record["rank"], record["world_size"] = rank(), world_size()
    resumed = resume_step(swift_args)
    if resumed is not None:  # the interrupted attempt's record stays in launch.json
        record["resume_from_step"] = resumed
        record["earlier"] = _earlier_records(output_dir)
    if opts.profile_steps and rank() == 0 and resumed is not None and resumed >= opts.profile_skip:
        record["profile"] = {"skipped": f"resumed after step {resumed}: the profiled steps ran before the interrupt "
                                        "(their profile.json is kept)"}
    elif opts.profile_steps and rank() == 0:  # GPU 0's profile stands for the job's (ranks run the same step)
        out_dir = Path(opts.profile_out or output_dir or ".")
        callbacks.append(make_profiler_callback(opts.profile_steps, opts.profile_skip, out_dir / PROFILE_FILE, record,
                                                opts.profile_activities, opts.profile_warmup,
                                                opts.profile_host_stacks))
    if rank() == 0:  # every run: each step's GPU share, GPM counters, no per-launch cost (experiments/record/gpm.py)
        from experiments.record import gpm

        cb = gpm.make_callback(Path(output_dir or ".") / gpm.GPM_FILE, record)
        if cb is not None:
            callbacks.append(cb)
    if opts.stop_after:
        callbacks.append(make_stop_callback(opts.stop_after, record))
    if opts.quick_budget_s:
        from experiments.launch import quick_stop

        callbacks.append(quick_stop.make_callback(opts.quick_budget_s, opts.quick_max_steps or quick_stop.MAX_STEPS,
                                                  record))
    rc = 0
    try:
        install_token_counter(Path(output_dir or ".") / TOKENS_FILE, record)
        if not opts.no_schedule and world_size() == 1:  # several ranks: each sampler holds a shard (not covered)
            from experiments.recipes import schedule_core

            schedule_core.install(Path(output_dir or ".") / schedule_core.SCHEDULE_FILE, record, batch_token_counts)
        install_patches(opts, record, callbacks)
        _write_record(record, output_dir)
        run_sft(swift_args)
    except BaseException as exc:  # noqa: BLE001 - report, record, exit non-zero (the runner reads the reason)
        traceback.print_exc()
        record["error"] = f"{type(exc).__name__}: {str(exc)[:2000]}"
        rc = exc.code if isinstance(exc, SystemExit) and isinstance(exc.code, int) else 1
        rc = rc or 1
    record.update(sft_s=round(time.monotonic() - t0, 3), returncode=rc, fast_exit=not opts.no_fast_exit)
    _write_record(record, output_dir)
    print(f"launch: sft {'returned' if rc == 0 else 'failed'} after {record['sft_s']:.1f} s", flush=True)
    if not opts.no_fast_exit:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)
    return rc


if __name__ == "__main__":
    sys.exit(main())
