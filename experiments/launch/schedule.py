"""`python -m experiments.launch.schedule`: a run's token schedule without a model or a GPU, from its swift arguments.

    python -m experiments.launch.schedule [--out FILE] [launcher options] -- <swift sft args...>

The same arguments as experiments/launch/launcher.py: SftArguments parses them, SwiftSft prepares the dataset with the
processor in place of the model (no weights are read), and experiments.recipes.schedule_core counts every optimizer step
of the
full schedule as the training loop will meet it (launcher options that change batches are applied with the launcher's
own patches). Writes FILE, else <output_dir>/schedule.jsonl: one JSON line per step, tokens.jsonl's fields + samples.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from experiments.recipes.schedule_core import SCHEDULE_FILE, steps_of, write

# Flags this command sets whatever the run says: its own output folder (ms-swift writes args and the eval split
# there), float32 (bf16 is refused without a GPU) and no Liger kernels (model kernels, maybe not installed). None of
# them changes a batch.
CPU_FLAGS = {"output_dir": None, "torch_dtype": "float32", "use_liger_kernel": "false"}


def cpu_args(swift_args: list[str], out_dir: str) -> list[str]:
    """SWIFT_ARGS with the CPU_FLAGS replaced (output_dir becomes OUT_DIR)."""
    out, i = [], 0
    while i < len(swift_args):
        a = swift_args[i]
        name = a[2:].split("=", 1)[0] if a.startswith("--") else None
        if name in CPU_FLAGS:
            i += 1 if "=" in a else 2
            continue
        out.append(a)
        i += 1
    for name, value in CPU_FLAGS.items():
        out += [f"--{name}", out_dir if value is None else value]
    return out


def build(swift_args: list[str], opts=None) -> list[dict]:
    """The schedule of SWIFT_ARGS in this process, with no model weights and no GPU. OPTS: the launcher's parsed
    options; those that change batches are applied with the launcher's patches (they stay in this process)."""
    os.environ["CUDA_VISIBLE_DEVICES"] = ""  # no GPU is needed, and a training process may own it
    from swift.pipelines.train.sft import SwiftSft

    from experiments.launch.launcher import batch_token_counts, install_patches

    if opts is not None and (opts.longest_first or opts.pad_to):
        install_patches(argparse.Namespace(longest_first=opts.longest_first, pad_to=opts.pad_to), {}, [])

    class ScheduleSft(SwiftSft):
        """SwiftSft with the processor in place of the model, writing no eval split."""

        def _prepare_model_tokenizer(self, **kwargs):
            self.model = None
            self.processor = self.args.get_model_processor(load_model=False, **kwargs)[1]

        def _save_val_dataset(self, val_dataset):
            return None

    with tempfile.TemporaryDirectory(prefix="swiftbench-schedule-") as tmp:
        sft = ScheduleSft(cpu_args(swift_args, tmp))
        train_dataset = sft._prepare_dataset()[0]
        return steps_of(sft.args, sft.template, train_dataset, batch_token_counts)


def main(argv: list[str] | None = None) -> int:
    from experiments.launch.options import parse, swift_flag

    argv = list(sys.argv[1:] if argv is None else argv)
    out = None
    if argv[:1] == ["--out"]:
        if len(argv) < 2:
            print("schedule: --out needs a file", file=sys.stderr)
            return 2
        out, argv = argv[1], argv[2:]
    opts, swift_args = parse(argv)
    t0 = time.monotonic()
    steps = build(swift_args, opts)
    target = write(steps, Path(out) if out else Path(swift_flag(swift_args, "output_dir") or ".") / SCHEDULE_FILE)
    print(f"schedule: {len(steps)} optimizer steps, {sum(s['tokens'] for s in steps)} real tokens "
          f"({time.monotonic() - t0:.1f} s) -> {target}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
