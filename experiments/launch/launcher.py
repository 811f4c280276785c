"""Run ms-swift's `swift sft` in this process, with what measuring a run needs around it (token counts, profiler, caps).

This module is the run: the memory cap, the stop and token-count callbacks, ms-swift patches, launch.json and `main`.
The command line and what every option does: experiments/launch/options.py; the profiler: profiler.py beside it.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from experiments.base import runfiles
from experiments.base.runfolder import CompileCache, Launch, LongestFirst, MemCap, ProfileRecord, Tokens, TokensRecord
from experiments.base.runfolder import StopAfter as StopRecord
from experiments.launch.options import parse, swift_flag
from experiments.launch.profiler import make_profiler_callback

GIB = 2**30
LAUNCH_FILE = runfiles.LAUNCH_JSON
PROFILE_FILE = runfiles.PROFILE_JSON
TOKENS_FILE = runfiles.TOKENS
HARNESS = runfiles.HARNESS_VERSION  # launch.json `harness`: which measuring design made the run (runfiles says)


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
    info: dict = {MemCap.REQUESTED_GIB: cap_gib, MemCap.APPLIED: False}
    if not torch_mod.cuda.is_available():
        info[MemCap.REASON] = "no CUDA device in this process"
        print(f"launch: no CUDA device: --mem-cap-gib {cap_gib:g} is not applied", flush=True)
        return info
    if device is None:
        device = int(os.environ.get("LOCAL_RANK", "0") or 0)
    total = int(torch_mod.cuda.get_device_properties(device).total_memory)
    fraction = memory_fraction(cap_gib, total)
    if cap_gib * GIB >= total:
        print(f"launch: --mem-cap-gib {cap_gib:g} is not below the device's {total / GIB:.2f} GiB: no cap", flush=True)
        info.update({MemCap.TOTAL_BYTES: total, MemCap.FRACTION: 1.0,
                     MemCap.REASON: "cap at or above the device's memory"})
        return info
    torch_mod.cuda.set_per_process_memory_fraction(fraction, device)
    info.update({MemCap.APPLIED: True, MemCap.DEVICE: device, MemCap.TOTAL_BYTES: total,
                 MemCap.TOTAL_GIB: round(total / GIB, 3), MemCap.FRACTION: fraction,
                 MemCap.CAP_BYTES: int(fraction * total),
                 MemCap.DEVICE_NAME: torch_mod.cuda.get_device_name(device)})
    print(f"launch: allocator capped at {cap_gib:g} GiB = {fraction:.6f} of {total / GIB:.2f} GiB "
          f"({info[MemCap.DEVICE_NAME]}, device {device}; this process only)", flush=True)
    return info


# ------------------------------------------------------------------------------------------- profiler



def rank() -> int:
    """This process's rank under torchrun (0 alone): only rank 0 writes the run's files."""
    return int(os.environ.get("RANK", "0") or 0)


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1") or 1)




# ------------------------------------------------------------------------------------------- stop after N


def make_stop_callback(stop_after: int, record: dict):
    """End training after optimizer step STOP_AFTER as transformers ends it at max_steps: evaluate and save there."""
    from transformers import TrainerCallback
    from transformers.trainer_utils import IntervalStrategy

    record[Launch.STOP_AFTER] = {StopRecord.STEP: stop_after, StopRecord.STOPPED: False}

    class StopAfter(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step >= stop_after and not control.should_training_stop:
                control.should_training_stop = True
                control.should_log = True
                if args.eval_strategy == IntervalStrategy.STEPS:
                    control.should_evaluate = True
                record[Launch.STOP_AFTER].update({StopRecord.STOPPED: True, StopRecord.AT_STEP: state.global_step,
                                                  StopRecord.MAX_STEPS: state.max_steps})
            return control

    return StopAfter()


# ------------------------------------------------------------------------------------------- token counts


def _real_tokens(b, ids):
    """The real tokens of one micro-batch, as a 0-d tensor on its device, made without a host-GPU sync: the attention
    mask's sum; a packed row without a mask is real up to its last non-zero position id, since the plugin's
    pad_buckets pads it with position id 0 (every sample's tokens after its first have positions above 0).
    No tensor is built from a Python number on the GPU here: `torch.tensor(n, device="cuda")` copies from pageable
    memory and waits for the GPU, and one such wait per step was part of what the launcher added to each step."""
    import torch

    mask = b.get("attention_mask")
    if mask is not None:
        return mask.sum()
    pos = b.get("position_ids")
    n = ids.numel()
    if pos is not None and pos.dim() == 2 and pos.shape[0] == 1 and pos.shape[1] == n:
        nonzero = (pos[0] != 0).to(torch.int64)
        trailing = torch.flip(nonzero, (0,)).argmax()  # zeros after the last non-zero position
        return torch.where(nonzero.any(), n - trailing, torch.full_like(trailing, n))
    return torch.full((), n, dtype=torch.int64, device=ids.device)


def step_token_totals(batches: list):
    """(GPU part, host part) of one optimizer step's counts: [real, label tokens] as one int64 tensor on the
    batches' device (summed over ranks under torchrun), and (padded tokens, micro-batches) as Python ints, known on
    the host without asking the GPU; None without input_ids. Reading the GPU part is the caller's choice of when to
    sync."""
    import torch

    real, labels = [], []
    padded = n = 0
    for b in batches:
        ids = b.get("input_ids") if hasattr(b, "get") else None
        if ids is None:
            continue
        padded += ids.numel()
        n += 1
        real.append(_real_tokens(b, ids).to(torch.int64).reshape(()))
        lab = b.get("labels")
        labels.append((lab != -100).sum().reshape(()) if lab is not None
                      else torch.zeros((), dtype=torch.int64, device=ids.device))
    if not n:
        return None
    device = real[0].device
    gpu = torch.stack([torch.stack(real).sum(), torch.stack([x.to(device) for x in labels]).sum()]).to(torch.int64)
    if world_size() > 1 and torch.distributed.is_available() and torch.distributed.is_initialized():
        both = torch.cat([gpu, torch.tensor([padded, n], dtype=torch.int64).to(device)])
        torch.distributed.all_reduce(both)  # the whole job's step: every rank's micro-batches (a sync: several GPUs)
        return both[:2], (int(both[2]), int(both[3]))
    return gpu, (padded, n)


def _counts(gpu_values, host_values) -> dict:
    tokens, label_tokens = (int(v) for v in gpu_values)
    padded_total, micro = host_values
    return {Tokens.MICRO_BATCHES: int(micro), Tokens.TOKENS: tokens, Tokens.PADDED_TOKENS: int(padded_total),
            Tokens.LABEL_TOKENS: label_tokens}


def batch_token_counts(batches: list) -> dict:
    """Real, padded (input_ids size) and label tokens of the micro-batches of one optimizer step (read at once)."""
    totals = step_token_totals(batches)
    if totals is None:
        return {Tokens.MICRO_BATCHES: 0, Tokens.TOKENS: 0, Tokens.PADDED_TOKENS: 0, Tokens.LABEL_TOKENS: 0}
    return _counts(totals[0].tolist(), totals[1])


class TokenLog:
    """tokens.jsonl, written without making the host wait for the GPU: each step's GPU counts are copied into a slot
    of one pinned host buffer (allocated once: a pinned allocation per step costs a driver call) asynchronously and
    read once the copy has landed (checked at the next step); the lines are written to the file in batches
    (FLUSH_EVERY lines, and all at the end), so the training process opens no file per step."""

    SLOTS = 256      # steps whose copies may be in flight at once; a full ring waits for its oldest copy
    FLUSH_EVERY = 50

    def __init__(self, out_file: Path):
        self.out_file = out_file
        self.pending: list[tuple[dict, Any, Any, int, tuple[int, int]]] = []  # (line, host, event, slot, host counts)
        self.ready: list[dict] = []
        self._ring: Any = None
        self._next = 0

    def _slot(self, totals):
        import torch

        if self._ring is None:
            self._ring = torch.zeros((self.SLOTS, 2), dtype=torch.int64, pin_memory=True)
        i = self._next % self.SLOTS
        self._next += 1
        if len(self.pending) >= self.SLOTS:  # the oldest copy still uses slot i: read it first
            self._drain(wait=True, limit=len(self.pending) - self.SLOTS + 1)
        return i, self._ring[i]

    def add(self, line: dict, totals) -> None:
        import torch

        gpu, host_counts = totals
        if gpu.device.type == "cuda":
            i, host = self._slot(gpu)
            host.copy_(gpu, non_blocking=True)
            event = torch.cuda.Event()
            event.record()
            self.pending.append((line, host, event, i, host_counts))
        else:
            self.pending.append((line, gpu, None, -1, host_counts))
        self._drain(wait=False)
        if len(self.ready) >= self.FLUSH_EVERY:
            self._write()

    def _drain(self, wait: bool, limit: int | None = None) -> None:
        done = 0
        while self.pending and (limit is None or done < limit):
            line, host, event, _slot, host_counts = self.pending[0]
            if event is not None and not event.query():
                if not wait:
                    break
                event.synchronize()
            self.ready.append({**line, **_counts(host.tolist(), host_counts)})
            self.pending.pop(0)
            done += 1

    def _write(self) -> None:
        if self.ready and rank() == 0:
            with self.out_file.open("a") as fh:
                fh.writelines(json.dumps(x) + "\n" for x in self.ready)
        self.ready = []

    def flush(self, wait: bool = True) -> None:
        self._drain(wait=wait)
        self._write()


TOKEN_LOG: list[TokenLog] = []  # the run's TokenLog, flushed by main() after training


def install_token_counter(out_file: Path, record: dict) -> None:
    """Wrap transformers' Trainer.get_batch_samples (it gathers one optimizer step's micro-batches) to append the
    step's token counts to OUT_FILE (one JSON line per optimizer step, written as TokenLog says)."""
    from transformers import Trainer

    orig = Trainer.get_batch_samples
    record[Launch.TOKENS] = {TokensRecord.FILE: str(out_file)}
    out_file.parent.mkdir(parents=True, exist_ok=True)
    log = TokenLog(out_file)
    TOKEN_LOG[:] = [log]

    def get_batch_samples(self, epoch_iterator, num_batches, *args, **kwargs):
        batches, num_items = orig(self, epoch_iterator, num_batches, *args, **kwargs)
        # only the training loop calls this (evaluation iterates on its own); the model may still be in eval mode
        # right after an evaluation, so that is no test (runs of 2026-11-30 lack the step after each eval)
        if batches:
            try:
                totals = step_token_totals(batches)  # every rank calls it: the sum over ranks is collective
                if totals is not None:
                    line = {Tokens.STEP: int(self.state.global_step) + 1}
                    if world_size() > 1:
                        line[Tokens.RANKS] = world_size()
                    log.add(line, totals)
            except Exception as exc:  # noqa: BLE001 - counting must never cost the training run
                record[Launch.TOKENS][TokensRecord.ERROR] = f"{type(exc).__name__}: {exc}"
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
    """Hook into ms-swift 4.6.0: the measuring callbacks, longest-first first batch, padding to N tokens."""
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
        record[Launch.LONGEST_FIRST] = {LongestFirst.APPLIED: False}

        def get_train_dataloader(self, *args, **kwargs):
            loader = orig_loader(self, *args, **kwargs)
            sampler = getattr(loader, "batch_sampler", None)
            sampler = getattr(sampler, "batch_sampler", sampler)  # accelerate's SkipBatchSampler wraps it
            dataset = self.train_dataset
            if isinstance(sampler, BatchSamplerShard) and hasattr(dataset, "__len__"):
                lengths = [max(x) if isinstance(x, list) else x for x in dataset["lengths"]]
                sampler._swiftbench_lengths = lengths
            else:
                record[Launch.LONGEST_FIRST][LongestFirst.REASON] = f"not applied: sampler {type(sampler).__name__}"
            return loader

        def __iter__(self):
            lengths = getattr(self, "_swiftbench_lengths", None)
            if lengths is None or getattr(self, "_swiftbench_done", False):
                yield from orig_iter(self)
                return
            self._swiftbench_done = True  # the first pass (epoch) only
            batches = longest_first_order(list(orig_iter(self)), lengths, self.batch_size)
            if batches:
                record[Launch.LONGEST_FIRST].update({
                    LongestFirst.APPLIED: True, LongestFirst.FIRST_BATCH: batches[0],
                    LongestFirst.FIRST_BATCH_LENGTHS: [lengths[i] for i in batches[0]],
                    LongestFirst.LONGEST_IN_DATA: max(lengths), LongestFirst.BATCHES: len(batches)})
            yield from batches

        DataLoaderMixin.get_train_dataloader = get_train_dataloader
        BatchSamplerShard.__iter__ = __iter__

    if opts.pad_to:
        def _get_data_collator(self, args, template):
            return partial(template.data_collator, padding_to=opts.pad_to)

        SwiftMixin._get_data_collator = _get_data_collator
        record[Launch.PAD_TO] = opts.pad_to


def compile_cache_state(swift_args: list[str]) -> dict | None:
    """For a run with the plugin's compile_layers or compile_dynamic: its inductor cache folder and the files in it
    before the run (0: a cold run; more: a warm one), and the compiled-code file the plugin loads first, if any."""
    from experiments.recipes import swift_plugin

    if not swift_plugin.compiles(swift_args):
        return None
    import torch

    folder = swift_plugin.inductor_cache_dir()
    files = swift_plugin.cache_file_count(folder)
    artifacts = swift_plugin.artifacts_to_load(torch)
    return {CompileCache.DIR: str(folder), CompileCache.FILES_BEFORE: files, CompileCache.WARM: files > 0,
            CompileCache.ARTIFACTS: str(artifacts) if artifacts else None,
            CompileCache.ARTIFACTS_BYTES: artifacts.stat().st_size if artifacts else None}


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
    return [*(old.pop(Launch.EARLIER, None) or []), old] if isinstance(old, dict) else []


def main(argv: list[str] | None = None) -> int:
    opts, swift_args = parse(list(sys.argv[1:] if argv is None else argv))
    if (os.environ.get("NPROC_PER_NODE") or os.environ.get("NNODES")) and "WORLD_SIZE" not in os.environ:
        print("launch: NPROC_PER_NODE/NNODES set, but this launcher starts no processes: run it under "
              "`torchrun --nproc_per_node N -m experiments.launch ...`", file=sys.stderr)
        return 2
    output_dir = swift_flag(swift_args, "output_dir")
    record: dict = {Launch.ARGV: sys.argv[1:] if argv is None else argv, Launch.SWIFT_ARGS: swift_args,
                    Launch.PID: os.getpid(), Launch.STARTED: time.time(), Launch.OPTIONS: vars(opts),
                    Launch.HARNESS: HARNESS}
    t0 = time.monotonic()
    if opts.mem_cap_gib is not None:
        record[Launch.MEM_CAP] = apply_memory_cap(opts.mem_cap_gib)
    cache = compile_cache_state(swift_args)
    if cache is not None:
        record[Launch.COMPILE_CACHE] = cache
    callbacks = []
    record[Launch.RANK], record[Launch.WORLD_SIZE] = rank(), world_size()
    resumed = resume_step(swift_args)
    if resumed is not None:  # the interrupted attempt's record stays in launch.json
        record[Launch.RESUME_FROM_STEP] = resumed
        record[Launch.EARLIER] = _earlier_records(output_dir)
    if opts.profile_steps and rank() == 0 and resumed is not None and resumed >= opts.profile_skip:
        record[Launch.PROFILE] = {ProfileRecord.SKIPPED: f"resumed after step {resumed}: the profiled steps ran "
                                                         "before the interrupt (their profile.json is kept)"}
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
        record[Launch.ERROR] = f"{type(exc).__name__}: {str(exc)[:2000]}"
        rc = exc.code if isinstance(exc, SystemExit) and isinstance(exc.code, int) else 1
        rc = rc or 1
    for log in TOKEN_LOG:
        try:
            log.flush()
        except Exception as exc:  # noqa: BLE001 - the run's own outcome is what the exit code says
            record.setdefault(Launch.TOKENS, {})[TokensRecord.ERROR] = f"{type(exc).__name__}: {exc}"
    record.update({Launch.SFT_S: round(time.monotonic() - t0, 3), Launch.RETURNCODE: rc,
                   Launch.FAST_EXIT: not opts.no_fast_exit})
    _write_record(record, output_dir)
    print(f"launch: sft {'returned' if rc == 0 else 'failed'} after {record[Launch.SFT_S]:.1f} s", flush=True)
    if not opts.no_fast_exit:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)
    return rc


if __name__ == "__main__":
    sys.exit(main())
