"""An anchor run folder (experiments/anchors/tt_run.py, issue 44) read into steady throughput, from its files alone.

steps.jsonl has one line per optimizer step: ``wall_s`` (the time since the previous step's log, both taken right
after the recipe's ``loss.item()``), ``tokens_padded`` (batch x padded length, summed over the step's micro-batches:
milabench's "tokens/s including padding" counts these) and ``tokens_real`` (labels not ignored). The first
``warmup_steps`` steps (run.json) are left out, and so are the steps run under the profiler (run.json's
``profile.excluded_steps``: tt_run.py's ``--profile-steps``, after the reported ones); step 1 has no wall time of its
own. Each steady step gives a rate; the headline is their median, with the pooled rate (all tokens / all time) beside
it. profile.json, where the run has one, is read with the launcher's reader (sidefiles.read_profile): the time model
carries its kernels to other GPUs (analysis/estimate/anchor_transfer.py).

    python -m analysis.parse.anchor_run RUN_FOLDER
"""
from __future__ import annotations

import json
import statistics
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

from analysis.parse import sidefiles
from analysis.parse.runfile_rows import ProfileJson
from experiments.base import hardware, runfiles, userfiles
from experiments.base.errors import InputError
from experiments.base.runfolder import Anchor, AnchorStep, ProfileRecord

STEPS_FILE = "steps.jsonl"
RUN_FILE = runfiles.RUN_JSON
CONFIG_FILE = "config.yaml"  # the torchtune config that ran (tt_run.py)


class TorchtuneConfig:
    """The keys read of config.yaml: torchtune's own config names (its recipes' and model builders'), which tt_run.py
    copies from torchtune's shipped config rather than writing them itself. Not run-folder keys of
    experiments/base/runfolder.py: `model` here is torchtune's model section, not run.json key's `model` (RunKey)."""

    MODEL: Final = "model"
    COMPONENT: Final = "_component_"
    LORA_RANK: Final = "lora_rank"
    LORA_ATTN_MODULES: Final = "lora_attn_modules"
    APPLY_LORA_TO_MLP: Final = "apply_lora_to_mlp"
    APPLY_LORA_TO_OUTPUT: Final = "apply_lora_to_output"
    ENABLE_ACTIVATION_CHECKPOINTING: Final = "enable_activation_checkpointing"


@dataclass(frozen=True)
class AnchorModel:
    """What the workload's FLOPs per token rest on, from config.yaml: the model builder (models.yaml knows its
    shapes by that name), LoRA's rank and targets, and activation checkpointing (one more forward per step)."""

    builder: str
    lora_rank: int
    lora_attn_modules: tuple[str, ...]
    lora_mlp: bool
    lora_output: bool
    checkpointing: bool


def read_model(folder: Path) -> AnchorModel | None:
    """config.yaml's model and checkpointing (None without the file or where it names no LoRA model); a file that is
    not YAML is bad input."""
    import yaml

    path = folder / CONFIG_FILE
    if not userfiles.present(path):
        return None
    try:
        cfg = yaml.safe_load(userfiles.read_text(path, runfiles.max_bytes(path)))
    except yaml.YAMLError as e:
        line = getattr(getattr(e, "problem_mark", None), "line", None)
        raise InputError(path, "not YAML", line + 1 if line is not None else None) from None
    tt = TorchtuneConfig
    model = cfg.get(tt.MODEL) if isinstance(cfg, dict) else None
    if not isinstance(model, dict) or not isinstance(model.get(tt.LORA_RANK), int):
        return None
    return AnchorModel(builder=str(model.get(tt.COMPONENT, "")).rsplit(".", 1)[-1],
                       lora_rank=int(model[tt.LORA_RANK]),
                       lora_attn_modules=tuple(str(m) for m in model.get(tt.LORA_ATTN_MODULES) or ()),
                       lora_mlp=bool(model.get(tt.APPLY_LORA_TO_MLP)),
                       lora_output=bool(model.get(tt.APPLY_LORA_TO_OUTPUT)),
                       checkpointing=bool(cfg.get(tt.ENABLE_ACTIVATION_CHECKPOINTING)))


@dataclass(frozen=True)
class AnchorRun:
    """Steady throughput of one anchor run (tokens/s per step; medians and spread over the steady steps)."""

    workload: str
    hw: str | None
    gpu_name: str | None
    label: str
    status: str
    warmup_steps: int
    steps_logged: int
    n_steady: int
    step_s_median: float
    tokens_per_s_padded: float  # median over steady steps of tokens_padded / wall_s
    tokens_per_s_real: float  # median over steady steps of tokens_real / wall_s
    tokens_per_s_padded_pooled: float  # sum tokens_padded / sum wall_s
    tokens_per_s_padded_min: float
    tokens_per_s_padded_max: float
    padded_tokens_per_step_median: float
    padding_overhead: float  # sum tokens_padded / sum tokens_real - 1
    peak_allocated_gib: float | None
    published: float | None  # the anchor's own figure for this hw class, if it has one
    published_metric: str | None
    folder: str = ""
    steady_steps: tuple[int, ...] = ()
    excluded_steps: tuple[int, ...] = ()  # run under the profiler (run.json's profile.excluded_steps)
    padded_by_step: dict[int, int] = field(default_factory=dict)  # every logged step's tokens_padded
    real_by_step: dict[int, int] = field(default_factory=dict)  # and tokens_real
    published_all: dict[str, float] = field(default_factory=dict)  # the anchor's figures by GPU (run.json)
    published_notes: dict[str, str] = field(default_factory=dict)  # what a figure's own setup changed (run.json)
    profile: ProfileJson | None = None  # profile.json (tt_run.py --profile-steps), None without one
    model: AnchorModel | None = None  # config.yaml's model and checkpointing, None without the file

    @property
    def vs_published(self) -> float | None:
        """tokens_per_s_padded / published - 1 (None where the anchor publishes no figure for this class)."""
        if not self.published:
            return None
        return self.tokens_per_s_padded / self.published - 1


def _read_json(path: Path) -> dict[str, Any]:
    data = userfiles.read_json(path, runfiles.max_bytes(path))
    if not isinstance(data, dict):
        raise InputError(path, "not a JSON object")
    return data


def read_steps(path: Path) -> list[dict[str, Any]]:
    """steps.jsonl's lines (a last line cut by a stopped run left out; one cut before another is bad input)."""
    return [d for _, d in sidefiles.only_last_torn(path, sidefiles.jsonl(path))]


def parse(folder: str | Path, warmup_steps: int | None = None) -> AnchorRun:
    """The run folder's steady throughput; ``warmup_steps`` overrides run.json's."""
    folder = Path(folder)
    run = _read_json(folder / RUN_FILE)
    steps = read_steps(folder / STEPS_FILE)
    warm = int(run.get(Anchor.WARMUP_STEPS, 0) if warmup_steps is None else warmup_steps)
    excluded = {int(s) for s in (run.get(Anchor.PROFILE) or {}).get(ProfileRecord.EXCLUDED_STEPS) or []}
    steady = [s for s in steps if int(s[AnchorStep.STEP]) > warm and int(s[AnchorStep.STEP]) not in excluded
              and s.get(AnchorStep.WALL_S) and float(s[AnchorStep.WALL_S]) > 0]
    if not steady:
        raise InputError(folder / STEPS_FILE, f"no steady step after {warm} warm-up steps ({len(steps)} logged)")
    pad = [float(s[AnchorStep.TOKENS_PADDED]) / float(s[AnchorStep.WALL_S]) for s in steady]
    real = [float(s[AnchorStep.TOKENS_REAL]) / float(s[AnchorStep.WALL_S]) for s in steady]
    sum_pad = sum(float(s[AnchorStep.TOKENS_PADDED]) for s in steady)
    sum_real = sum(float(s[AnchorStep.TOKENS_REAL]) for s in steady)
    sum_t = sum(float(s[AnchorStep.WALL_S]) for s in steady)
    hw = run.get(Anchor.HW)
    pub = run.get(Anchor.PUBLISHED) or {}
    published = published_for(pub, hw) if hw else None
    return AnchorRun(
        workload=str(run.get(Anchor.WORKLOAD)),
        hw=hw,
        gpu_name=run.get(Anchor.GPU_NAME),
        label=str(run.get(Anchor.LABEL, "")),
        status=str(run.get(Anchor.STATUS, "unknown")),
        warmup_steps=warm,
        steps_logged=len(steps),
        n_steady=len(steady),
        step_s_median=statistics.median(float(s[AnchorStep.WALL_S]) for s in steady),
        tokens_per_s_padded=statistics.median(pad),
        tokens_per_s_real=statistics.median(real),
        tokens_per_s_padded_pooled=sum_pad / sum_t,
        tokens_per_s_padded_min=min(pad),
        tokens_per_s_padded_max=max(pad),
        padded_tokens_per_step_median=statistics.median(float(s[AnchorStep.TOKENS_PADDED]) for s in steady),
        padding_overhead=sum_pad / sum_real - 1 if sum_real else float("nan"),
        peak_allocated_gib=_peak_allocated(run, steps),
        published=published,
        published_metric=pub.get("metric"),
        folder=str(folder),
        steady_steps=tuple(int(s[AnchorStep.STEP]) for s in steady),
        excluded_steps=tuple(sorted(excluded)),
        padded_by_step={int(s[AnchorStep.STEP]): int(s[AnchorStep.TOKENS_PADDED]) for s in steps},
        real_by_step={int(s[AnchorStep.STEP]): int(s[AnchorStep.TOKENS_REAL]) for s in steps},
        published_all={str(k): float(v) for k, v in pub.items() if k != "metric" and v is not None},
        published_notes={str(k): str(v) for k, v in (run.get(Anchor.PUBLISHED_NOTES) or {}).items()},
        profile=sidefiles.read_profile(folder),
        model=read_model(folder),
    )


def _peak_allocated(run: dict[str, Any], steps: list[dict[str, Any]]) -> float | None:
    """The run's peak allocated GiB: the highest of torchtune's per-log peaks and run.json's end-of-run one. torchtune
    resets the peak at every log, so run.json's alone holds only the steps after the last log."""
    peaks = [float(s[AnchorStep.PEAK_MEMORY_ALLOC]) for s in steps if s.get(AnchorStep.PEAK_MEMORY_ALLOC) is not None]
    end = run.get(Anchor.PEAK_ALLOCATED_GIB)
    peaks += [float(end)] if end is not None else []
    return max(peaks) if peaks else None


def published_for(published: dict[str, Any], hw: str) -> float | None:
    """The anchor's figure for class HW: workloads.yaml's `published` keys name GPUs as people write them (rtxa6000,
    h100), matched to hardware.yaml's classes as every command matches a name (hardware.resolve)."""
    key = hardware.resolve(str(hw))
    for name, value in published.items():
        if name != "metric" and value is not None and (name == str(hw).lower() or
                                                       key is not None and hardware.resolve(name) == key):
            return float(value)
    return None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m analysis.parse.anchor_run RUN_FOLDER", file=sys.stderr)
        return 2
    try:
        r = parse(args[0])
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    # AnchorRun's fields by name (profile: whether the run has one), not run.json's keys
    out = dict(asdict(r), vs_published=r.vs_published, profile=r.profile is not None)
    out.pop("padded_by_step")
    out.pop("real_by_step")
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
