"""The token schedule of a `swift sft` run, known before it trains: real and padded tokens of every optimizer step.

The launcher (experiments/launch/launcher.py) computes it in the training process (`install`); the command
`python -m experiments.launch.schedule` (experiments/launch/schedule.py) computes it without a model or a GPU. Both use
this module.

The batches of a run are fixed before it starts: the data, its split and order (ms-swift's `data_seed`), the template
and the sampler decide every step's token count. Everything here is ms-swift's and transformers' own code, so the
schedule follows them when they change:

- the dataset: SftArguments parses the arguments, SwiftSft._prepare_dataset loads, samples (`#N`), shuffles
  (`dataset_shuffle`, `data_seed`), splits (`split_dataset_ratio`), encodes with the template and drops what is over
  `max_length` (`truncation_strategy delete`); standalone, SwiftSft loads the processor instead of the model;
- the batches: DataLoaderMixin.get_train_dataloader, the train loader ms-swift's trainer uses (BatchSamplerShard
  seeded with `data_seed`, `per_device_train_batch_size`, `group_by_length`), with SwiftMixin._get_data_collator's
  collator (padding; `padding_free` packing of a batch into one row);
- the steps: transformers' Trainer loop (set_initial_training_values, _run_epoch), re-told in `_steps`: an optimizer
  step takes `gradient_accumulation_steps` micro-batches, the epoch's last step the remainder, `set_epoch(epoch)`
  before every epoch, up to `max_steps` (else `num_train_epochs` x steps per epoch);
- the counts: experiments.launch.launcher.batch_token_counts, the function that writes tokens.jsonl during training, so
  the two
  files compare line by line; launcher options that change batches (--longest-first, --pad-to, --sdpa-padding-free)
  are the launcher's own patches.

In the launcher, <output_dir>/schedule.jsonl is written right after ms-swift prepared the dataset and before the
trainer exists (the same dataset object; the global random states are put back, so training draws what it would have
drawn: a CPU run gives the same losses with and without it).

Output: one JSON line per optimizer step: tokens.jsonl's fields ({"step", "micro_batches", "tokens",
"padded_tokens", "label_tokens"}) plus "samples".

Not covered (an error, or a schedule that can differ): `--packing` and streaming datasets (no fixed batches before
training), several processes (each rank's sampler holds a shard; the launcher writes no schedule then), a sample that
fails to encode only at training time (LazyLLMDataset then draws another at random; samples over max_length are gone
by then).
"""
from __future__ import annotations

import contextlib
import copy
import json
import math
import time
import traceback
from pathlib import Path
from types import SimpleNamespace

from experiments.base import runfiles, userfiles

SCHEDULE_FILE = runfiles.SCHEDULE


# ------------------------------------------------------------------------------------------- the steps


def steps_of(args, template, train_dataset, count) -> list[dict]:
    """Every optimizer step of a run: ARGS (SftArguments), its TEMPLATE (train mode) and the train dataset that
    SwiftSft._prepare_dataset returned, each step's micro-batches counted by COUNT (experiments.launch.launcher's
    batch_token_counts). The training arguments are copied: the trainer's own stay as they are."""
    from swift.trainers.mixin import DataLoaderMixin, SwiftMixin

    if getattr(args, "packing", False) or getattr(args, "streaming", False) or not hasattr(train_dataset, "__len__"):
        raise ValueError("no fixed batches before training with --packing or a streaming dataset")
    targs = copy.copy(args.training_args)
    targs.dataloader_num_workers = 0  # the same batches, without worker processes
    targs.dataloader_persistent_workers = False
    targs.dataloader_prefetch_factor = None

    class Loader(DataLoaderMixin):
        """What DataLoaderMixin.get_train_dataloader reads of a trainer."""

    loader = Loader()
    loader.args = targs
    loader.template = template
    loader.train_dataset = train_dataset
    loader._train_batch_size = targs.per_device_train_batch_size  # one process: transformers' train_batch_size
    loader.accelerator = SimpleNamespace(device=None)  # batches stay on the CPU
    loader.data_collator = SwiftMixin._get_data_collator(loader, targs, template)
    return _steps(loader.get_train_dataloader(), targs, count)


def _steps(dataloader, targs, count) -> list[dict]:
    """transformers' training loop over DATALOADER, one entry per optimizer step (see the module docstring)."""
    ga = targs.gradient_accumulation_steps
    n_batches = len(dataloader)
    per_epoch = max(n_batches // ga + int(n_batches % ga > 0), 1)
    max_steps = targs.max_steps if targs.max_steps and targs.max_steps > 0 else math.ceil(
        targs.num_train_epochs * per_epoch)
    remainder = n_batches % ga or ga
    sampler = dataloader.batch_sampler
    out: list[dict] = []
    for epoch in range(math.ceil(max_steps / per_epoch)):
        if hasattr(sampler, "set_epoch"):
            sampler.set_epoch(epoch)
        batches_of_epoch = iter(dataloader)
        for update in range(per_epoch):
            if len(out) >= max_steps:
                return out
            batches = []
            for _ in range(ga if update != per_epoch - 1 else remainder):
                try:
                    batches.append(next(batches_of_epoch))
                except StopIteration:
                    break
            if not batches:
                break
            out.append({"step": len(out) + 1, **count(batches),
                        "samples": sum(_samples(b) for b in batches)})
    return out


def _samples(batch) -> int:
    """Samples in one collated micro-batch: its rows, or in a packed row the sequences (position ids restart at 0)."""
    ids, pos = batch.get("input_ids"), batch.get("position_ids")
    if ids is None:
        return 0
    if pos is not None and ids.shape[0] == 1:
        return int((pos.reshape(-1) == 0).sum())
    return int(ids.shape[0])


def write(steps: list[dict], path: str | Path) -> Path:
    """STEPS as JSON lines at PATH, written atomically (a reader never sees half a schedule). A PATH that is a link
    (the runner links a run's cache folder's schedule.jsonl into its results folder) is written where it points:
    replacing the link itself would leave the schedule in the cache, out of the results."""
    path = Path(path).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    userfiles.write_atomic(path, "".join(json.dumps(s) + "\n" for s in steps))
    return path


# ------------------------------------------------------------------------------------------- in the launcher


@contextlib.contextmanager
def random_states_kept(*datasets):
    """Put back Python's, numpy's and torch's global random states (and a LazyLLMDataset's own) afterwards: computing
    the schedule in the training process must not change what training draws next (LoRA init, dropout)."""
    import random

    import numpy as np
    import torch

    py, npy, pt = random.getstate(), np.random.get_state(), torch.get_rng_state()
    own = [(d, d.random_state.get_state(), getattr(d, "_idx", None)) for d in datasets
           if isinstance(getattr(d, "random_state", None), np.random.RandomState)]
    try:
        yield
    finally:
        random.setstate(py)
        np.random.set_state(npy)
        torch.set_rng_state(pt)
        for d, state, idx in own:
            d.random_state.set_state(state)
            if idx is not None:
                d._idx = idx


def install(out_file: str | Path, record: dict, count) -> None:
    """Wrap SwiftSft._prepare_dataset so that the training process writes OUT_FILE once its dataset is ready (before
    the LoRA model and the trainer are made), its steps counted by COUNT. A failure is recorded in
    RECORD["schedule"] and training goes on."""
    from swift.pipelines.train.sft import SwiftSft

    out_file = Path(out_file)
    info = record.setdefault("schedule", {"file": str(out_file)})
    orig = SwiftSft._prepare_dataset

    def _prepare_dataset(self, *args, **kwargs):
        datasets = orig(self, *args, **kwargs)
        t0 = time.perf_counter()
        try:
            with random_states_kept(datasets[0]):
                steps = steps_of(self.args, self.template, datasets[0], count)
            write(steps, out_file)
            info.update(steps=len(steps), seconds=round(time.perf_counter() - t0, 3))
            print(f"schedule: {len(steps)} optimizer steps in {info['seconds']:.1f} s -> {out_file}", flush=True)
        except Exception as exc:  # noqa: BLE001 - the schedule must never cost the training run
            info["error"] = f"{type(exc).__name__}: {str(exc)[:500]}"
            traceback.print_exc()
        return datasets

    SwiftSft._prepare_dataset = _prepare_dataset
