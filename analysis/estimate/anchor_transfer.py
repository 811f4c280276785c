"""A reproduced published workload (an anchor run, analysis.parse.anchor_run) carried to the anchor's other GPUs.

The anchor run's profile.json (tt_run.py --profile-steps) is taken apart as a committed run's is
(transfer.step_from_profile) and carried with transfer.step_on from the run's OWN class (its run.json hw), not
time_model.yaml's profiled_class: every kernel group's work x its kind's spec-sheet ratio, floors and the host's idle
time kept, tokens per step unchanged. Nothing here is fitted to the published figures it is checked against:

    tokens/s on DST   = tokens per steady step / step_on(step, DST)
    ratio DST / SRC   = step_on(step, SRC) / step_on(step, DST)       (SRC's step is the run's steady median)
    error             = ratio / (published DST / published SRC) - 1   where the anchor has a figure for SRC
                      = tokens/s on DST / published DST - 1           where it has none

Tokens are counted as the anchor's metric counts them: with padding for `*_incl_padding` (milabench), else the labelled
tokens (torchtune's tokens_per_second_per_gpu: labels not ignored).

A published figure is first checked for being this workload at all: the hardware FLOPs it implies (published tokens/s
x the run's hardware FLOPs per token, analysis.measure.flops, from config.yaml's model, LoRA and checkpointing) over
DST's dense bf16 peak (hardware.yaml). Above 1 the card cannot have run the workload as reproduced (another
configuration, or tokens counted otherwise): the figure is printed, its error is no check (`feasible`).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from analysis.estimate import transfer
from analysis.measure import flops
from analysis.parse.anchor_run import AnchorModel, AnchorRun
from experiments.base import hardware
from experiments.base.errors import InputError

EXTRA_TARGETS = ("a10", "a100")  # classes printed for every anchor beside its published ones (no figure to check)
NO_PROFILE = "no profile: run anchor_gpu.sh with profiling"


@dataclass(frozen=True)
class AnchorPrediction:
    """One anchor run's workload on class DST: the model's step there beside the anchor's published figures."""

    workload: str
    run: str
    src: str
    dst: str
    metric: str
    tokens_per_step: float  # steady steps' mean, as the metric counts tokens
    src_step_s: float       # the model's step on the run's own class (its steady median)
    step_s: float           # the model's step on DST
    published: float | None      # the anchor's figure for DST
    published_src: float | None  # the anchor's figure for the run's own class
    note: str | None = None      # what the figure's own run changed (workloads.yaml published_notes)
    published_use: float | None = None  # the share of DST's dense bf16 peak the published figure needs (module doc)
    flops_per_token: float | None = None  # the run's hardware FLOPs per token it rests on

    @property
    def counts(self) -> bool:
        """A check of the model: a published figure of this workload (feasible) whose own run changed nothing the
        anchor notes."""
        return self.error is not None and self.feasible and self.note is None

    @property
    def feasible(self) -> bool:
        """False where the published figure needs more than DST's dense bf16 peak (no check of the model)."""
        return self.published_use is None or self.published_use <= 1.0

    @property
    def tokens_per_s(self) -> float:
        return self.tokens_per_step / self.step_s

    @property
    def ratio(self) -> float:
        """DST's throughput over the run's own class's, as the model has it."""
        return self.src_step_s / self.step_s

    @property
    def basis(self) -> str | None:
        """'ratio' (both classes published), 'absolute' (DST only) or None (nothing to check)."""
        if self.published is None:
            return None
        return "ratio" if self.published_src is not None else "absolute"

    @property
    def published_ratio(self) -> float | None:
        if self.published is None or self.published_src is None:
            return None
        return self.published / self.published_src

    @property
    def band_error(self) -> float | None:
        """The error as the time model's band counts it: (the faster class's throughput / the slower's) as the model
        has it, over the same ratio as published, - 1; positive where the model underrates the slower class. A time T
        carried from the faster class then stands for T / (1 + e) (transfer.band_range). On an absolute figure the
        run's own class counts as published at its measured throughput."""
        if self.published is None:
            return None
        src_measured = self.tokens_per_step / self.src_step_s
        pub_src = self.published_src if self.published_src is not None else src_measured
        pred_ratio = self.ratio if self.published_src is not None else self.tokens_per_s / src_measured
        pub_ratio = self.published / pub_src
        return pred_ratio / pub_ratio - 1 if pub_ratio >= 1 else pub_ratio / pred_ratio - 1

    @property
    def error(self) -> float | None:
        """predicted / published - 1 on the basis the anchor allows (module docstring)."""
        if self.published is None:
            return None
        if self.published_ratio is not None:
            return self.ratio / self.published_ratio - 1
        return self.tokens_per_s / self.published - 1


TORCHTUNE_ATTENTION = {"q_proj": "q_proj", "k_proj": "k_proj", "v_proj": "v_proj", "output_proj": "o_proj"}
MLP = ("gate_proj", "up_proj", "down_proj")  # torchtune's w1, w3, w2


def lora_params(model: AnchorModel, shapes: hardware.ModelShapes) -> int:
    """LoRA's trainable weights: rank x (in + out) of each targeted linear (hardware.linear_shapes; torchtune's
    attention names mapped to Hugging Face's), the MLP's three where it is targeted, and the output head."""
    linear = hardware.linear_shapes(shapes)
    targets = [TORCHTUNE_ATTENTION[m] for m in model.lora_attn_modules if m in TORCHTUNE_ATTENTION]
    targets += list(MLP) if model.lora_mlp else []
    per_layer = sum(sum(linear[t]) for t in targets)
    head = shapes["hidden_size"] + shapes["vocab_size"] if model.lora_output else 0
    return model.lora_rank * (per_layer * shapes["num_hidden_layers"] + head)


def hardware_flops_per_token(run: AnchorRun) -> float | None:
    """The run's hardware FLOPs per token (checkpointing's recomputed forward included); None where config.yaml or
    the model's shapes (data/models.yaml, by torchtune's builder name) are missing."""
    if run.model is None:
        return None
    shapes = hardware.lookup_model(run.model.builder)
    if shapes is None:
        return None
    f = flops.flops_per_token(hardware.matmul_params(shapes), lora_params(run.model, shapes), "lora",
                              run.model.checkpointing)
    return float(f.hardware)


def published_use(published: float | None, flops_per_token: float | None, dst: str) -> float | None:
    """The share of DST's dense bf16 peak that PUBLISHED tokens/s needs at FLOPS_PER_TOKEN."""
    if published is None or flops_per_token is None:
        return None
    return published * flops_per_token / (hardware.require(dst).peak_tflops * 1e12)


def run_label(run: AnchorRun) -> str:
    """hw/workload/run-id of RUN's folder."""
    parts = run.folder.rstrip("/").split("/")
    return "/".join(parts[-3:]) if len(parts) >= 3 else run.folder


def anchor_step(run: AnchorRun) -> transfer.ProfiledStep:
    """RUN's profiled step in kernel groups on its own class (InputError without a kernel-level profile.json)."""
    src = hardware.resolve(str(run.hw))
    if src is None:
        raise InputError(run.folder, f"{run_label(run)}: hw {run.hw!r} is no hardware.yaml class")
    return transfer.step_from_profile(run_label(run), src, run.profile or {}, run.padded_by_step, run.steady_steps,
                                      run.step_s_median, path=run.folder)


def _published(run: AnchorRun, key: str) -> tuple[float | None, str | None]:
    """The anchor's figure and note for class KEY (published keys matched as hardware.resolve matches names)."""
    value = next((v for k, v in run.published_all.items() if hardware.resolve(k) == key), None)
    note = next((v for k, v in run.published_notes.items() if hardware.resolve(k) == key), None)
    return value, note


def targets(run: AnchorRun) -> list[str]:
    """The classes the anchor publishes a figure for, then EXTRA_TARGETS: each once, in that order."""
    keys = [hardware.resolve(k) for k in run.published_all]
    return list(dict.fromkeys(k for k in [*keys, *EXTRA_TARGETS] if k is not None))


def predict(run: AnchorRun) -> list[AnchorPrediction]:
    """RUN's workload on each of its targets but its own class (InputError without a kernel-level profile)."""
    step = anchor_step(run)
    by_step = run.padded_by_step if "padding" in str(run.published_metric or "") else run.real_by_step
    tokens = statistics.fmean(by_step[s] for s in run.steady_steps)
    src_step = transfer.step_on(step, step.hw).total_s
    pub_src, _ = _published(run, step.hw)
    fpt = hardware_flops_per_token(run)
    out = []
    for dst in (k for k in targets(run) if k != step.hw):  # its own class: the reproduction itself, (6)'s first table
        pub, note = _published(run, dst)
        out.append(AnchorPrediction(workload=run.workload, run=step.run, src=step.hw, dst=dst,
                                    metric=str(run.published_metric or ""), tokens_per_step=tokens,
                                    src_step_s=src_step, step_s=transfer.step_on(step, dst).total_s, published=pub,
                                    published_src=pub_src, note=note, published_use=published_use(pub, fpt, dst),
                                    flops_per_token=fpt))
    return out
