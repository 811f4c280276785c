"""Run ms-swift's `swift sft` in this process, with what measuring a run needs around it (token counts, profiler, caps).

    python -m experiments.launch [--mem-cap-gib N] [--profile-steps K [--profile-skip S] [--profile-out DIR]]
                                 [--longest-first] [--pad-to N] [--no-fast-exit] -- <swift sft args...>

The launcher measures: it changes nothing the training computes, apart from the worst case a memory probe sets
(--longest-first, --pad-to). What a recipe changes is in its swift flags, the plugin's callbacks among them
(experiments/recipes/swift_plugin.py), so the command a user copies is the command that was measured.

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

This module is that command line: the options before `--`, swift sft's after (`parse`), and a claims experiment's
`launcher` options as that command line (`option_argv`: the runner writes it into command.sh).
"""
from __future__ import annotations

import argparse

from experiments.base.runfolder import Launcher, Quick


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
    return opts, swift_args


def option_argv(launcher: dict) -> list[str]:
    """Launcher options of a claims experiment (experiments/recipes/claims/ `launcher`) as command-line arguments."""
    out: list[str] = []
    if launcher.get(Launcher.MEM_CAP_GIB) is not None:
        out += ["--mem-cap-gib", f"{launcher[Launcher.MEM_CAP_GIB]:g}"]
    if launcher.get(Launcher.PROFILE_STEPS):
        out += ["--profile-steps", str(int(launcher[Launcher.PROFILE_STEPS]))]
        if launcher.get(Launcher.PROFILE_SKIP) is not None:
            out += ["--profile-skip", str(int(launcher[Launcher.PROFILE_SKIP]))]
        if launcher.get(Launcher.PROFILE_ACTIVITIES):
            out += ["--profile-activities", str(launcher[Launcher.PROFILE_ACTIVITIES])]
        if launcher.get(Launcher.PROFILE_WARMUP):
            out += ["--profile-warmup", str(int(launcher[Launcher.PROFILE_WARMUP]))]
        if launcher.get(Launcher.PROFILE_HOST_STACKS):
            out.append("--profile-host-stacks")
    if launcher.get(Launcher.LONGEST_FIRST):
        out.append("--longest-first")
    if launcher.get(Launcher.PAD_TO):
        out += ["--pad-to", str(int(launcher[Launcher.PAD_TO]))]
    if launcher.get(Launcher.STOP_AFTER):
        out += ["--stop-after", str(int(launcher[Launcher.STOP_AFTER]))]
    if launcher.get(Launcher.FAST_EXIT) is False:
        out.append("--no-fast-exit")
    if launcher.get(Launcher.SCHEDULE) is False:
        out.append("--no-schedule")
    if launcher.get(Launcher.QUICK):  # experiments/launch/quick_stop.py
        out += ["--quick-budget-s", f"{launcher[Launcher.QUICK][Quick.BUDGET_S]:g}",
                "--quick-max-steps", str(int(launcher[Launcher.QUICK][Quick.MAX_STEPS]))]
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


