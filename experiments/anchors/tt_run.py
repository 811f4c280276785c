"""Run one anchor workload (experiments/anchors/workloads.yaml) with torchtune's own recipe, cut to N optimizer steps.

The recipe is torchtune 0.6.1's ``lora_finetune_single_device`` (its ``LoRAFinetuneRecipeSingleDevice`` class, its
config from the wheel with the workload's overrides), changed in three places only, all said in run.json:

- no checkpoint is read: the base weights are torchtune's own random initialisation of the model, built on the GPU in
  the recipe's dtype (so the check that every base weight was loaded is told that none was meant to be);
- no checkpoint is written at the end of the cut epoch;
- each micro-batch's shape (tokens including padding) and real tokens (labels not ignored) are recorded, and each
  optimizer step's wall time is taken when the recipe logs it (right after its ``loss.item()``, a device sync).

The data are local alpaca rows (experiments/anchors/standin.py), repeated so that the cut run never reaches the end of
an epoch, read through torchtune's own AlpacaToMessages and the model tokenizer, in torchtune's SFTDataset (and
PackedDataset where the workload packs).

With ``--profile-steps N`` the run takes ``--profile-warmup`` + N optimizer steps more after its own, under
torch.profiler (experiments/launch/profiler.py's windows, driven from the step logger): profile.json, in the launcher's
format, gives the kernel-level step the time model carries to other GPUs (analysis/estimate/anchor_transfer.py). Those
steps run after the reported ones, so the tracer never slows a step whose tokens/s is reported; run.json's
``profile.excluded_steps`` names them and analysis/parse/anchor_run.py leaves them out.

Run folder (``--out``): run.json (workload, labels, versions, setup and train times, peak memory, data statistics),
config.yaml (the torchtune config that ran), steps.jsonl (one line per optimizer step), profile.json (with
``--profile-steps``), and what the shell script adds (env.json, nvml.csv, nvidia-smi.txt, console.log).

    python -m experiments.anchors.tt_run --workload milabench-llm-lora-single --out RUN --data DIR --device cuda
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.anchors import standin
from experiments.base import runfiles
from experiments.base.errors import InputError
from experiments.base.runfolder import Anchor, AnchorData, AnchorStep, ProfileRecord

IGNORE_INDEX = -100
STEPS_FILE = "steps.jsonl"
RUN_FILE = runfiles.RUN_JSON
PROFILE_FILE = runfiles.PROFILE_JSON
CONFIG_FILE = "config.yaml"
NVML_FILE = runfiles.NVML_CSV
# A tiny Llama-3.1-shaped model with the real vocabulary, for CPU tests of the whole path.
TINY_MODEL = {
    "_component_": "torchtune.models.llama3_1.lora_llama3_1",
    "vocab_size": standin.LLAMA3_VOCAB,
    "num_layers": 2,
    "num_heads": 4,
    "num_kv_heads": 2,
    "embed_dim": 64,
    "max_seq_len": 4096,
    "intermediate_dim": 128,
}


def _torchtune_root() -> Path:
    """torchtune's recipes folder (its wheel ships it as a top-level `recipes`, which must not be imported)."""
    import importlib.util

    spec = importlib.util.find_spec("recipes")
    if spec is None or not spec.submodule_search_locations:
        raise InputError(None, "torchtune's recipes folder is not installed (pip install torchtune)")
    return Path(list(spec.submodule_search_locations)[0])


def _recipe_module(name: str) -> Any:
    """Load torchtune's recipe file ``recipes/<name>.py`` as a module of its own (as `tune run` does, by path)."""
    import importlib.util

    path = _torchtune_root() / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"torchtune_recipe_{name}", path)
    if spec is None or spec.loader is None:
        raise InputError(path, "cannot load the recipe")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def make_config(spec: dict[str, Any], out: Path, data_file: Path, tokenizer_file: Path, *, device: str,
                steps: int, repeat: int, tiny: bool = False, seed: int = 0, sets: list[str] | None = None) -> Any:
    """The torchtune DictConfig: the wheel's config, the workload's overrides, then this run's paths and cut."""
    from omegaconf import OmegaConf

    base = OmegaConf.load(_torchtune_root() / "configs" / spec["base_config"])
    cfg = OmegaConf.merge(base, OmegaConf.create(spec["overrides"]))
    run = {
        "output_dir": str(out),
        "tokenizer": {"_component_": "torchtune.models.llama3.llama3_tokenizer", "path": str(tokenizer_file)},
        "dataset": {"_component_": "experiments.anchors.tt_run.local_alpaca", "path": str(data_file),
                    "repeat": repeat, "packed": bool(cfg.dataset.get("packed", False))},
        "checkpointer": {"_component_": "experiments.anchors.tt_run.no_checkpointer"},
        "metric_logger": {"_component_": "experiments.anchors.tt_run.StepLogger", "path": str(out / STEPS_FILE)},
        "log_every_n_steps": 1,
        "log_peak_memory_stats": device != "cpu",
        "epochs": 1,
        "max_steps_per_epoch": steps,
        "device": device,
        "seed": seed,
        "shuffle": True,
        "resume_from_checkpoint": False,
        "profiler": {"enabled": False},
    }
    cfg = OmegaConf.merge(cfg, OmegaConf.create(run))
    if tiny:
        lora = {k: cfg.model[k] for k in ("lora_attn_modules", "apply_lora_to_mlp", "apply_lora_to_output",
                                           "lora_rank", "lora_alpha") if k in cfg.model}
        cfg.model = OmegaConf.create({**TINY_MODEL, **lora})
        cfg.dtype = "fp32"
        if device == "cpu":
            cfg.compile = False
    if device == "cpu" and "fused" in cfg.optimizer:
        cfg.optimizer.fused = False
    if sets:
        cfg = OmegaConf.merge(cfg, OmegaConf.from_dotlist(list(sets)))
    return cfg


def no_checkpointer(**_: Any) -> None:
    """The config's checkpointer: none is built; AnchorRecipe.load_checkpoint reads nothing."""
    return None


def local_alpaca(tokenizer: Any, path: str, repeat: int = 1, packed: bool = False,
                 train_on_input: bool = True) -> Any:
    """torchtune's alpaca pipeline (AlpacaToMessages + the model tokenizer in an SFTDataset) over local rows.

    What torchtune's ``alpaca_dataset(source="json", data_files=path)`` gives, without the Hugging Face datasets
    package at run time (the rows are a Python list, repeated ``repeat`` times in order; the recipe's sampler shuffles).
    """
    from torchtune.data import AlpacaToMessages
    from torchtune.datasets import PackedDataset, SFTDataset
    from torchtune.datasets._sft import SFTTransform

    rows = standin.read_rows(path) * max(1, int(repeat))
    ds = SFTDataset.__new__(SFTDataset)
    ds._message_transform = AlpacaToMessages(train_on_input=train_on_input)
    ds._model_transform = tokenizer
    ds._data = rows
    ds._prepare_sample = SFTTransform(message_transform=ds._message_transform, model_transform=tokenizer)
    if packed:
        if tokenizer.max_seq_len is None:
            raise InputError(None, "a packed workload needs tokenizer.max_seq_len")
        return PackedDataset(ds, max_seq_len=tokenizer.max_seq_len, padding_idx=tokenizer.pad_id,
                             split_across_pack=False)
    return ds


class StepLogger:
    """The recipe's metric logger: one JSON line per optimizer step, with this run's own timing and token counts."""

    def __init__(self, path: str, **_: Any) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("w", encoding="utf-8")
        self.micro: list[tuple[int, int, Any]] = []  # (batch, seq_len, real tokens as a tensor) since the last step
        self.t_last: float | None = None
        self.profiler: Any = None  # experiments.launch.profiler's step profiler where the run profiles (run() sets it)

    def log_config(self, config: Any) -> None:  # the run folder's config.yaml is written by main()
        pass

    def log(self, name: str, data: Any, step: int) -> None:
        self.log_dict({name: data}, step)

    def log_dict(self, payload: dict[str, Any], step: int) -> None:
        now = time.perf_counter()
        micro, self.micro = self.micro, []
        padded = sum(b * s for b, s, _ in micro)
        real = int(sum(int(r) for _, _, r in micro))
        line = {
            AnchorStep.STEP: int(step),
            AnchorStep.T: now,
            AnchorStep.WALL_S: None if self.t_last is None else now - self.t_last,
            AnchorStep.MICRO_BATCHES: len(micro),
            AnchorStep.TOKENS_PADDED: padded,
            AnchorStep.TOKENS_REAL: real,
            AnchorStep.SHAPES: [[b, s] for b, s, _ in micro],
        }
        for k, v in payload.items():
            line[k] = float(v) if hasattr(v, "__float__") else v
        self.t_last = now
        self._fh.write(json.dumps(line) + "\n")
        self._fh.flush()
        if self.profiler is not None:  # after the step's line: the window's processing falls in a later step
            self.profiler.after_step(int(step))

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()


def recipe_class(name: str = "lora_finetune_single_device") -> type:
    """LoRAFinetuneRecipeSingleDevice with the three changes the module docstring lists."""
    from torchtune import training

    rec = _recipe_module(name)

    validate = rec.validate_missing_and_unexpected_for_lora

    def validate_random_base(**kw: Any) -> Any:
        kw["base_missing"] = []  # no base weight is loaded by design: they are the model's random init
        return validate(**kw)

    rec.validate_missing_and_unexpected_for_lora = validate_random_base

    class AnchorRecipe(rec.LoRAFinetuneRecipeSingleDevice):  # type: ignore[misc, name-defined]
        def load_checkpoint(self, cfg_checkpointer: Any) -> dict[str, Any]:
            del cfg_checkpointer  # the recipe passes it by this name; nothing is read
            self._checkpointer = None
            return {training.MODEL_KEY: {}}

        def save_checkpoint(self, epoch: int) -> None:
            pass

        def _loss_step(self, batch: dict[str, Any]) -> Any:
            tokens, labels = batch["tokens"], batch["labels"]
            self._metric_logger.micro.append(
                (int(tokens.shape[0]), int(tokens.shape[1]), (labels != IGNORE_INDEX).sum()))
            return super()._loss_step(batch)

    return AnchorRecipe


def data_stats(tokenizer: Any, path: Path, batch: int, seed: int = 0) -> dict[str, Any]:
    """Token lengths of the rows (torchtune's alpaca messages through the tokenizer) and padding at ``batch``."""
    import random

    from torchtune.data import AlpacaToMessages

    rows = standin.read_rows(path)
    to_messages = AlpacaToMessages(train_on_input=True)
    lengths = [len(tokenizer.tokenize_messages(to_messages(r)["messages"])[0]) for r in rows]
    order = list(range(len(lengths)))
    random.Random(seed).shuffle(order)
    padded = real = 0
    for i in range(0, len(order) - batch + 1, batch):
        group = [lengths[j] for j in order[i:i + batch]]
        padded += max(group) * batch
        real += sum(group)
    srt = sorted(lengths)
    return {
        AnchorData.ROWS: len(lengths),
        AnchorData.TOKENS_MEAN: round(statistics.fmean(lengths), 2),
        AnchorData.TOKENS_SD: round(statistics.pstdev(lengths), 2),
        AnchorData.TOKENS_MIN: srt[0],
        AnchorData.TOKENS_P50: srt[len(srt) // 2],
        AnchorData.TOKENS_P90: srt[min(len(srt) - 1, int(0.9 * len(srt)))],
        AnchorData.TOKENS_MAX: srt[-1],
        AnchorData.PADDING_BATCH: batch,
        AnchorData.PADDED_OVER_REAL_ONE_SHUFFLE: round(padded / real, 4) if real else None,
    }


def _versions() -> dict[str, str | None]:
    import importlib.metadata as md

    out: dict[str, str | None] = {}
    for name in ("torch", "torchtune", "torchao", "torchdata", "omegaconf", "tiktoken", "datasets"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = None
    return out


@dataclass(frozen=True)
class ProfilePlan:
    """Where the profiler's window sits: after the run's own BASE steps, WARMUP steps under the profiler but
    unmeasured (the first window's one-time cost, profiler.make_profiler_callback), then STEPS measured ones."""

    base: int
    steps: int
    warmup: int

    @property
    def skip(self) -> int:
        return self.base + self.warmup

    @property
    def total(self) -> int:
        return self.skip + self.steps

    @property
    def excluded(self) -> list[int]:
        """The steps run under the profiler, warm-up included: none of them counts in the steady figures."""
        return list(range(self.base + 1, self.total + 1)) if self.steps > 0 else []


def run(workload: str, out: Path, data_dir: Path, *, device: str, steps: int | None = None,
        warmup: int | None = None, tiny: bool = False, hw: str | None = None,
        sets: list[str] | None = None, profile_steps: int = 0, profile_warmup: int = 1,
        profile_activities: str = "kernels") -> dict[str, Any]:
    """One anchor run into OUT (the module docstring); run.json's record is returned. Stays whole: one run's record
    is written as it goes (started, set up, done or stopped), each stage beside the figures it adds."""
    import torch
    from omegaconf import OmegaConf
    from torchtune import config as tt_config

    spec = standin.workload(workload)
    warmup = int(spec["warmup_steps"] if warmup is None else warmup)
    plan = ProfilePlan(int(warmup + spec["steady_steps"] if steps is None else steps), max(0, int(profile_steps)),
                       max(0, int(profile_warmup)))
    total = plan.total if plan.steps else plan.base
    data_file, tokenizer_file = data_dir / standin.DATA_FILE, data_dir / "tokenizer.model"
    rows = len(standin.read_rows(data_file))
    out.mkdir(parents=True, exist_ok=True)
    cfg = make_config(spec, out, data_file, tokenizer_file, device=device, steps=total, repeat=1, tiny=tiny,
                      sets=sets)
    # enough rows for the cut run, packed or not (a pack holds at least one row)
    # a pack holds max_seq_len / (a row's tokens) rows: alpaca rows run 20-700 tokens (standin.py), so 100 a row is safe
    per_item = max(1, int(cfg.tokenizer.get("max_seq_len") or 0) // 100) if cfg.dataset.get("packed") else 1
    cfg.dataset.repeat = repeat = max(1, math.ceil(total * int(cfg.batch_size) * int(cfg.gradient_accumulation_steps)
                                                   * per_item / rows) + 1)
    (out / CONFIG_FILE).write_text(OmegaConf.to_yaml(cfg), encoding="utf-8")
    record: dict[str, Any] = {
        Anchor.WORKLOAD: workload,
        Anchor.ANCHOR: spec.get("anchor"),
        Anchor.SOURCE_CONFIG: spec.get("source_config"),
        Anchor.PUBLISHED: spec.get("published"),
        Anchor.PUBLISHED_NOTES: spec.get("published_notes") or {},
        Anchor.LABEL: standin.LABEL + ("; tiny model (test)" if tiny else ""),
        Anchor.HARNESS: "torchtune recipe lora_finetune_single_device (LoRAFinetuneRecipeSingleDevice), its config "
                   f"{spec['base_config']} with the workload's overrides; random base weights (no checkpoint read or "
                   "written); local alpaca-gpt4-en rows",
        Anchor.HW: hw,
        Anchor.DEVICE: device,
        Anchor.STEPS_TOTAL: total,
        Anchor.WARMUP_STEPS: warmup,
        Anchor.DATA_REPEAT: repeat,
        Anchor.SETS: list(sets or []),
        Anchor.VERSIONS: _versions(),
        Anchor.STATUS: "started",
    }
    prof = _profiler(plan, out, record, device, profile_activities) if plan.steps else None
    run_file = out / RUN_FILE

    def save() -> None:
        run_file.write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")

    save()
    tokenizer = tt_config.instantiate(cfg.tokenizer)
    record[Anchor.DATA] = data_stats(tokenizer, data_file, int(cfg.batch_size))
    if device.startswith("cuda"):
        record[Anchor.GPU_NAME] = torch.cuda.get_device_name()
    sampler = None
    if device.startswith("cuda"):
        from experiments.record.gpu import Sampler

        sampler = Sampler(out / NVML_FILE, period_s=1.0).start()  # no NVML: nothing is sampled
    t0 = time.perf_counter()
    recipe = recipe_class(spec["recipe"])(cfg=cfg)
    recipe.setup(cfg=cfg)
    recipe._metric_logger.profiler = prof
    record[Anchor.SETUP_S] = round(time.perf_counter() - t0, 3)
    if device.startswith("cuda"):
        record[Anchor.MEMORY_AFTER_SETUP_GIB] = round(torch.cuda.memory_allocated() / 2**30, 3)
        torch.cuda.reset_peak_memory_stats()
    save()
    t1 = time.perf_counter()
    try:
        if prof is not None:
            prof.begin()
        recipe.train()
        record[Anchor.STATUS] = "done"
    finally:
        if prof is not None:
            prof.end()
        record[Anchor.TRAIN_S] = round(time.perf_counter() - t1, 3)
        if device.startswith("cuda"):
            record[Anchor.PEAK_ALLOCATED_GIB] = round(torch.cuda.max_memory_allocated() / 2**30, 3)
            record[Anchor.PEAK_RESERVED_GIB] = round(torch.cuda.max_memory_reserved() / 2**30, 3)
        recipe.cleanup()
        if sampler is not None:
            sampler.stop()
        save()
    return record


def _profiler(plan: ProfilePlan, out: Path, record: dict[str, Any], device: str, activities: str) -> Any:
    """The launcher's step profiler over PLAN's window (profile.json in OUT); run.json's `profile` says which steps
    it ran in."""
    from experiments.launch.profiler import step_profiler

    prof = step_profiler(plan.steps, plan.skip, out / PROFILE_FILE, record, which=activities, warmup=plan.warmup,
                         cuda=device.startswith("cuda"))
    # the step profiler filed its record as launch.json's `profile` (Launch.PROFILE): the same name as run.json's
    record[Anchor.PROFILE].update({ProfileRecord.WARMUP: plan.warmup, ProfileRecord.ACTIVITIES: activities,
                                   ProfileRecord.EXCLUDED_STEPS: plan.excluded,
                                   ProfileRecord.NOTE: "steps run under torch.profiler after the reported ones: left "
                                                       "out of the steady figures"})
    return prof


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.anchors.tt_run", description=__doc__.split("\n\n")[0])
    p.add_argument("--workload", required=True)
    p.add_argument("--out", required=True, help="the run folder to write")
    p.add_argument("--data", required=True, help="folder with alpaca-gpt4-en.json and tokenizer.model")
    p.add_argument("--device", default="cuda")
    p.add_argument("--steps", type=int, default=None, help="optimizer steps in all (default warm-up + steady)")
    p.add_argument("--warmup", type=int, default=None)
    p.add_argument("--hw", default=None)
    p.add_argument("--tiny", action="store_true", help="a tiny Llama-3.1-shaped model (tests)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="a torchtune config override (OmegaConf dotlist), after the workload's; said in run.json")
    p.add_argument("--profile-steps", type=int, default=0, metavar="N",
                   help="profile N optimizer steps after the run's own (profile.json; default none)")
    p.add_argument("--profile-warmup", type=int, default=1, metavar="W",
                   help="steps under the profiler before the measured ones, unmeasured (default 1)")
    p.add_argument("--profile-activities", default="kernels", choices=("all", "cuda", "kernels"),
                   help="what the profiler records (experiments/launch/profiler.py; default kernels: what the time "
                        "model reads)")
    a = p.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        rec = run(a.workload, Path(a.out), Path(a.data), device=a.device, steps=a.steps, warmup=a.warmup,
                  tiny=a.tiny, hw=a.hw, sets=a.sets, profile_steps=a.profile_steps,
                  profile_warmup=a.profile_warmup, profile_activities=a.profile_activities)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps({k: rec.get(k) for k in (Anchor.WORKLOAD, Anchor.STATUS, Anchor.SETUP_S, Anchor.TRAIN_S,
                                              Anchor.PEAK_ALLOCATED_GIB)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
